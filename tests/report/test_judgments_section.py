"""The report's Judgments section: each kappa names its two labellers and gives its interval and the query
bootstrap's; a kappa that was not measured says why in words, never an empty interval. The manifests are
written by hand (the fields a judging project's final export writes), read by judgments_meaning as eval
and report read them."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

from qrelkit.judgments.manifest import judgments_meaning
from qrelkit.report.page import _agreement_rows, _judgments_section


def pair(a: str, b: str, kappa: float | None, low: float | None, high: float | None) -> dict[str, Any]:
    return {"labellers": [a, b], "kappa": kappa, "ci_low": low, "ci_high": high, "level": 0.95,
            "weights": "linear", "n_pairs": 40, "bootstrap_low": None if low is None else low + 0.01,
            "bootstrap_high": None if high is None else high - 0.01}  # fmt: skip


def manifest(calibration: dict[str, Any] | None) -> dict[str, Any]:
    return {"qrels": {"sha256": "0" * 64}, "rubric": {"name": "r", "version": "1", "content_hash": "ab"},
            "scale": [0, 1, 2], "labellers": ["ann", "bo", "cy"], "calibration": calibration}  # fmt: skip


def test_three_labellers_each_pair_named_with_its_intervals() -> None:
    pairs = [
        pair("ann", "bo", 0.8, 0.7, 0.9),
        pair("ann", "cy", 0.6, 0.45, 0.75),
        pair("bo", "cy", 0.7, 0.6, 0.8),
    ]
    calibration = {**pairs[1], "status": "passed", "round": 1, "pairs_of_labellers": pairs, "gate": None}
    rows = _agreement_rows(judgments_meaning(manifest(calibration)))
    assert rows == [
        ["kappa (linear) of ann and bo", "0.800, 95% interval [0.700, 0.900], query bootstrap [0.710, 0.890], on 40 pairs"],
        ["kappa (linear) of ann and cy (the pair that agrees least: the gate's)",
         "0.600, 95% interval [0.450, 0.750], query bootstrap [0.460, 0.740], on 40 pairs"],
        ["kappa (linear) of bo and cy", "0.700, 95% interval [0.600, 0.800], query bootstrap [0.610, 0.790], on 40 pairs"],
    ]  # fmt: skip


def test_two_labellers_of_adjudicate_and_a_group_statistic() -> None:
    calibration = {**pair("ann", "bo", 0.83, 0.77, 0.89), "gate": None}
    meaning = judgments_meaning(manifest(calibration))
    meaning["group_agreement"] = {"name": "Krippendorff's alpha (ordinal)", "value": 0.71, "bootstrap_low": None,
                                  "bootstrap_high": None, "labellers": ["ann", "bo", "cy"], "n_units": 60}  # fmt: skip
    assert _agreement_rows(meaning) == [
        ["kappa (linear) of ann and bo", "0.830, 95% interval [0.770, 0.890], query bootstrap [0.780, 0.880], on 40 pairs"],
        ["Krippendorff's alpha (ordinal) of ann, bo, cy", "0.710, query bootstrap undefined, on 60 pairs"],
    ]  # fmt: skip


def test_a_kappa_not_measured_says_why() -> None:
    empty = {**pair("", "", None, None, None), "labellers": None}
    skipped = {
        **empty,
        "status": "not measured",
        "not_measured": "the project was made with --no-calibration",
    }
    assert _agreement_rows(judgments_meaning(manifest(skipped))) == [
        ["kappa", "not measured: the project was made with --no-calibration"]
    ]
    measuring = {**empty, "status": "measuring", "round": 2}
    assert _agreement_rows(judgments_meaning(manifest(measuring))) == [
        ["kappa", "not decided yet: calibration round 2 is still being judged"]
    ]
    unmeasurable = {**empty, "status": "not measurable", "not_measurable": "bo has no grades"}
    assert _agreement_rows(judgments_meaning(manifest(unmeasurable))) == [
        ["kappa", "not measurable: bo has no grades"]
    ]
    assert _agreement_rows(judgments_meaning(manifest(None))) == [
        ["kappa", "not measured: the manifest has no calibration"]
    ]


class _Dossier:
    """The two fields the Judgments section reads."""

    def __init__(self, judgments: dict[str, Any]) -> None:
        self.judgments = judgments
        self.comparison = type("C", (), {"noise": None})()


def test_the_section_never_shows_an_empty_interval() -> None:
    for calibration in (None, {**pair("", "", None, None, None), "status": "measuring", "round": 1}):
        html = _judgments_section(_Dossier(judgments_meaning(manifest(calibration))))
        text = unescape(re.sub(r"<[^>]+>", " ", html))
        assert "[–, –]" not in text and "[-, -]" not in text
        assert "kappa" in text
