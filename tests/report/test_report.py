"""``qrelkit report``: the numbers it shows (ordered badly versus never retrieved, by hand), the page's
structure (every section, a text alternative behind every chart, nothing fetched), the shared templates of
eval and compare, a real browser at 1280 and 390 px, and a large input under 5 MB."""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from qrelkit import Qrels, Run
from qrelkit.evaluation.diagnose import missing_gain
from qrelkit.measures.conventions import Conventions

from ..app.helpers import ARTIFACTS, chromium_or_skip
from ..conftest import CLI, EXAMPLE

RUNS = sorted((EXAMPLE / "runs").glob("*.run"))
SECTIONS = [
    "bottom-line",
    "summary",
    "forest",
    "per-query",
    "missing",
    "judgments",
    "conventions",
    "explain",
    "provenance",
]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]  # fmt: skip


invoke = CLI


# -- ordered badly versus never retrieved, by hand ---------------------------------------------------------


def test_missing_gain_by_hand() -> None:
    # relevant: a (3), b (2), c (1), d (1); the run ranks x, a, b, c with b and c tied at ranks 3-4, k = 3
    qrels = Qrels.from_dict({"q": {"a": 3, "b": 2, "c": 1, "d": 1, "x": 0}})
    run = Run.from_dict({"q": {"x": 4.0, "a": 3.0, "b": 2.0, "c": 2.0}})
    got = missing_gain(qrels, run, 3)  # exponential gains: a 7, b 3, c 1, d 1; 12 in all
    t = got.totals
    # averaged ties: the block {b, c} holds ranks 3-4, one of its two places is within k: each is in by 1/2
    assert t["gain"] == 12.0
    assert t["gain_found"] == 7.0 + 0.5 * 3 + 0.5 * 1
    assert t["gain_below"] == 0.5 * 3 + 0.5 * 1
    assert t["gain_never"] == 1.0  # d
    assert (t["found"], t["below"], t["never"]) == (2.0, 1.0, 1.0)
    # without averaging, ties by doc id descending put c (rank 3) before b (rank 4)
    docid = missing_gain(qrels, run, 3, Conventions(ties="docid_desc"))
    assert docid.totals["gain_found"] == 7.0 + 1.0 and docid.totals["gain_below"] == 3.0


def test_missing_gain_matches_explain_on_every_query() -> None:
    from qrelkit import read_qrels, read_run
    from qrelkit.evaluation.diagnose import explain

    qrels, run = read_qrels(EXAMPLE / "qrels.txt"), read_run(EXAMPLE / "runs" / "rerank.run")
    per_query = missing_gain(qrels, run, 10, Conventions(ties="docid_desc")).per_query
    for row in per_query.iter_rows(named=True):
        e = explain(qrels, run, row["query_id"], "nDCG@10", Conventions(ties="docid_desc"))
        assert row["below"] == len(e.relevant_below_cutoff) and row["never"] == len(
            e.relevant_never_retrieved
        )


# -- the page -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    judgments = EXAMPLE / "judgments"
    result = invoke("report", EXAMPLE / "qrels.txt", *RUNS, "--noise-floor", judgments / "alice.qrels",
                    judgments / "bob.qrels", "-o", out)  # fmt: skip
    assert result.exit_code == 0, result.output
    (out.parent / "stdout.txt").write_text(result.stdout)
    return out


def test_every_section_is_there_and_every_chart_has_a_text_alternative(example_report: Path) -> None:
    page = example_report.read_text()
    for sid in SECTIONS:
        assert f'<section id="{sid}"' in page, sid
    charts = re.findall(r"<svg [^>]*>", page)
    assert len(charts) >= 8
    for tag in charts:
        assert 'role="img"' in tag
        ids = re.search(r'aria-labelledby="([^"]+)"', tag).group(1).split()
        for i in ids:
            assert re.search(rf'id="{i}">[^<]+<', page), i  # a non-empty <title> and <desc>
    assert page.count("Data behind the chart") == len(charts)
    # self-contained: nothing to fetch
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<script" not in page and "@import" not in page
    # the numbers come from the values: the forest plot's data table holds compare's difference
    assert "+0.1560" in page  # rerank minus bm25, nDCG@10 (compare's own test holds the value)
    assert "exceeds the noise floor and significant" in page
    # the bottom line comes first, one sentence per measure (the same sentence compare's table prints)
    assert page.index('<section id="bottom-line"') < page.index('<section id="summary"')
    assert (
        "<li>rerank beats bm25 on nDCG@10 by +0.156 (95% interval [0.084, 0.228], adjusted p 0.0004), more than "
        "the labeller-noise floor (0.077); dense and hybrid are not distinguishable from bm25.</li>"
    ) in page
    # the confusion matrix names its two labellers
    assert "Calibration confusion matrix of alice and bob" in page


