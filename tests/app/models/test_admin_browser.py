"""The admin page's model labellers in a real browser (Playwright driving Debian's chromium, headless, at
1280 px): the model is listed beside the people with its kappa and leniency against the adjudicated grades
(equal to scikit-learn's and numpy's on the same grades), its gate, probe rates, cost and failures; its API
key is in no page or response the browser receives; the section fits the window without scrolling sideways.
The model answers through a real HTTP server on the loopback interface speaking the chat completions
protocol. The page passes the axe-core audit of the other pages at 1280 px and 390 px; screenshots go to
``test-artifacts/pages/``.

Without chromium these tests fail when ``CI`` is set and are skipped otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score

from ..helpers import ARTIFACTS, ThreadServer
from ..test_browser import browser, sign_in  # noqa: F401  (the chromium fixture)
from ..test_browser_pages import OVERFLOW_JS, audit
from .helpers import DOCS, ChatServer, person, scripted

KEY = "sk-browser-secret-7731"
CALIBRATION = [(q, d) for q in range(8) for d in range(DOCS)]


def test_the_admin_page_lists_the_model_beside_the_people(
    browser: Any,  # noqa: F811
    gated: Path,
    cli,
    monkeypatch,
) -> None:
    from qrelkit.app.web import create_app

    answer = scripted(3)  # lenient: one grade higher on about one pair in five
    # two failed attempts, each retried: the first reply for (q0, d0) is malformed, for (q1, d2) prose
    script = {(0, 0, 1): "malformed", (1, 2, 1): "prose"}
    monkeypatch.setenv("JUDGE_KEY", KEY)
    with ChatServer(answer, key=KEY, script=script) as srv:
        add = ("judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1",
               "--api-key-env", "JUDGE_KEY")  # fmt: skip
        assert cli(*add).exit_code == 0
        assert cli("judge", "model", "run", gated, "judge").exit_code == 0
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
    # independent values: the people agree on these pairs (no adjudication), the model's grades are scripted
    alice = {k: person("alice", f"q{k[0]}", f"d{k[0]}-{k[1]}") for k in CALIBRATION}
    bob = {k: person("bob", f"q{k[0]}", f"d{k[0]}-{k[1]}") for k in CALIBRATION}
    agreed = [k for k in CALIBRATION if alice[k] == bob[k]]
    ref, mod = [alice[k] for k in agreed], [answer(*k, "") for k in agreed]
    kappa = cohen_kappa_score(ref, mod, weights="linear")
    leniency = float(np.mean(mod) - np.mean(ref))
    people_kappa = cohen_kappa_score([alice[k] for k in CALIBRATION], [bob[k] for k in CALIBRATION],
                                     weights="linear")  # fmt: skip

    bodies: list[str] = []

    def keep(response: Any) -> None:  # every text the browser receives, redirects aside
        if 200 <= response.status < 300:
            bodies.append(response.text())

    with ThreadServer(create_app(gated, signin_limit=(1000, 60.0), admin_refresh=0)) as server:
        page = browser.new_page()
        page.on("response", keep)
        sign_in(page, server.url, gated, "admin")
        page.goto(f"{server.url}/admin")
        page.set_viewport_size({"width": 1280, "height": 820})
        page.locator("#models").scroll_into_view_if_needed()
        ARTIFACTS.joinpath("pages").mkdir(parents=True, exist_ok=True)
        page.locator("#models").screenshot(
            path=str(ARTIFACTS / "pages" / "admin-model-labellers-desktop.png")
        )
        html = page.content()
        overflow = page.evaluate(OVERFLOW_JS)
        wrap = page.evaluate(
            "() => { const w = document.querySelector('#models .table-wrap');"
            " return {scroll: w.scrollWidth, client: w.clientWidth}; }"
        )
        people = [page.inner_text(f"#labeller-{n} td") for n in ("alice", "bob")]
        people_text = page.inner_text("#calibration")
        cells = [c.inner_text() for c in page.locator("#model-judge td").all()]
        headers = [h.inner_text() for h in page.locator("#models th").all()]
        problems = audit(page, "admin-model-labellers")  # axe, overflow and one h1, at 1280 px and 390 px
        order = page.evaluate("() => [...document.querySelectorAll('section.card')].map(s => s.id)")
    # beside the people: their rows and their kappa, then the model's section right after the people's
    assert people == ["alice", "bob"] and f"κ = {people_kappa:.2f}" in people_text
    assert order.index("models") == order.index("labellers") + 1
    assert headers == ["Model labeller", "Graded", "Kappa against the adjudicated grades", "Leniency", "Gate",
                       "Probes", "Cost", "Failures"]  # fmt: skip
    name, graded, kappa_cell, leniency_cell, gate, probes, cost, failures = cells
    assert name == "judge (judge-1, 127.0.0.1)"
    assert graded == "40 / 60 (calibration 40 / 40)"
    assert kappa_cell.startswith(f"{kappa:.3f} [") and leniency_cell.startswith(f"{leniency:.3f} [")
    low, high = (float(x) for x in kappa_cell.split("[")[1].rstrip("]").split(", "))
    assert low <= round(kappa, 3) <= high
    assert gate.startswith("failed") and "full pool closed" in gate
    # the scripted answer depends on the pair alone: no probe moves it, and the reversed order agrees
    assert probes == "stuffing 0.00, injection 0.00, order 1.00"
    # 40 grades, each reply counted by the server as 100 prompt and 10 completion tokens
    assert cost.startswith("40 grades, 4400 tokens, ") and cost.endswith(" s")
    assert failures == "2 attempts, 0 pairs given up"
    # the key is in no page or response the browser received, nor on screen
    assert KEY not in html and all(KEY not in b for b in bodies) and bodies
    # 1280 px: nothing wider than the window, and the model table needs no sideways scrolling in its box
    assert overflow == [] and wrap["scroll"] <= wrap["client"], (overflow, wrap)
    assert problems == []
