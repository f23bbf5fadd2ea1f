"""`qrelkit pool --extend`, `qrelkit pool --leave-one-out` and `qrelkit judge extend` on the command line."""

from __future__ import annotations

import gc
import hashlib
import json
from pathlib import Path

from ..app.helpers import make_project, pass_gate
from ..app.test_extend import GAMMA, NEW_DOC
from ..conftest import CLI

# The hand example of tests/judgments/test_pool_extend.py (_three_runs), as TREC files.
RUNS = {
    "a": "q1 Q0 d1 1 2 a\nq1 Q0 d2 2 1 a\nq2 Q0 d6 1 2 a\nq2 Q0 d7 2 1 a\n",
    "b": "q1 Q0 d2 1 2 b\nq1 Q0 d3 2 1 b\nq2 Q0 d6 1 2 b\nq2 Q0 d8 2 1 b\n",
    "c": "q1 Q0 d4 1 2 c\nq1 Q0 d5 2 1 c\nq2 Q0 d6 1 2 c\nq2 Q0 d8 2 1 c\n",
}
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\nq1 0 d4 1\nq1 0 d5 1\nq2 0 d6 1\nq2 0 d7 0\nq2 0 d8 1\n"


def _write(tmp: Path) -> tuple[list[Path], Path]:
    runs = []
    for name, text in RUNS.items():
        (tmp / f"{name}.run").write_text(text)
        runs.append(tmp / f"{name}.run")
    (tmp / "final.qrels").write_text(QRELS)
    return runs, tmp / "final.qrels"


def test_leave_one_out_prints_each_run_before_and_after_and_tau(tmp_path: Path) -> None:
    runs, qrels = _write(tmp_path)
    out = CLI("pool", "--leave-one-out", *runs, "--qrels", qrels, "--depth", 2, "-m", "P@2")
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[2:5]}
    # run, measure, full, left_out, change, rank "3 -> 3", removed (relevant): values of the hand example
    assert rows["a"][2:5] == ["0.5000", "0.2500", "-0.2500"] and rows["a"][5:8] == ["3", "->", "3"]
    assert rows["c"][2:5] == ["1.0000", "0.5000", "-0.5000"] and rows["c"][5:8] == ["1", "->", "2"]
    assert rows["c"][8:] == ["2", "(2)"]
    assert "Kendall's tau of the rankings, P(rel=1)@2: 0.816" in out.stdout  # 2 / sqrt(6)
    data = json.loads(CLI("pool", "--leave-one-out", *runs, "--qrels", qrels, "--depth", 2, "-m", "P@2",
                          "--json").stdout)  # fmt: skip
    assert [r["left_out"] for r in data["rows"]] == [0.25, 0.5, 0.5] and data["depth"] == 2
    assert data["tool"]["name"] == "qrelkit" and data["format"] == "qrelkit leave-one-out 1"


def test_pool_usage_errors_exit_2(tmp_path: Path) -> None:
    runs, qrels = _write(tmp_path)
    assert CLI("pool", "--leave-one-out", *runs).exit_code == 2  # no --qrels
    assert CLI("pool", *runs).exit_code == 2  # no -o
    assert CLI("pool", *runs, "-m", "P@2", "-o", tmp_path / "p.jsonl").exit_code == 2
    both = CLI("pool", "--extend", qrels, "--leave-one-out", *runs, "--qrels", qrels)
    assert both.exit_code == 2 and "pass one" in both.output
    assert CLI("pool", "--extend", qrels, *runs, "--labellers", "alice,bob").exit_code == 2
    assert not (tmp_path / "p.jsonl").exists()


