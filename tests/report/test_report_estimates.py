"""``qrelkit report --human`` in a real browser: the estimates lead (the summary holds the estimated means
and differences), the model's own tables follow under a title that says so, every estimates table says
what lambda is, an estimate whose values do not vary on the people's sample reads "not measurable" with
its reason, and the interval used is named."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from ..app.helpers import ARTIFACTS, chromium_or_skip
from ..conftest import CLI, EXAMPLE

MODEL = EXAMPLE / "estimate" / "model.qrels"
HUMAN = EXAMPLE / "estimate" / "human.qrels"
RUNS = [EXAMPLE / "runs" / f"{n}.run" for n in ("bm25", "dense", "rerank")]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]  # fmt: skip


@pytest.fixture(scope="module")
def estimated_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CLI("report", MODEL, *RUNS, "--human", HUMAN, "-m", "nDCG@10", "-m", "Judged@10", "-o", out)
    assert result.exit_code == 0, result.output
    return out


def test_the_estimates_lead_the_report_in_a_browser(estimated_report: Path) -> None:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="qrelkit-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=executable, headless=True, args=ARGS, device_scale_factor=1
            )
            page = context.new_page()
            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto(estimated_report.as_uri())
            ids = page.eval_on_selector_all("section", "els => els.map(e => e.id)")
            assert ids[:4] == ["bottom-line", "summary", "model-alone", "forest"], ids
            heading = page.locator("#summary-h").inner_text()
            assert heading == "Summary: estimated means and differences (ppi++)"
            assert (
                page.locator("#model-alone-h").inner_text() == "Model's grades alone (biased; for contrast)"
            )
            assert "model's grades alone (biased; for contrast)" in page.locator("#forest-h").inner_text()
            summary = page.locator("#summary").inner_text()
            assert summary.index("Estimated means") < summary.index("Estimated differences")
            assert "lambda: how much the model's grades are trusted (0 = people only, 1 = fully)" in summary
            assert "95% interval t (small-sample: t quantile with |H| - 1 degrees of freedom" in summary
            # dense's Judged@10 is 1 on every people-judged query: no interval, and why
            rows = page.eval_on_selector_all(
                "#summary table tr", "trs => trs.map(tr => [...tr.cells].map(c => c.innerText.trim()))"
            )
            dense = [r for r in rows if r[:3] == ["dense", "Judged@10", "ppi++*"]]
            assert dense and dense[0][4] == "not measurable"
            assert (
                "dense Judged@10 (ppi++, ppi, human): not measurable: the people's values are all 1"
                in summary
            )
            assert "[1.0000, 1.0000]" not in summary
            # the bottom line speaks of the estimates
            assert "an estimated" in page.locator("#bottom-line").inner_text()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report-estimates-1280.png"), full_page=True)
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
