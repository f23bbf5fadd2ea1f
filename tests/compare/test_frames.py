"""A Comparison as frames and in a console or notebook: to_polars/to_pandas (one row per pair and measure),
bottom_line() (the sentences `qrelkit compare` prints), a readable repr and an HTML repr."""

from __future__ import annotations

import html

import pytest

import qrelkit
from qrelkit.compare import compare

from ..conftest import CLI, EXAMPLE

RUNS = [EXAMPLE / "runs" / f"{name}.run" for name in ("bm25", "dense", "rerank")]


@pytest.fixture(scope="module")
def comparison():  # type: ignore[no-untyped-def]
    results = qrelkit.evaluate_files(EXAMPLE / "qrels.txt", RUNS, ["nDCG@10", "R@100"])
    return compare(results, permutations=500, bootstrap=300)


def test_the_frame_has_one_row_per_pair_and_measure(comparison) -> None:
    frame = comparison.to_polars()
    assert frame.height == 4  # (dense, rerank) against bm25, under two measures
    assert frame.columns[:3] == ["baseline", "treatment", "measure"]
    assert frame.select("baseline", "treatment", "measure").rows() == [
        ("bm25", "dense", "nDCG@10"), ("bm25", "dense", "R(rel=1)@100"),
        ("bm25", "rerank", "nDCG@10"), ("bm25", "rerank", "R(rel=1)@100"),
    ]  # fmt: skip
    results = comparison.results
    for row in frame.iter_rows(named=True):
        # the means are the evaluation's, the difference their difference, every query won, tied or lost
        assert row["mean_baseline"] == pytest.approx(results.mean(row["measure"], row["baseline"]), abs=1e-12)
        assert row["mean_treatment"] == pytest.approx(
            results.mean(row["measure"], row["treatment"]), abs=1e-12
        )
        assert row["difference"] == pytest.approx(row["mean_treatment"] - row["mean_baseline"], abs=1e-12)
        assert row["wins"] + row["ties"] + row["losses"] == row["queries"] == 30
        assert row["t_low"] < row["difference"] < row["t_high"]
    pandas = comparison.to_pandas()
    assert list(pandas.columns) == frame.columns and len(pandas) == 4


def test_bottom_line_is_the_sentences_compare_prints(comparison) -> None:
    printed = CLI("compare", EXAMPLE / "qrels.txt", *RUNS, "-m", "nDCG@10", "-m", "R@100", "--permutations", 500,
                  "--bootstrap", 300, "-f", "table").stdout.splitlines()  # fmt: skip
    start = printed.index("bottom line:") + 1
    sentences = [line.strip() for line in printed[start : printed.index("", start)]]
    assert comparison.bottom_line() == sentences
    assert sentences[0].startswith("rerank beats bm25 on nDCG@10 by +0.156")


def test_the_reprs_lead_with_the_bottom_line(comparison) -> None:
    text = repr(comparison).splitlines()
    assert text[0] == "Comparison(3 run(s), 4 pair(s); test randomization, correction holm, alpha 0.05)"
    assert text[1:] == [f"  {s}" for s in comparison.bottom_line()]
    page = comparison._repr_html_()
    assert page.startswith(f"<p>{html.escape(comparison.bottom_line()[0])}</p>")
    assert page.count("<tr>") == 1 + 4 and "<th>p_adjusted</th>" in page


def test_with_people_s_grades_the_frames_are_the_estimated_differences() -> None:
    """With ``human``, to_polars/to_pandas/rows carry what bottom_line() and the repr say (the estimates);
    the model's grades alone only when asked for by name."""
    model = qrelkit.evaluate_files(EXAMPLE / "estimate" / "model.qrels", RUNS[::2], ["nDCG@10"])
    human = qrelkit.evaluate_files(EXAMPLE / "estimate" / "human.qrels", RUNS[::2], ["nDCG@10"])
    c = compare(model, human=human, permutations=200, bootstrap=100)
    (estimate,) = c.estimated
    frame = c.to_polars()
    assert frame.columns[:5] == ["baseline", "treatment", "measure", "estimator", "interval_kind"]
    (row,) = frame.iter_rows(named=True)
    assert (row["baseline"], row["treatment"], row["measure"]) == ("bm25", "rerank", "nDCG@10")
    assert (row["human_queries"], row["unlabeled_queries"]) == (10, 20)  # the example's split
    assert row["difference"] == estimate.estimate.value
    assert (row["low"], row["high"]) == (estimate.estimate.low, estimate.estimate.high)
    # the people's difference on their 10 queries, by hand from two evaluations of the human qrels
    base, treat = human.values("nDCG@10", "bm25"), human.values("nDCG@10", "rerank")
    people = [treat[q] - base[q] for q in base]
    assert len(people) == 10
    assert row["human_difference"] == pytest.approx(sum(people) / len(people), abs=1e-12)
    assert c.rows() == [dict(zip(frame.columns, frame.row(0), strict=True))]
    assert list(c.to_pandas().columns) == frame.columns
    model_alone = c.to_polars(model_alone=True)
    assert model_alone.columns[3:7] == ["queries", "mean_baseline", "mean_treatment", "difference"]
    (m,) = model_alone.iter_rows(named=True)
    assert m["queries"] == 30 and m["mean_treatment"] == model.mean("nDCG@10", "rerank")
    assert list(c.to_pandas(model_alone=True).columns) == model_alone.columns
    page = c._repr_html_()  # a notebook's view: the estimated differences too
    assert "<th>estimator</th>" in page and "<th>mean_baseline</th>" not in page