def test_extend_against_a_final_qrels_file_writes_the_pool_format(tmp_path: Path) -> None:
    _, qrels = _write(tmp_path)
    new = tmp_path / "n.run"
    new.write_text("q1 Q0 d9 1 3 n\nq1 Q0 d1 2 2 n\nq2 Q0 d6 1 1 n\nq3 Q0 d1 1 1 n\n")
    out = CLI("pool", "--extend", qrels, new, "--depth", 2, "-o", tmp_path / "top-up.jsonl")
    assert out.exit_code == 0, out.output
    assert (tmp_path / "top-up.jsonl").read_text() == (
        '{"query_id": "q1", "doc_id": "d9", "runs": {"n": 1}, "best_rank": 1, "judged": false, "calibration": false}\n'
    )
    meta = json.loads((tmp_path / "top-up.meta.json").read_text())
    assert meta["extends"]["kind"] == "qrels" and meta["extends"]["left_out_queries"] == ["q3"]
    assert meta["cost"]["judgments"] == 1 and [r["name"] for r in meta["runs"]] == ["n"]
    assert "new: 1 in 1 queries" in out.stderr and "warning: 1 pair(s) of 1 query" in out.stderr


def test_extend_against_a_project_reads_it_and_writes_nothing(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    run = tmp_path / "sysgamma.run"
    run.write_text(GAMMA)
    gc.collect()  # the helpers' sqlite3 connections (a `with` block commits, it does not close) go now

    def files() -> dict[str, str | None]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
                for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm"))}  # fmt: skip

    before = files()
    out = CLI("pool", "--extend", db, run, "--depth", 2)
    assert out.exit_code == 0, out.output
    pairs = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(p["query_id"], p["doc_id"]) for p in pairs] == [
        ("q1", "keys/scopes"),
        ("q2", "sdk/pagination"),
        ("q2", "webhooks/verify"),
    ]
    assert "cost: 3 judgments x 30 s" in out.stderr
    assert files() == before and before[f"{db.name}-wal"] is None  # nothing written, nothing created


