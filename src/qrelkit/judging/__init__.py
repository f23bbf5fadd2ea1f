"""Judging pooled pairs in a browser: the project store, the web app and what is derived from the grades.

``store`` (SQLite, one writer, migrations), ``project`` (creating a project, invites), ``grades`` (grade
events, progress, calibration kappa, adjudication, exports), ``security`` (sessions, CSRF, rate limits)
and ``app`` (the ASGI app factory, ``create_app``). Only ``store``, ``project`` and ``grades`` are needed
without the ``web`` extra.
"""