def test_eval_and_compare_html_use_the_same_page(tmp_path: Path) -> None:
    evaluated = invoke("eval", EXAMPLE / "qrels.txt", *RUNS, "-f", "html").stdout
    compared = invoke("compare", EXAMPLE / "qrels.txt", *RUNS, "-m", "nDCG@10", "-f", "html").stdout
    for page in (evaluated, compared):
        assert page.startswith("<!doctype html>") and '<section id="summary"' in page
        assert '<section id="provenance"' in page and "Every convention behind the numbers" in page
    assert '<section id="forest"' in compared


def test_report_usage_errors(tmp_path: Path) -> None:
    assert invoke("report", EXAMPLE / "qrels.txt", RUNS[0], "-o", tmp_path / "r.html").exit_code == 2
    assert invoke("report", EXAMPLE / "qrels.txt", *RUNS, "-o", tmp_path / "r.pdf").exit_code == 2
    assert invoke("report", EXAMPLE / "qrels.txt", *RUNS).exit_code == 2


def _browser():  # type: ignore[no-untyped-def]
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    return executable, sync_playwright


def test_the_report_in_a_browser_at_1280_and_390_px(example_report: Path) -> None:
    executable, sync_playwright = _browser()
    profile = tempfile.mkdtemp(prefix="qrelkit-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=executable, headless=True, args=ARGS, device_scale_factor=1
            )
            for width in (1280, 390):
                page = context.new_page()
                page.set_viewport_size({"width": width, "height": 900})
                errors: list[str] = []
                requests: list[str] = []
                page.on(
                    "console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None
                )
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.on("request", lambda r, requests=requests: requests.append(r.url))
                page.goto(example_report.as_uri())
                assert errors == []
                assert [u for u in requests if not u.startswith("file:")] == []
                for sid in SECTIONS:
                    assert page.locator(f"#{sid}-h").is_visible()
                # headings in order: one h1, then h2s, h3s only below an h2
                levels = page.eval_on_selector_all("h1, h2, h3", "els => els.map(e => +e.tagName[1])")
                assert levels[0] == 1 and levels.count(1) == 1
                assert all(b - a <= 1 for a, b in itertools.pairwise(levels))
                # every chart has an accessible name from its title
                names = page.eval_on_selector_all(
                    "svg[role=img]",
                    "els => els.map(e => e.getAttribute('aria-labelledby').split(' ')"
                    ".map(id => document.getElementById(id).textContent).join(' '))",
                )
                assert names and all(n.strip() for n in names)
                # every table fits its box, the charts' data tables (opened) included: no table scrolls
                page.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
                wide = page.eval_on_selector_all(
                    "table",
                    "els => els.map(t => [t.closest('section').id, t.scrollWidth, t.parentElement.clientWidth])"
                    ".filter(([, w, box]) => w > box)",
                )
                assert wide == [], f"tables wider than their box at {width}px: {wide}"
                # nothing wider than the screen but the scrolling boxes, folds open (the provenance's JSON
                # included) and closed
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 1, f"the page scrolls sideways by {overflow}px at {width}px, folds open"
                page.eval_on_selector_all("details", "els => els.forEach(e => e.open = false)")
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 1, f"the page scrolls sideways by {overflow}px at {width}px"
                ARTIFACTS.mkdir(exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"report-{width}.png"), full_page=True)
                page.close()
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def test_four_measures_with_their_bounds_fit_at_1280_and_390_px(tmp_path: Path) -> None:
    """The report of two runs under four measures and ``eval -f html --bounds``: each mean's judgment
    bounds wrap under it, so every table fits its box and the page never scrolls sideways, folds open."""
    measures = [a for m in ("nDCG@10", "AP", "P@5", "RR") for a in ("-m", m)]
    report = tmp_path / "report.html"
    result = invoke("report", EXAMPLE / "qrels.txt", RUNS[0], RUNS[-1], *measures, "--permutations", 200,
                    "-o", report)  # fmt: skip
    assert result.exit_code == 0, result.output
    evaluated = invoke("eval", EXAMPLE / "qrels.txt", RUNS[0], RUNS[-1], *measures, "-f", "html", "--bounds")
    assert evaluated.exit_code == 0, evaluated.output
    (tmp_path / "eval.html").write_text(evaluated.stdout)
    estimate = EXAMPLE / "estimate"  # eval --human's page: the estimates of four measures, no bounds
    estimated = invoke("eval", estimate / "model.qrels", RUNS[0], RUNS[-1], "--human", estimate / "human.qrels",
                       *measures, "-o", tmp_path / "human.html")  # fmt: skip
    assert estimated.exit_code == 0, estimated.output
    executable, sync_playwright = _browser()
    profile = tempfile.mkdtemp(prefix="qrelkit-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=executable, headless=True, args=ARGS, device_scale_factor=1
            )
            for name, width in itertools.product(("report", "eval", "human"), (1280, 390)):
                page = context.new_page()
                page.set_viewport_size({"width": width, "height": 900})
                page.goto((tmp_path / f"{name}.html").as_uri())
                if name == "human":
                    assert page.locator("#summary-h").text_content() == "Estimated means (ppi++)"
                    assert (
                        page.locator("#summary tbody tr").count() == 2 * 4 * 4
                    )  # runs x measures x estimators
                # the bounds, with the mean's four decimals, under the mean
                bounds = page.locator("td .bounds").first
                if name != "human":
                    shown = bounds.text_content() or ""
                    assert re.fullmatch(r" \(unjudged as 0: \d\.\d{4}, as 3: \d\.\d{4}\)", shown), shown
                    mean, under = page.locator("td:has(.bounds)").first.bounding_box(), bounds.bounding_box()
                    assert (
                        mean is not None and under is not None and under["y"] > mean["y"] + 5
                    )  # its own line
                page.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
                wide = page.eval_on_selector_all(
                    "table", "els => els.map(t => [t.scrollWidth, t.parentElement.clientWidth])"
                    ".filter(([w, box]) => w > box)",
                )  # fmt: skip
                assert wide == [], f"{name}: tables wider than their box at {width}px: {wide}"
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 1, f"{name} scrolls sideways by {overflow}px at {width}px, folds open"
                page.close()
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


