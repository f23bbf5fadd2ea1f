"""``profile=`` at the API's doors (evaluate, evaluate_files, read_qrels, read_run): the profile's
conventions and reader rules, exactly as ``--profile`` applies them; the numbers checked against
pytrec_eval itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

import qrelkit
from qrelkit.errors import QrelkitError

from ..conftest import CLI

QRELS = "# judged by alice, 2026-03\nq1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq1 0 d4 3\nq2 0 d1 1\nq2 0 d5 2\n"
RUN = (
    "# bm25, k1=0.9\n"
    "q1 Q0 d2 1 3.0 bm25\nq1 Q0 d1 2 2.0 bm25\nq1 Q0 d9 3 1.5 bm25\nq1 Q0 d4 4 1.0 bm25\n"
    "q2 Q0 d5 1 2.0 bm25\nq2 Q0 d1 2 2.0 bm25\n"
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "bm25.run").write_text(RUN)
    return tmp_path / "q.txt", tmp_path / "bm25.run"


def _pytrec(measure: str) -> dict[str, float]:
    """pytrec_eval's per-query values of the same judgments and run, the comment lines dropped by hand."""
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.splitlines()[1:]:
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    run: dict[str, dict[str, float]] = {}
    for line in RUN.splitlines()[1:]:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    scores = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return {q: v[measure] for q, v in scores.items()}


def test_read_qrels_with_a_profile_takes_its_comment_rule(files) -> None:
    qrels_path, run_path = files
    with pytest.raises(QrelkitError, match=":1"):  # the '#' line is not a judgment without the profile
        qrelkit.read_qrels(qrels_path)
    qrels = qrelkit.read_qrels(qrels_path, profile="trec_eval")
    assert qrels.frame.height == 6
    run = qrelkit.read_run(run_path, profile="trec_eval")
    assert run.frame.height == 6 and run.name == "bm25"
    with pytest.raises(QrelkitError, match="unknown profile 'trec-eval'"):
        qrelkit.read_qrels(qrels_path, profile="trec-eval")


def test_evaluate_files_with_a_profile_is_eval_with_profile_and_pytrec_eval(files) -> None:
    qrels_path, run_path = files
    results = qrelkit.evaluate_files(qrels_path, [run_path], ["ndcg_cut_10", "map"], profile="trec_eval")
    cli = CLI(
        "eval", qrels_path, run_path, "-m", "ndcg_cut_10", "-m", "map", "--profile", "trec_eval", "-f", "json"
    )
    assert cli.exit_code == 0, cli.output
    from_cli = json.loads(cli.stdout)
    assert results.to_dict()["results"] == from_cli["results"]
    assert results.conventions.to_dict() == from_cli["conventions"]
    for measure, ours in zip(("ndcg_cut_10", "map"), results.measure_names, strict=True):
        theirs = _pytrec(measure)
        assert results.values(ours, "bm25") == pytest.approx(theirs, abs=1e-12)


def test_evaluate_with_a_profile_is_evaluate_with_its_conventions(files) -> None:
    qrels_path, run_path = files
    # pytrec_eval reads dicts, so its profile skips no line: a rule given wins over the profile's
    qrels = qrelkit.read_qrels(qrels_path, profile="pytrec_eval", comments=True)
    run = qrelkit.read_run(run_path, profile="pytrec_eval", comments=True)
    by_name = qrelkit.evaluate(qrels, [run], ["ndcg_cut_10"], profile="pytrec_eval")
    by_value = qrelkit.evaluate(
        qrels, [run], ["ndcg_cut_10"], qrelkit.Conventions.from_profile("pytrec_eval")
    )
    assert by_name.to_dict()["results"] == by_value.to_dict()["results"]
    assert by_name.conventions.profile == "pytrec_eval"
    assert by_name.values(by_name.measure_names[0], "bm25") == pytest.approx(
        _pytrec("ndcg_cut_10"), abs=1e-12
    )
    with pytest.raises(QrelkitError, match="both profile='pytrec_eval' and conventions="):
        qrelkit.evaluate(qrels, [run], profile="pytrec_eval", conventions=qrelkit.DEFAULT)
