"""What follows the judging app (:mod:`qrelkit.app`), before any number is computed from the judgments:
judgment leverage (:mod:`.leverage`), the merge into final qrels with the override rule and the calibration
gate (:mod:`.adjudication`), and the manifest written beside final qrels (:mod:`.manifest`); labellers'
judgments files read as ``qrelkit agree`` and ``qrelkit adjudicate-files`` read them (:mod:`.labellers`). The
rubric (:mod:`qrelkit.rubric`) and the pool (:mod:`qrelkit.pool`) come before the app, in packages of their
own.
"""