# -- a large input ----------------------------------------------------------------------------------------


def test_fifty_runs_of_ten_thousand_queries_make_a_page_under_5_mb(tmp_path: Path) -> None:
    import polars as pl

    from qrelkit.formats import qrels_from_frame, run_from_frame
    from qrelkit.report.dossier import build_dossier
    from qrelkit.report.page import report_page

    rng = np.random.default_rng(7)
    nq, depth = 10_000, 10
    qids = np.repeat([f"q{i}" for i in range(nq)], depth)
    docs = np.tile([f"d{j}" for j in range(depth)], nq)
    qrels = qrels_from_frame(
        pl.DataFrame({"query_id": qids, "doc_id": docs, "grade": rng.integers(0, 4, nq * depth)}), name="big"
    )
    runs = [
        run_from_frame(
            pl.DataFrame({"query_id": qids, "doc_id": docs, "score": rng.random(nq * depth)}),
            name=f"r{i:02d}",
        )
        for i in range(50)
    ]
    dossier = build_dossier(qrels, runs, ["nDCG@10"], test="t", bootstrap=100, multi=None)
    page = report_page(dossier)
    size = len(page.encode("utf-8"))
    assert size < 5_000_000, f"{size / 1e6:.2f} MB"
    assert page.count('role="img"') < 30  # per-query charts for the first pairs only, bucketed
    assert "drawn as 400 bars" in page


