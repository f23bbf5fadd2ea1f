"""Making judgments, before any number is computed from them: the rubric (:mod:`.rubric`), the pool and
the calibration draw and assignment plan (:mod:`.pool`), judgment leverage (:mod:`.leverage`), the merge
into final qrels with the override rule and the calibration gate (:mod:`.adjudication`), and the manifest
written beside final qrels (:mod:`.manifest`); labellers' judgments files read as ``qrelkit agree`` and
``qrelkit adjudicate`` read them (:mod:`.labellers`). The judging app (:mod:`qrelkit.app`) is built on these.
"""
