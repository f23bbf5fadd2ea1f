"""The renderings of estimates and estimated differences: every format names the estimator, |H|, |U|, lambda,
both judgments' fingerprints, and (from the model's manifest) the calibration gate."""

from __future__ import annotations

import html
import json

import pytest

import qrelkit
from qrelkit.compare import compare
from qrelkit.report.compare import render_compare
from qrelkit.report.estimates import FORMATS, render_estimates
from tests.conftest import EXAMPLE

RUNS = [EXAMPLE / "runs" / f"{n}.run" for n in ("bm25", "rerank")]


@pytest.fixture(scope="module")
def evaluated():
    runs = [qrelkit.read_run(p) for p in RUNS]
    model = qrelkit.evaluate(qrelkit.read_qrels(EXAMPLE / "estimate" / "model.qrels"), runs, ["nDCG@10"])
    human = qrelkit.evaluate(qrelkit.read_qrels(EXAMPLE / "estimate" / "human.qrels"), runs, ["nDCG@10"])
    return model, human


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_records_the_estimator_sizes_and_both_fingerprints(evaluated, fmt):
    model, human = evaluated
    text = render_estimates(qrelkit.estimate(model, human, "ppi"), fmt)
    for sha in (model.qrels_fingerprint.sha256[:16], human.qrels_fingerprint.sha256[:16]):
        assert sha in text
    assert "exponential" in text  # the conventions
    if fmt == "json":
        row = json.loads(text)["estimates"][0]
        assert (row["estimator"], row["lambda"], row["human_queries"], row["unlabeled_queries"]) == (
            "ppi",
            1.0,
            10,
            20,
        )
    else:
        assert "ppi" in text and "10" in text and "20" in text


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex", "html", "json"])
def test_the_comparison_prints_the_estimated_differences_and_the_model_s_gate(evaluated, fmt):
    model, human = evaluated
    gated = model.with_judgments(
        {"gate": {"passed": False, "message": "kappa 0.31 below 0.6"}, "warnings": []}
    )
    text = html.unescape(render_compare(compare(gated, human=human), fmt))
    if fmt == "json":
        estimation = json.loads(text)["comparison"]["estimation"]
        assert estimation["pairs"][0]["human_queries"] == 10
        assert json.loads(text)["judgments"]["gate"]["passed"] is False
        text = json.dumps(estimation)
    else:
        assert "model qrels' calibration gate: failed (kappa 0.31 below 0.6)" in text
    assert human.qrels_fingerprint.sha256[:16] in text
    assert "ppi++" in text