#: The example's report at 390 px with its long sections folded (measured 15,700 px; 72,700 px before
#: they were folded and the charts scaled to their box).
PHONE_PAGE_HEIGHT = 20_000


def test_the_report_on_a_phone_scales_its_charts_and_folds_its_long_sections(example_report: Path) -> None:
    """At 390 and 1280 px every chart, figure and table shown lies inside the viewport's width (the forest
    plot's positive side, where the winner sits, included), folds closed and then open; at 390 px the page
    with its folds closed is under :data:`PHONE_PAGE_HEIGHT`."""
    executable, sync_playwright = _browser()
    profile = tempfile.mkdtemp(prefix="qrelkit-chromium-")
    outside = (
        "els => els.filter(e => e.getClientRects().length).map(e => { const r = e.getBoundingClientRect();"
        " return [e.tagName, e.closest('section').id, Math.round(r.left), Math.round(r.right)]; })"
        ".filter(([, , l, r]) => l < 0 || r > window.innerWidth)"
    )
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=executable, headless=True, args=ARGS, device_scale_factor=1
            )
            for width in (390, 1280):
                page = context.new_page()
                page.set_viewport_size({"width": width, "height": 900})
                page.goto(example_report.as_uri())
                folds = page.eval_on_selector_all(
                    "details.fold", "els => els.map(e => [e.closest('section').id, e.open])"
                )
                assert folds == [["per-query", False], ["explain", False]]
                assert page.eval_on_selector_all("main svg, main table, main figure", outside) == []
                forest = page.locator("#forest svg").bounding_box()
                assert forest is not None and forest["x"] >= 0 and forest["x"] + forest["width"] <= width
                if width == 390:
                    height = page.evaluate("document.documentElement.scrollHeight")
                    assert height < PHONE_PAGE_HEIGHT, f"the page is {height}px tall at 390px"
                page.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
                assert page.eval_on_selector_all("main svg, main table, main figure", outside) == []
                # the empty explanation says so instead of a table with headers and no rows
                assert page.get_by_text("dense returned nothing for q27").count() == 1
                page.close()
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def test_the_report_command_ends_with_the_bottom_line_and_the_page_to_open(example_report: Path) -> None:
    """`qrelkit report`'s last lines (and so `make demo`'s, whose last step it is) are the answer: the
    bottom line, one sentence per measure (the page's own), then the page to open."""
    lines = (example_report.parent / "stdout.txt").read_text().splitlines()
    assert lines[0] == "bottom line:" and lines[-1] == f"open {example_report}"
    assert lines[1] == (
        "  rerank beats bm25 on nDCG@10 by +0.156 (95% interval [0.084, 0.228], adjusted p 0.0004), more than "
        "the labeller-noise floor (0.077); dense and hybrid are not distinguishable from bm25."
    )
    assert len(lines) == 5 and " on R(rel=1)@100 " in lines[2] and lines[3].startswith("  On Judged@10, ")
    makefile = (Path(__file__).parents[2] / "Makefile").read_text()
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert demo.rstrip().splitlines()[-1].strip().endswith("-o demo-out/report.html")


@pytest.mark.parametrize(
    ("profile", "said"),
    [
        ([], "dense returned nothing for q27: it scores 0, counted in the mean (missing_queries=zero)."),
        (["--profile", "trec_eval"],
         "dense returned nothing for q27: the query is left out of dense's mean (missing_queries=skip)."),
    ],
)  # fmt: skip
def test_a_query_the_run_lacks_is_worded_by_the_convention(profile: list[str], said: str) -> None:
    """The example's dense run has no line for q27: under missing_queries=zero it scores 0 and counts,
    under skip (trec_eval's) it is left out of the mean; explain and the report say the same sentence."""
    shown = invoke(
        "explain", EXAMPLE / "qrels.txt", EXAMPLE / "runs" / "dense.run", "--query", "q27", *profile
    )
    assert shown.exit_code == 0, shown.output
    assert said in shown.stdout.splitlines()
    assert "DCG is 0" not in shown.stdout
