"""Judging pooled pairs in a browser: the project store, the web app and what is derived from the grades.

``store`` (SQLite, one writer, migrations), ``project`` (creating a project, invites), ``phases``
(calibration rounds, the gate, the rubric revision loop, the override), ``grades`` (grade events,
progress, calibration kappa, adjudication, exports), ``queries`` (the reads the web app runs itself),
``security`` (sessions, CSRF, rate limits) and ``web`` (the ASGI app factory, ``create_app``, and its
handlers). Only ``store``, ``project``, ``phases``, ``grades`` and ``queries`` are needed without the
``web`` extra.
"""
