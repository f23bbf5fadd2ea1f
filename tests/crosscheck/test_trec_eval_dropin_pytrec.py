"""``qrelkit trec_eval -q`` against pytrec_eval (trec_eval 9's code), query by query, on options the
expected outputs do not cover (-J, -l) and on generated tie-heavy runs over the real judgments.

pytrec_eval holds scores as 32-bit floats and truncates iprec_at_recall's and 11pt_avg's recall
cutoffs (trec_eval 9), so the runs here use scores that 32-bit floats keep distinct or tie alike, and
those two measures are compared only where trec_eval 9 and 10 agree by construction (not at all)."""

from __future__ import annotations

import random

import pytest
import pytrec_eval
from click.testing import CliRunner

from qrelkit.cli import main

from ..conftest import data_path

SKIP = {"iprec_at_recall", "11pt_avg", "relstring", "runid", "num_q", "gm_map", "gm_bpref"}


def _ours(args):
    out = CliRunner().invoke(main, ["trec_eval", "-q", "-m", "all_trec", *args])
    assert out.exit_code == 0, out.output
    values = {}
    for line in out.output.splitlines():
        name, qid, value = line.split("\t")
        if qid != "all":
            values[(name.strip(), qid)] = float(value.strip("'")) if not value.startswith("'") else value
    return values


def _theirs(qrels_path, run_path, judged_only=False, rel_level=1):
    with open(qrels_path) as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with open(run_path) as fh:
        run = pytrec_eval.parse_run(fh)
    measures = {m for m in pytrec_eval.supported_measures if m not in SKIP}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, measures, relevance_level=rel_level, judged_docs_only_flag=judged_only
    )
    return evaluator.evaluate(run)


def _compare(ours, theirs):
    checked = 0
    for qid, values in theirs.items():
        for name, value in values.items():
            if (name, qid) not in ours:
                continue
            assert abs(ours[(name, qid)] - value) <= 5e-5 + 1e-9, (name, qid, ours[(name, qid)], value)
            checked += 1
    return checked


@pytest.mark.parametrize(("flags", "judged_only", "rel"), [(["-J"], True, 1), (["-J", "-l2"], True, 2)])
def test_judged_only_and_level_match_pytrec_eval(flags, judged_only, rel):
    qrels = data_path("trec_eval-tests", "qrels.rel_level")
    run = data_path("trec_eval-tests", "results.test")
    checked = _compare(_ours([*flags, str(qrels), str(run)]), _theirs(qrels, run, judged_only, rel))
    assert checked > 200


def test_tie_heavy_run_over_real_judgments_matches_pytrec_eval(tmp_path):
    """A generated run with many tied scores (ties broken by document id descending in both) over the
    judgments of trec_eval's test suite, every judged query present."""
    qrels_path = data_path("trec_eval-tests", "qrels.rel_level")
    rng = random.Random(7)
    by_query: dict[str, list[str]] = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, _ = line.split()
        by_query.setdefault(q, []).append(d)
    lines = []
    for q, docs in by_query.items():
        picked = rng.sample(docs, min(len(docs), 150)) + [f"UNJ-{q}-{i}" for i in range(30)]
        for d in picked:
            lines.append(f"{q} Q0 {d} 0 {rng.choice([1, 2, 3, 4, 0.5, 0.25])} tied\n")
    run_path = tmp_path / "tied.run"
    run_path.write_text("".join(lines))
    for rel in (1, 2):
        checked = _compare(
            _ours([f"-l{rel}", str(qrels_path), str(run_path)]), _theirs(qrels_path, run_path, rel_level=rel)
        )
        assert checked > 200
