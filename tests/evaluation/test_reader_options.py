"""The reader options as one value: a door's keywords resolve as the profile says, and an API that takes the
value refuses the separate keywords with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from qrelkit.compare import compare_files
from qrelkit.errors import ValidationError
from qrelkit.evaluation.plan import Inputs, ReaderOptions, plan_reading, whole_plan
from qrelkit.measures.conventions import DEFAULT, Conventions
from qrelkit.measures.grammar import parse_measures

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "docsearch"


def test_given_options_win_and_the_rest_come_from_the_profile():
    trec = Conventions.from_profile("trec_eval")
    resolved = ReaderOptions.given("trec", None, None, (0, 1, 2, 3), "abc").resolved(None)
    assert (resolved.input_format, resolved.on_duplicate, resolved.comments) == ("trec", "error", False)
    assert (resolved.scale, resolved.rubric_hash) == ((0, 1, 2, 3), "abc")
    plan = plan_reading(Inputs.build("q", ("r",), parse_measures(["nDCG@10"]), trec))
    assert plan.on_duplicate == "error" and plan.comments is True  # trec_eval 10 skips '#' lines
    assert dict(plan.options.source) == {"on_duplicate": "profile trec_eval", "comments": "profile trec_eval"}
    given = plan_reading(
        Inputs.build("q", ("r",), parse_measures(["nDCG@10"]), trec, ReaderOptions(comments=False))
    )
    assert given.comments is False and dict(given.options.source)["comments"] == "given"


def test_a_whole_plan_reads_every_row_and_is_made_once():
    plan = whole_plan("q", ("r",), DEFAULT)
    assert plan.route == "whole" and plan.depth is None and plan.reason == "every row of every run"
    assert plan.inputs is not None and plan.inputs.runs == ("r",)


def test_compare_files_refuses_the_separate_keywords_with_the_fix():
    runs = [EXAMPLE / "runs" / "bm25.run", EXAMPLE / "runs" / "dense.run"]
    with pytest.raises(ValidationError) as caught:
        compare_files(EXAMPLE / "qrels.txt", runs, on_duplicate="max")
    assert str(caught.value) == (
        "compare_files takes the reader options as one value, not as on_duplicate. Fix: pass "
        "reader=ReaderOptions.given(on_duplicate=...) (qrelkit.evaluation.plan.ReaderOptions)"
    )
    got = compare_files(EXAMPLE / "qrels.txt", runs, reader=ReaderOptions.given(on_duplicate="max"))
    assert got.results.run_names == ["bm25", "dense"]


def test_the_bounds_share_one_reading_with_the_evaluation():
    """With the judgment bounds, each run is read whole once: the numbers are those of the evaluation read to
    its depth, the bounds those of the bounds read on their own, and the provenance records the one reading."""
    from qrelkit.evaluation.bounds import bounds_files
    from qrelkit.evaluation.files import evaluate_files, evaluate_planned_on, plan_inputs

    qrels, runs = EXAMPLE / "qrels.txt", sorted((EXAMPLE / "runs").glob("*.run"))
    measures = ["nDCG@10", "R@100", "AP"]
    both = evaluate_planned_on(plan_inputs(qrels, runs, measures, DEFAULT), bounds=True)
    alone = evaluate_files(qrels, runs, measures)
    assert both.per_query.equals(alone.per_query)
    assert both.bounds.to_dict() == bounds_files(qrels, runs, measures, DEFAULT).to_dict()
    assert both.to_dict()["reading"]["route"] == "whole" and alone.to_dict()["reading"]["route"] == "readers"
