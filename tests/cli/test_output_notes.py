"""What ``eval`` and ``conventions`` print beside the numbers: trec_eval's names read without trec_eval's
profile, the terminal table printed as it is (no highlighting), the rubric hash in the qrels header, and
``conventions`` over several runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ..conftest import CLI, EXAMPLE

QRELS = EXAMPLE / "qrels.txt"
RUNS = [EXAMPLE / "runs" / f"{n}.run" for n in ("bm25", "rerank")]
JUDGMENTS = EXAMPLE / "judgments"


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("note:")]


def test_a_trec_eval_name_without_the_profile_says_whose_ndcg_it_is() -> None:
    result = CLI("eval", QRELS, RUNS[0], "-m", "ndcg_cut.10", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert notes(result.stderr) == [
        "note: ndcg_cut.10 is qrelkit's nDCG@10 with gain=exponential, ties=average (trec_eval's: gain=linear, "
        "ties=docid_desc); add --profile trec_eval for trec_eval's numbers"
    ]
    # the note changes nothing: the number is qrelkit's nDCG@10
    same = CLI("eval", QRELS, RUNS[0], "-m", "nDCG@10", "-f", "json")
    assert json.loads(result.stdout)["results"] == json.loads(same.stdout)["results"]
    assert notes(same.stderr) == []


def test_no_note_under_trec_evals_profile_or_its_axes() -> None:
    profile = CLI("eval", QRELS, RUNS[0], "-m", "ndcg_cut.10", "--profile", "trec_eval", "-f", "json")
    assert profile.exit_code == 0, profile.stderr
    assert notes(profile.stderr) == []
    axes = CLI("eval", QRELS, RUNS[0], "-m", "map", "--ties", "docid_desc", "-f", "json")
    assert axes.exit_code == 0 and notes(axes.stderr) == []
    ties = CLI("eval", QRELS, RUNS[0], "-m", "map", "-f", "json")
    assert notes(ties.stderr) == [
        "note: map is qrelkit's AP(rel=1) with ties=average (trec_eval's: ties=docid_desc); add --profile "
        "trec_eval for trec_eval's numbers"
    ]


def test_the_terminal_table_is_printed_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich's highlighter would colour part of a sha256 (as an IPv6 address) and ``key=value`` pairs and
    ``R(rel=1)`` (as a call); with colours forced on, the data carries no escape code inside it."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    result = CLI("eval", QRELS, *RUNS, "-f", "table")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "\x1b[" in out  # colours are on (the dim labels)
    for line in out.splitlines():
        if "sha256:" in line:
            assert re.search(r"sha256:[0-9a-f]{16}(\s|;|$)", line), repr(line)
    convention_line = next(line for line in out.splitlines() if "conventions:" in line)
    assert "\x1b[" not in convention_line.split("conventions:")[1].lstrip("\x1b[0m"), repr(convention_line)
    assert "gain=exponential, discount=log2" in out
    assert "R(rel=1)@100" in out


def test_eval_carries_the_manifests_rubric_hash_in_the_qrels_header(tmp_path: Path) -> None:
    queue, decisions, final = tmp_path / "queue.tsv", tmp_path / "decisions.tsv", tmp_path / "final.qrels"
    alice, bob = JUDGMENTS / "alice.qrels", JUDGMENTS / "bob.qrels"
    assert CLI("adjudicate", alice, bob, "--runs", *RUNS, "-o", queue).exit_code == 0
    rows = [line.split("\t") for line in queue.read_text().splitlines()[1:]]
    decisions.write_text("".join(f"{q}\t{d}\t{b}\n" for q, d, _, b, *_ in rows))
    made = CLI(
        "adjudicate", alice, bob, "--decisions", decisions, "--rubric", EXAMPLE / "rubric.toml", "-o", final
    )
    assert made.exit_code == 0, made.stderr
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())
    result = CLI("eval", final, RUNS[0], "-m", "nDCG@10", "-f", "json")
    data = json.loads(result.stdout)
    assert data["qrels"]["rubric_hash"] == manifest["rubric"]["content_hash"]
    assert data["judgments"]["rubric"]["content_hash"] == manifest["rubric"]["content_hash"]
    # the judgments block names the two labellers of its kappa
    assert data["judgments"]["calibration"]["labellers"] == ["alice", "bob"]
    table = CLI("eval", final, RUNS[0], "-m", "nDCG@10", "-f", "table").stdout
    assert "(alice and bob)" in table


def test_conventions_takes_several_runs() -> None:
    one = [CLI("conventions", QRELS, run, "-f", "json") for run in RUNS]
    both = CLI("conventions", QRELS, *RUNS, "-f", "json")
    assert both.exit_code == 0, both.stderr
    data = json.loads(both.stdout)
    assert [r["run"] for r in data["runs"]] == ["bm25", "rerank"]
    for entry, alone in zip(data["runs"], one, strict=True):
        single = json.loads(alone.stdout)
        assert entry["rows"] == single["rows"] and entry["fingerprint"] == single["run"]["fingerprint"]
    assert data["measure"] == "nDCG@10" and data["qrels"]["name"] == "qrels.txt"
    tsv = CLI("conventions", QRELS, *RUNS, "-f", "tsv").stdout.splitlines()[2:]  # after the pipe's two lines
    singles = [CLI("conventions", QRELS, run, "-f", "tsv").stdout.splitlines()[2:] for run in RUNS]
    assert tsv[0] == "run\t" + singles[0][0]
    assert tsv[1:] == [f"bm25\t{r}" for r in singles[0][1:]] + [f"rerank\t{r}" for r in singles[1][1:]]
    table = CLI("conventions", QRELS, *RUNS, "-f", "table").stdout
    assert "of run 'bm25' under every profile" in table and "of run 'rerank' under every profile" in table
    diff = CLI("conventions", QRELS, *RUNS, "--diff", "trec_eval", "sklearn", "-f", "table")
    assert diff.exit_code == 0 and "run 'bm25'\n" in diff.stdout and "run 'rerank'\n" in diff.stdout
    assert CLI("conventions", QRELS).exit_code == 2
