"""``qrelkit judge``: every admin action from the command line, and every command documented."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from qrelkit.cli import main
from qrelkit.cli.judge import command as judge_group

from ..conftest import CLI
from .helpers import FIXTURES, ROOT, grade_directly


def run(*args: str, code: int = 0) -> str:
    result = CLI("judge", *args)
    assert result.exit_code == code, (result.output, result.stderr if hasattr(result, "stderr") else "")
    return result.output


def test_a_project_end_to_end_from_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "project.db"
    out = run("init", str(db), "--rubric", str(FIXTURES / "rubric.toml"), "--pool", str(FIXTURES / "pool.jsonl"),
              "--docs", str(FIXTURES / "docs.jsonl"), "--queries", str(FIXTURES / "queries.tsv"),
              "--labellers", "alice,bob", "--runs", str(FIXTURES / "sysalpha.run"),
              "--runs", str(FIXTURES / "sysbeta.run"), "--seed", "1")  # fmt: skip
    assert "16 pairs over 4 queries" in out and "calibration queries (2): q1, q2" in out
    assert "runs stored: sysalpha, sysbeta" in out
    run("init", str(db), "--rubric", str(FIXTURES / "rubric.toml"), "--pool", str(FIXTURES / "pool.jsonl"),
        "--docs", str(FIXTURES / "docs.jsonl"), "--queries", str(FIXTURES / "queries.tsv"), "--labellers", "a,b",
        code=1)  # fmt: skip

    url = run("invite", str(db), "alice", "--base-url", "https://judge.example.org/").strip()
    assert re.fullmatch(r"https://judge\.example\.org/invite/[A-Za-z0-9_-]{43}", url)
    assert "did you mean 'alice'" in CliRunner().invoke(main, ["judge", "invite", str(db), "alicia"]).output

    assert "Waiting" not in run("kappa", str(db)) and "waiting" in run("kappa", str(db))
    calibration = {(q, d): grade for (q, d), grade in {
        ("q1", "keys/rotate"): 3, ("q1", "keys/policy"): 1, ("q1", "security/advisory-4"): 0,
        ("q1", "changelog/2026"): 1, ("q2", "sdk/retries"): 3, ("q2", "limits/rate"): 2,
        ("q2", "sdk/timeouts"): 1, ("q2", "security/advisory-4"): 0}.items()}  # fmt: skip
    grade_directly(db, "alice", calibration)
    grade_directly(db, "bob", {**calibration, ("q1", "keys/policy"): 3})

    status = json.loads(run("status", str(db), "--json"))
    assert [(r["name"], r["done"], r["assigned"]) for r in status["labellers"]] == [
        ("alice", 8, 12),
        ("bob", 8, 12),
    ]
    text = run("status", str(db)).splitlines()
    # every column has its header: 8 of 12 pairs done is 66.7%, all 8 of 8 calibration pairs
    header = "labeller      done / assigned   done %   calibration   unsure   pairs/hour   median s/pair"
    assert text[1] == header and text[2].startswith(
        "alice            8 / 12          66.7%           8/8        0   "
    )
    assert set(status["pace"]) == {"alice", "bob"} and status["pace"]["alice"]["events"] == 8

    # one split in eight pairs: the lower end of kappa's interval is below 0.6, the gate fails, and `judge
    # kappa` exits 3 as `agree` does (the message on stderr, the report on stdout)
    failed = CLI("judge", "kappa", str(db), "--json")
    assert failed.exit_code == 3 and failed.stderr == "gate: round 1 did not pass (failed); exit status 3\n"
    kappa = json.loads(failed.stdout)["calibration"][0]
    assert kappa["finished"] and kappa["n_pairs"] == 8 and kappa["scale"] == [0, 1, 2, 3]
    assert not kappa["gate"]["passed"] and re.search(r"kappa \d\.\d\d", run("kappa", str(db), code=3))

    queue = json.loads(run("queue", str(db), "--json"))
    assert queue["method"] == "leverage" and [(i["query_id"], i["doc_id"]) for i in queue["items"]] == [
        ("q1", "keys/policy")
    ]
    shown_queue = run("queue", str(db), "-f", "table").splitlines()
    assert shown_queue[0] == "1 pairs to adjudicate, ordered by leverage"
    assert shown_queue[1] == (
        "query_id\tdoc_id\tgrades\tleverage (the largest nDCG change one regrade causes; else the grade distance)"
    )
    assert shown_queue[2].startswith("q1\tkeys/policy\talice: 1, bob: 3\t")

    # piped, the queue is the TSV to fill: '#' lines (the version, how to fill it), then the header and rows
    piped = run("queue", str(db)).splitlines()
    assert piped[0].startswith("# qrelkit ") and piped[0].endswith(" · project project.db")
    rows = [line for line in piped if not line.startswith("#")]
    assert rows[0].startswith("query_id\tdoc_id\tgrade\tnote") and rows[1].startswith("q1\tkeys/policy\t\t\t")
    assert json.loads(run("queue", str(db), "-f", "json"))["items"] == queue["items"]
    said = run("decide", str(db), "q1", "keys/policy", "1", "--by", "admin")
    assert said.startswith("q1 keys/policy: final grade 1 (decision 1;")
    assert "0 pairs" in run("queue", str(db))
    assert run("undo", str(db), "1", "--by", "admin") == "decision 1 undone\n"
    assert "1 pairs" in run("queue", str(db))  # back in the queue
    run("undo", str(db), "1", code=1)  # undone already
    run("decide", str(db), "q1", "keys/policy", "2", "--note", "policy only", "--by", "admin")
    run("decide", str(db), "q1", "keys/policy", "7", code=1)
    assert "final grade" not in run("queue", str(db)) and "0 pairs" in run("queue", str(db))
    shown = run("show", str(db), "q1", "keys/policy")
    assert re.search(r"grade +alice +1", shown) and re.search(r"grade +bob +3", shown)
    assert re.search(r"final +admin +1  \[decision 1\]", shown) and re.search(r"undo +admin +1", shown)
    assert re.search(r"final +admin +2  \[decision 2\] policy only", shown)

    final = tmp_path / "final.qrels"
    out = run("export", str(db), "--final", "-o", str(final))
    assert "8 judgments" in out and "1 adjudicated, 0 overridden, 7 agreed" in out
    lines = final.read_text().splitlines()
    assert "q1 0 keys/policy 2" in lines and len(lines) == 8
    from qrelkit.judgments.manifest import read_manifest

    manifest = read_manifest(final)
    assert manifest["rubric"]["name"] == "judging-fixture" and manifest["calibration"]["n_pairs"] == 8
    assert manifest["adjudication"]["adjudicated"] == 1 and manifest["labellers"] == ["alice", "bob"]

    mine = tmp_path / "bob.qrels"
    assert "8 judgments by bob" in run("export", str(db), "--labeller", "bob", "-o", str(mine))
    assert "q1 0 keys/policy 3" in mine.read_text().splitlines()
    run("export", str(db), "-o", str(mine), code=2)


def test_every_judge_command_is_documented() -> None:
    doc = (ROOT / "docs" / "judging.md").read_text()
    missing = [name for name in judge_group.commands if f"qrelkit judge {name}" not in doc]
    assert not missing, f"docs/judging.md does not show: {', '.join(missing)}"
    assert "img/labeller.png" in doc


def test_init_refuses_a_rubric_that_fails_lint(tmp_path: Path) -> None:
    rubric = ROOT / "tests" / "fixtures" / "rubrics" / "best-answer.toml"
    args = ["judge", "init", str(tmp_path / "p.db"), "--rubric", str(rubric), "--pool", str(FIXTURES / "pool.jsonl"),
            "--docs", str(FIXTURES / "docs.jsonl"), "--queries", str(FIXTURES / "queries.tsv"),
            "--labellers", "alice,bob"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "lint error" in result.output  # as `judge revise` refuses it
    assert not (tmp_path / "p.db").exists()


def test_pairs_judged_elsewhere_need_no_text(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text(
        (FIXTURES / "pool.jsonl").read_text()
        + json.dumps({"query_id": "q9", "doc_id": "gone/page", "runs": {}, "best_rank": 3, "judged": True})
        + "\n"
    )
    out = run("init", str(tmp_path / "p.db"), "--rubric", str(FIXTURES / "rubric.toml"), "--pool", str(pool),
              "--docs", str(FIXTURES / "docs.jsonl"), "--queries", str(FIXTURES / "queries.tsv"),
              "--labellers", "alice,bob")  # fmt: skip
    assert "2 pooled pairs were judged already" in out