def test_judge_extend_is_refused_with_one_line_before_the_gate_then_adds_the_segment(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    run = tmp_path / "sysgamma.run"
    run.write_text(GAMMA)
    docs = tmp_path / "new-docs.jsonl"
    docs.write_text(json.dumps(NEW_DOC) + "\n")
    refused = CLI("judge", "extend", db, run, "--depth", 2, "--docs", docs)
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert len(refused.stderr.strip().splitlines()) == 1 and "still in calibration" in refused.stderr
    pass_gate(db)
    missing = CLI("judge", "extend", db, run, "--depth", 2)
    assert missing.exit_code == 1 and "--docs" in missing.stderr
    done = CLI("judge", "extend", db, run, "--depth", 2, "--docs", docs, "--by", "admin")
    assert done.exit_code == 0, done.output
    assert "segment 2: 3 new pairs in 2 queries from sysgamma" in done.stdout
    assert "assigned: alice 2 pairs, bob 1 pairs" in done.stdout
    again = CLI("judge", "extend", db, run, "--depth", 2, "--docs", docs)
    assert again.exit_code == 1 and "pooled into this project already" in again.stderr


def test_a_bad_run_line_is_one_line_naming_the_file(tmp_path: Path) -> None:
    _, qrels = _write(tmp_path)
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 high bad\n")
    for args in (("--extend", qrels, bad), ("--leave-one-out", bad, "--qrels", qrels)):
        out = CLI("pool", *args)
        assert out.exit_code == 1 and "Traceback" not in out.output and f"{bad}:1" in out.output


def test_judge_extend_says_which_pairs_were_left_out_and_which_were_held(tmp_path: Path) -> None:
    """sysnew at depth 20: q1's keys/rotate is in the project's pool; q9 and q8 are queries it never held."""
    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    run = tmp_path / "sysnew.run"
    run.write_text(
        "q9 Q0 keys/rotate 1 5.0 sysnew\nq9 Q0 faq/general 2 4.0 sysnew\nq8 Q0 keys/rotate 1 3.0 sysnew\n"
    )
    out = CLI("judge", "extend", db, run)
    assert out.exit_code == 0, out.output
    assert "warning: 3 pair(s) of 2 queries the judgments never held left out" in out.stderr
    assert (
        out.stdout.strip()
        == "nothing to add: of the 3 pairs of sysnew within depth 20, 3 left out (queries it never held)"
    )
    run.write_text(run.read_text() + "q1 Q0 keys/rotate 1 5.0 sysnew\n")
    out = CLI("judge", "extend", db, run)
    assert out.stdout.strip() == (
        "nothing to add: of the 4 pairs of sysnew within depth 20, 1 in the project already and 3 left out "
        "(queries it never held)"
    )


def test_a_run_the_project_pooled_is_refused_by_pool_extend_as_by_judge_extend(tmp_path: Path) -> None:
    """sysalpha was pooled by `judge init --runs`; sysgamma by a `judge extend`: both commands refuse both, at
    any depth, with the same one line."""
    db = make_project(tmp_path, labellers="alice,bob")
    pass_gate(db)
    alpha = tmp_path / "alpha.run"
    alpha.write_text((Path(__file__).parents[1] / "app" / "fixtures" / "sysalpha.run").read_text())
    gamma = tmp_path / "sysgamma.run"
    gamma.write_text(GAMMA)
    docs = tmp_path / "new-docs.jsonl"
    docs.write_text(json.dumps(NEW_DOC) + "\n")
    assert CLI("judge", "extend", db, gamma, "--depth", 2, "--docs", docs).exit_code == 0
    for run, name in ((alpha, "sysalpha"), (gamma, "sysgamma")):
        lines = set()
        for args in (("pool", "--extend", db, run), ("judge", "extend", db, run, "--docs", docs)):
            for depth in (2, 50):
                out = CLI(*args, "--depth", depth)
                assert out.exit_code == 1 and "Traceback" not in out.output, out.output
                (line,) = out.stderr.strip().splitlines()
                assert f"a run named '{name}' was pooled into this project already" in line
                lines.add(line)
        assert len(lines) == 1


def test_pool_refuses_the_options_its_question_does_not_read(tmp_path: Path) -> None:
    runs, qrels = _write(tmp_path)
    for args in (("--calibration", 3), ("--calibration-labellers", 3), ("--seed", 5), ("--calibration", 5)):
        out = CLI("pool", "--extend", qrels, *runs, *args)
        assert out.exit_code == 2 and f"{args[0]} plans a new pool" in out.stderr, out.output
        assert "Traceback" not in out.output
    for args in (("--seconds-per-judgment", 60), ("--seed", 1), ("--calibration", 0)):
        out = CLI("pool", "--leave-one-out", *runs, "--qrels", qrels, *args)
        assert out.exit_code == 2 and f"{args[0]} plans a new pool" in out.stderr, out.output
    missing = CLI("pool", "--extend", tmp_path / "nope.db", *runs)
    assert missing.exit_code == 2 and "nope.db" in missing.stderr and "irds:ID" in missing.stderr
    # the defaults, and --seconds-per-judgment with --extend (it prices the new pairs), are fine
    assert CLI("pool", "--extend", qrels, *runs, "--seconds-per-judgment", 60).exit_code == 0
    assert CLI("pool", "--leave-one-out", *runs, "--qrels", qrels).exit_code == 0


def test_pool_extend_reports_the_phase_it_read_and_nothing_of_a_gate_for_qrels(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    run = tmp_path / "sysgamma.run"
    run.write_text(GAMMA)
    before = CLI("pool", "--extend", db, run, "--depth", 2, "-o", tmp_path / "t.jsonl")
    assert before.exit_code == 0, before.output
    assert (
        "phase read: round 1 is in calibration; `judge extend` would refuse until its gate passes"
        in before.stderr
    )
    phase = json.loads((tmp_path / "t.meta.json").read_text())["extends"]["phase"]
    assert phase == {"state": "calibration", "round": 1, "outcome": None, "calibration_complete": False}
    pass_gate(db)
    after = CLI("pool", "--extend", db, run, "--depth", 2)
    assert "phase read: round 1's gate: passed; `judge extend` would add these pairs" in after.stderr
    assert "cost: 3 judgments x 30 s = 0.0 h (one judgment per pair)" in after.stderr
    _, qrels = _write(tmp_path)
    on_file = CLI("pool", "--extend", qrels, run, "--depth", 2)
    assert on_file.exit_code == 0 and "gate" not in on_file.stderr and "phase" not in on_file.stderr
