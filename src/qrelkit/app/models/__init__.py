"""Model labellers: a language model (or any local program) as one more labeller of a judging project.

``schema`` (the tables), ``prompt`` (the rubric as a prompt), ``client`` (the chat completions and
JSON-lines exchanges), ``labellers`` (adding one: its user, record and assignment), ``runner`` (grading
its pairs, cached and resumable), ``gate`` (its gate and override), ``probes`` (the adversarial probes),
``status`` (what the admin sees). The statistics live in :mod:`qrelkit.agreement.model`.
"""
