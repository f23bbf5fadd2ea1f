"""A project's export signs its manifest with the project's key; reading checks the manifest against
itself (a verdict edited by hand is an error naming the field) and, given the project, its signature:
``qrelkit eval --project DB`` says "manifest verified", or refuses an edited manifest."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from pathlib import Path

from qrelkit.app.phases import override_gate
from qrelkit.app.store import Store

from .helpers import FIXTURES, finish_calibration, grade_pairs, make_project

RUN = FIXTURES / "sysalpha.run"


def _overridden_export(tmp: Path, cli) -> tuple[Path, Path]:
    """A project whose gate failed and was overridden, exported: (database, qrels)."""
    db = make_project(tmp, labellers="alice,bob")
    assert finish_calibration(db, agree=False).state == "paused"
    with Store(db) as store:
        override_gate(store, reason="deadline", by="admin")
    with sqlite3.connect(db) as conn:  # the rest of the pool, graded once judging is open
        rest = conn.execute(
            "SELECT u.name, p.query_id, p.doc_id FROM assignments a JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE p.calibration = 0"
        ).fetchall()
    for name in {n for n, _, _ in rest}:
        grade_pairs(db, name, {(q, d): 1 for n, q, d in rest if n == name})
    out = tmp / "final.qrels"
    done = cli("judge", "export", db, "--final", "--allow-unresolved", "leave-out", "-o", out)
    assert done.exit_code == 0, done.output
    return db, out


def _manifest(qrels: Path) -> Path:
    return qrels.with_name(qrels.name + ".manifest.json")


def test_the_export_is_signed_with_the_project_key_and_eval_verifies_it(tmp_path: Path, cli) -> None:
    db, qrels = _overridden_export(tmp_path, cli)
    data = json.loads(_manifest(qrels).read_text())
    with sqlite3.connect(db) as conn:
        key = bytes.fromhex(conn.execute("SELECT value FROM meta WHERE key = 'manifest_key'").fetchone()[0])
    assert len(key) == 32 and key.hex() not in _manifest(qrels).read_text()
    # the signature by hand: HMAC-SHA256 over the sorted compact JSON of every other field
    body = {k: v for k, v in data.items() if k != "signature"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert data["signature"]["algorithm"] == "hmac-sha256"
    assert data["signature"]["hmac"] == hmac.new(key, canonical, hashlib.sha256).hexdigest()

    verified = cli("eval", qrels, RUN, "--project", db)
    assert verified.exit_code == 0, verified.output
    assert "manifest verified" in verified.stderr
    unchecked = cli("eval", qrels, RUN)
    assert unchecked.exit_code == 0 and "signature not checked" in unchecked.stderr
    # once, after the result (a real process, stderr into the same pipe as stdout, in the order written)
    import subprocess
    import sys

    both = subprocess.run([sys.executable, "-m", "qrelkit", "eval", str(qrels), str(RUN), "-f", "tsv"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True).stdout  # fmt: skip
    lines = both.strip().splitlines()
    assert [ln for ln in lines if "signature not checked" in ln] == [lines[-1]]
    assert lines[-1].startswith("manifest signed with project key ")
    # a command that fails says its error, not the note
    failed = cli("eval", qrels, RUN, "-m", "nDCG@")
    assert failed.exit_code != 0 and "signature not checked" not in failed.stderr


def test_a_failed_overridden_gate_relabelled_passed_is_refused(tmp_path: Path, cli) -> None:
    db, qrels = _overridden_export(tmp_path, cli)
    path = _manifest(qrels)
    data = json.loads(path.read_text())
    assert data["calibration"]["status"] == "overridden" and data["calibration"]["gate"]["passed"] is False
    # the edit the issue describes: the verdict made "passed", the override dropped; the qrels hash is intact
    data["calibration"]["status"] = "passed"
    data["calibration"]["gate"]["passed"] = True
    data["calibration"]["override"] = None
    path.write_text(json.dumps(data))
    value, threshold = data["calibration"]["gate"]["value_used"], data["calibration"]["gate"]["threshold"]
    refused = cli("eval", qrels, RUN)
    assert refused.exit_code == 1
    assert refused.stderr.startswith(
        f"qrelkit: error: {path}: the manifest contradicts itself: calibration.gate.passed is true but value_used "
        f"{value!r} < threshold {threshold!r}"
    ), refused.stderr
    assert refused.stderr.count("\n") <= 2 and "Traceback" not in refused.stderr

    # made consistent by hand as well (the number raised past the threshold): only the signature tells
    data["calibration"]["gate"]["value_used"] = 0.9
    data["calibration"]["ci_low"] = 0.9
    for pair in data["calibration"]["pairs_of_labellers"]:
        pair["gate"].update(passed=True, value_used=0.9)
    for r in data["calibration"]["rounds"]:
        for pair in r["agreement"]:
            pair["gate"].update(passed=True, value_used=0.9)
        r["override"] = None
    if data["calibration"].get("group") and data["calibration"]["group"].get("gate"):
        data["calibration"]["group"]["gate"].update(passed=True, value_used=0.9)
    path.write_text(json.dumps(data))
    assert cli("eval", qrels, RUN).exit_code == 0  # without the project, nothing can tell
    caught = cli("eval", qrels, RUN, "--project", db)
    assert caught.exit_code == 1
    assert "the manifest's signature does not match its content: it was edited after export" in caught.stderr


def test_another_projects_key_and_an_unsigned_manifest_are_said_so(tmp_path: Path, cli) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, qrels = _overridden_export(tmp_path / "a", cli)
    other = make_project(tmp_path / "b", labellers="alice,bob")
    wrong = cli("eval", qrels, RUN, "--project", other)
    assert wrong.exit_code == 1 and "signed with another project's key" in wrong.stderr

    data = json.loads(_manifest(qrels).read_text())
    del data["signature"]
    _manifest(qrels).write_text(json.dumps(data))
    unsigned = cli("eval", qrels, RUN, "--project", other)
    assert unsigned.exit_code == 0 and "manifest unsigned" in unsigned.stderr
