"""``eval``, ``compare`` and ``report`` with ``--human``: the numbers against ppi_py over the per-query values
plain ``eval`` prints, what every output records, and the bad inputs as one line on stderr."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from tests.conftest import EXAMPLE

ppi = pytest.importorskip("ppi_py")

MODEL = EXAMPLE / "estimate" / "model.qrels"
HUMAN = EXAMPLE / "estimate" / "human.qrels"
BM25, DENSE, RERANK = (EXAMPLE / "runs" / f"{n}.run" for n in ("bm25", "dense", "rerank"))


def _per_query(cli, qrels, run):
    out = cli("eval", qrels, run, "-m", "nDCG@10", "-q", "-f", "json")
    assert out.exit_code == 0, out.stderr
    (values,) = json.loads(out.stdout)["results"]["per_query"].values()
    return {q: v["nDCG@10"] for q, v in values.items()}


def _bm25_split(cli):
    model, human = _per_query(cli, MODEL, BM25), _per_query(cli, HUMAN, BM25)
    h = sorted(human)
    u = sorted(set(model) - set(human))
    return tuple(np.array(v) for v in ([human[q] for q in h], [model[q] for q in h], [model[q] for q in u]))


def test_eval_human_interval_normal_is_ppi_py_over_eval_s_own_per_query_values(cli):
    y, yhat, yhat_u = _bm25_split(cli)
    out = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", "--interval", "normal", "-f", "json")
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    (row,) = data["estimates"]
    low, high = ppi.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=None)
    assert row["estimator"] == "ppi++" and row["interval_kind"] == "normal"
    assert data["estimation"]["interval"] == "normal" and "ppi_py" in data["estimation"]["interval_method"]
    assert row["interval"] == pytest.approx([float(low[0]), float(high[0])], abs=1e-10)
    assert (row["human_queries"], row["unlabeled_queries"]) == (10, 20)
    assert 0 <= row["lambda"] <= 1
    assert data["estimation"]["human_qrels"]["fingerprint"]["source"].endswith("human.qrels")
    assert data["estimation"]["model_qrels"]["fingerprint"]["source"].endswith("model.qrels")
    assert data["conventions"]["gain"] == "exponential"
    people = row["by_estimator"]["human"]
    t_low, t_high = stats.t.interval(0.95, len(y) - 1, loc=y.mean(), scale=stats.sem(y))
    assert people["interval"] == pytest.approx([t_low, t_high], abs=1e-10)


def test_eval_human_default_interval_is_the_t_one_and_every_format_names_it(cli):
    """The default: ppi_py's point estimate and lambda, variances with ddof 1, scipy's t quantile with
    |H| - 1 degrees of freedom."""
    y, yhat, yhat_u = _bm25_split(cli)
    out = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", "-f", "json")
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    (row,) = data["estimates"]
    lam = row["lambda"]
    point = float(np.ravel(ppi.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam))[0])
    se = np.sqrt(lam**2 * np.var(yhat_u, ddof=1) / len(yhat_u) + np.var(y - lam * yhat, ddof=1) / len(y))
    assert row["interval"] == pytest.approx(list(stats.t.interval(0.95, len(y) - 1, point, se)), abs=1e-10)
    assert data["estimation"]["interval"] == "t" and row["interval_kind"] == "t"
    for fmt in ("table", "markdown"):
        text = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", "-f", fmt).stdout
        assert "95% interval t (small-sample" in text, fmt
    # TSV names it in each row (its interval_kind column)
    lines = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", "-f", "tsv").stdout.splitlines()
    head, *body = [line.split("\t") for line in lines if not line.startswith("#")]
    assert body and {r[head.index("interval_kind")] for r in body} == {"t"}
    text = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", "-f", "table").stdout
    assert "lambda: how much the model's grades are trusted (0 = people only, 1 = fully)" in text
    assert "may pass the measure's range" in text


def test_eval_human_writes_latex_and_html_as_compare_human_does(cli, tmp_path):
    """-f latex, -f html and -o x.tex / x.html: the chosen estimate and its interval (ppi_py's point
    estimate at the JSON's lambda, as above), the estimator, both judgments' fingerprints."""
    y, yhat, yhat_u = _bm25_split(cli)
    (row,) = json.loads(cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", "-f", "json").stdout)[
        "estimates"
    ]
    point = float(np.ravel(ppi.ppi_mean_pointestimate(y, yhat, yhat_u, lam=row["lambda"]))[0])
    low, high = row["interval"]
    cells = f"bm25 & nDCG@10 & ppi++* & {point:.4f} & [{low:.4f}, {high:.4f}] & {row['lambda']:.3f} & 10 & 20"
    for how in (("-f", "latex"), ("-o", tmp_path / "x.tex")):
        out = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", *how)
        assert out.exit_code == 0, out.stderr
        latex = out.stdout if how[0] == "-f" else (tmp_path / "x.tex").read_text()
        assert "\\begin{tabular}" in latex and cells in latex, latex
        assert "% estimator: ppi++, 95% interval t" in latex and "% human qrels: human.qrels sha256:" in latex
    for how in (("-f", "html"), ("-o", tmp_path / "x.html")):
        out = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", *how)
        assert out.exit_code == 0, out.stderr
        page = out.stdout if how[0] == "-f" else (tmp_path / "x.html").read_text()
        assert page.startswith("<!doctype html>") and "Estimated means (ppi++)" in page
        assert f">{point:.4f}</td>" in page and f"[{low:.4f}, {high:.4f}]" in page
        assert "human qrels: human.qrels sha256:" in page
    assert "--human writes table|json|markdown|tsv|csv|latex|html" in " ".join(
        cli("eval", "--help").stdout.split()
    )


def test_a_value_that_does_not_vary_on_h_is_not_measurable_with_its_reason(cli):
    """Judged@10 of dense is 1 on every human-judged query of the example: no interval, in every format."""
    out = cli("eval", MODEL, DENSE, "--human", HUMAN, "-m", "Judged@10", "-f", "json")
    assert out.exit_code == 0, out.stderr
    (row,) = json.loads(out.stdout)["estimates"]
    assert row["interval"] is None and row["se"] is None and row["p_value"] is None
    assert row["reason"].startswith("the people's values are all 1 on the 10 human-judged queries")
    assert row["value"] == 1.0  # the people's mean on H, with no interval
    table = cli("eval", MODEL, DENSE, "--human", HUMAN, "-m", "Judged@10", "-f", "table").stdout
    assert "[1.0000, 1.0000]" not in table and "inf" not in table
    assert (
        "not measurable" in table
        and "dense Judged@10 (ppi++, ppi, human): not measurable: the people's" in table
    )
    # dense and rerank: Judged@10 1 on every people-judged query for both, so their differences are all 0
    compared = cli("compare", MODEL, DENSE, RERANK, "--human", HUMAN, "-m", "Judged@10", "-f", "json")
    assert compared.exit_code == 0, compared.stderr
    (pair,) = json.loads(compared.stdout)["comparison"]["estimation"]["pairs"]
    assert pair["interval"] is None and pair["p_adjusted"] is None and pair["significant"] is False
    assert pair["reason"].startswith("the people's per-query differences are all 0 on the 10 human-judged")
    text = cli("compare", MODEL, DENSE, RERANK, "--human", HUMAN, "-m", "Judged@10", "-f", "table").stdout
    assert "On Judged@10, rerank against dense: not measurable (the people's per-query differences" in text
    # piped, compare writes TSV: with --human its rows are the estimated differences, the reason beside
    lines = cli("compare", MODEL, DENSE, RERANK, "--human", HUMAN, "-m", "Judged@10").stdout.splitlines()
    assert any(line.startswith("# estimated differences (ppi++") for line in lines)
    head, *body = [line.split("\t") for line in lines if not line.startswith("#")]
    (row,) = [dict(zip(head, r, strict=True)) for r in body]
    assert (row["baseline"], row["treatment"], row["estimator"], row["interval_kind"]) == (
        "dense",
        "rerank",
        "ppi++",
        "t",
    )
    assert row["low"] == row["high"] == "" and row["reason"].startswith("the people's per-query differences")


def test_the_same_file_as_model_and_human_warns_that_the_correction_is_empty(cli, tmp_path):
    out = cli("eval", HUMAN, BM25, DENSE, "--human", HUMAN, "-m", "nDCG@10", "-f", "json")
    assert out.exit_code == 0, out.stderr
    assert "are the same file: the correction is empty" in out.stderr
    assert "the correction is empty" in json.loads(out.stdout)["estimation"]["warnings"][0]
    # two files with the same grades on H: the same warning, naming them as two files
    copy = tmp_path / "copy.qrels"
    copy.write_text("".join(line + "\n" for line in sorted(HUMAN.read_text().splitlines(), reverse=True)))
    out = cli("compare", copy, BM25, DENSE, "--human", HUMAN, "-m", "nDCG@10")
    assert out.exit_code == 0, out.stderr
    assert "give the same values on every human-judged query: the correction is empty" in out.stdout
    # the model's own grades: no warning
    out = cli("eval", MODEL, BM25, "--human", HUMAN, "-m", "nDCG@10", "-f", "json")
    assert "correction is empty" not in out.stderr


def test_eval_human_table_names_the_estimator_sizes_and_both_fingerprints(cli):
    out = cli(
        "eval", MODEL, BM25, DENSE, "--human", HUMAN, "-m", "nDCG@10", "--estimator", "ppi", "-f", "table"
    )
    assert out.exit_code == 0, out.stderr
    text = out.stdout
    assert "ppi*" in text and "ppi++" in text and "human" in text and "model" in text
    assert "model qrels: model.qrels sha256:" in text and "human qrels: human.qrels sha256:" in text
    assert "conventions: gain=exponential" in text
    assert "|H|" in text and "|U|" in text and "lambda" in text


def test_people_s_queries_missing_from_the_model_s_are_one_line(cli, tmp_path):
    bad = tmp_path / "people.qrels"
    bad.write_text(HUMAN.read_text() + "q77 0 faq/billing 2\n")
    out = cli("eval", MODEL, BM25, "--human", bad, "-m", "nDCG@10", "-f", "json")
    assert out.exit_code == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert "'q77'" in lines[0] and "people.qrels" in lines[0] and "fix" in lines[0].lower()


def test_a_different_grade_scale_is_one_line(cli, tmp_path):
    binary = tmp_path / "binary.qrels"
    rows = [line.split() for line in HUMAN.read_text().splitlines()]
    binary.write_text("".join(f"{q} 0 {d} {int(int(g) >= 2)}\n" for q, _, d, g in rows))
    out = cli("eval", MODEL, BM25, "--human", binary, "-f", "json")
    assert out.exit_code == 1
    assert len(out.stderr.strip().splitlines()) == 1
    assert "different grade scales" in out.stderr and "binary.qrels" in out.stderr


def test_few_human_queries_warn_that_the_interval_is_unreliable(cli, tmp_path):
    few = tmp_path / "few.qrels"
    few.write_text(
        "".join(
            line + "\n" for line in HUMAN.read_text().splitlines() if line.split()[0] in ("q01", "q02", "q04")
        )
    )
    out = cli("eval", MODEL, BM25, "--human", few, "-m", "nDCG@10", "-f", "json")
    assert out.exit_code == 0, out.stderr
    assert "warning: only 3 human-judged queries" in out.stderr
    one = tmp_path / "one.qrels"
    one.write_text(
        "".join(line + "\n" for line in HUMAN.read_text().splitlines() if line.split()[0] == "q01")
    )
    out = cli("eval", MODEL, BM25, "--human", one, "-f", "json")
    assert out.exit_code == 1 and "1 human-judged query" in out.stderr


def test_compare_human_estimates_each_difference_with_power(cli):
    out = cli("compare", MODEL, BM25, RERANK, "--human", HUMAN, "-m", "nDCG@10", "--power", "-f", "json")
    assert out.exit_code == 0, out.stderr
    est = json.loads(out.stdout)["comparison"]["estimation"]
    assert est["estimator"] == "ppi++" and est["human_qrels"]["fingerprint"]["source"].endswith("human.qrels")
    (pair,) = est["pairs"]
    assert (pair["baseline"], pair["treatment"], pair["human_queries"]) == ("bm25", "rerank", 10)
    model_b, model_t = _per_query(cli, MODEL, BM25), _per_query(cli, MODEL, RERANK)
    human_b, human_t = _per_query(cli, HUMAN, BM25), _per_query(cli, HUMAN, RERANK)
    h = sorted(human_b)
    u = sorted(set(model_b) - set(h))
    y = np.array([human_t[q] - human_b[q] for q in h])
    yhat = np.array([model_t[q] - model_b[q] for q in h])
    yhat_u = np.array([model_t[q] - model_b[q] for q in u])
    assert pair["difference"] == pytest.approx(
        float(ppi.ppi_mean_pointestimate(y, yhat, yhat_u)[0]), abs=1e-10
    )
    assert pair["p_adjusted"] == pytest.approx(pair["p_value"], abs=1e-12)  # one pair: holm leaves it
    assert pair["power"]["human_queries_now"] == 10
    text = cli(
        "compare", MODEL, BM25, RERANK, "--human", HUMAN, "-m", "nDCG@10", "--power", "-f", "table"
    ).stdout
    assert "estimated differences (ppi++" in text and "human qrels: human.qrels" in text
    # the estimates lead; the model's own table follows under its title; the power tables name their grades
    first = text.index("estimated differences (ppi++")
    assert first < text.index("model's grades alone (biased; for contrast):") < text.index("  n   base")
    assert "human-judged queries needed (ppi++ on the model's and the people's grades" in text
    assert "topic-set size (paired t on the model's grades alone" in text
    assert text.index("lambda: how much the model's grades are trusted") > first
    markdown = cli("compare", MODEL, BM25, RERANK, "--human", HUMAN, "-m", "nDCG@10", "-f", "markdown").stdout
    assert markdown.index("**estimated differences (ppi++") < markdown.index("**model's grades alone")


def test_report_human_adds_the_estimates_section(cli, tmp_path):
    page = tmp_path / "report.html"
    out = cli(
        "report", MODEL, BM25, RERANK, "--human", HUMAN, "--estimator", "ppi", "-m", "nDCG@10", "-o", page
    )
    assert out.exit_code == 0, out.stderr
    html = page.read_text()
    assert "Summary: estimated means and differences (ppi)" in html
    assert html.index('<section id="summary"') < html.index('<section id="model-alone"')
    assert "Model&#x27;s grades alone (biased; for contrast)" in html
    assert "human qrels: human.qrels sha256:" in html and "model qrels: model.qrels sha256:" in html


def test_compare_human_gives_each_estimated_difference_its_verdict_beside_the_noise_floor(cli):
    judged = EXAMPLE / "judgments"
    out = cli("compare", MODEL, BM25, RERANK, "--human", HUMAN, "-m", "nDCG@10", "--noise-floor",
              judged / "alice.qrels", judged / "bob.qrels", "--replicates", "50", "-f", "json")  # fmt: skip
    assert out.exit_code == 0, out.stderr
    comparison = json.loads(out.stdout)["comparison"]
    (pair,) = comparison["estimation"]["pairs"]
    (noise,) = comparison["pairs"]
    floor = noise["noise"]["empirical_floor"]
    low, high = noise["noise"]["simulated_range"]
    within = abs(pair["difference"]) <= floor or (low is not None and low <= 0 <= high)
    expected = (
        "not significant"
        if pair["p_adjusted"] >= 0.05
        else "significant but within labeller noise"
        if within
        else "exceeds the noise floor and significant"
    )
    assert pair["verdict"] == expected
