"""Three labellers on every calibration pair: blind to each other, gated on the group's statistic, and the
same numbers on the admin page, in its API, in the manifest and from `qrelkit agree`."""

from __future__ import annotations

import html as html_lib
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from qrelkit.cli import main
from qrelkit.errors import ValidationError

from .helpers import (
    FIXTURES,
    ThreadServer,
    calibration_pairs,
    grade_pairs,
    make_project,
    position_of,
    sign_in,
)


def _grades(pairs: list[tuple[str, str]], name: str) -> dict[tuple[str, str], int]:
    """alice and bob give the same grades (3, 2, 1, 0, ...); carol is lower on the first two pairs."""
    out = {p: (3 - i % 4) for i, p in enumerate(sorted(pairs))}
    if name == "carol":
        first, second = sorted(pairs)[:2]
        out[first], out[second] = out[first] - 1, out[second] - 2
    return out


def test_three_labellers_grade_every_calibration_pair_blind_and_every_view_gives_the_same_numbers(
    tmp_path: Path,
) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, calibration_labellers=3)
    pairs = calibration_pairs(db)
    assert sorted(pairs) == ["alice", "bob", "carol"] and pairs["alice"] == pairs["bob"] == pairs["carol"]
    assert len(pairs["alice"]) == 8
    with sqlite3.connect(db) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert (meta["gate_statistic"], meta["gate_use"], meta["calibration_labellers"]) == (
        "mean_kappa", "bootstrap_low", "3")  # fmt: skip

    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as server:
        grade_pairs(db, "alice", _grades(pairs["alice"], "alice"))
        grade_pairs(db, "bob", _grades(pairs["bob"], "bob"))
        # blind: carol sees the query, the document and her own (empty) grade, nothing of alice's or bob's
        carol = sign_in(server.url, db, "carol")
        q, d = pairs["carol"][0]
        page = carol.get(f"/label/{position_of(db, 'carol', d, q)}")
        assert page.status_code == 200 and d in page.text
        assert "alice" not in page.text and "bob" not in page.text
        assert carol.get("/api/me/grades").json()["grades"] == []
        admin = sign_in(server.url, db, "admin")
        assert admin.get("/admin/api/kappa").json()["group"] is None  # not before every grade is in
        grade_pairs(db, "carol", _grades(pairs["carol"], "carol"))

        api = admin.get("/admin/api/kappa").json()["group"]
        html = " ".join(admin.get("/admin").text.split())
        manifest = json.loads(
            admin.get("/admin/export/final/manifest", params={"unresolved": "leave-out"}).text
        )
        for name in ("alice", "bob", "carol"):
            (tmp_path / f"{name}.qrels").write_text(admin.get(f"/admin/export/labeller/{name}").text)
        rounds = admin.get("/admin/api/rounds").json()

    assert api["statistic"] == "mean_kappa" and api["labellers"] == ["alice", "bob", "carol"]
    assert api["n_units"] == 8 and api["pairs_matrix"] == [[0, 8, 8], [8, 0, 8], [8, 8, 0]]
    assert api["kappa_matrix"][0][1] == 1.0  # alice and bob agree on every pair
    assert manifest["calibration"]["group"] == api == rounds["rounds"][0]["group"]
    assert (
        manifest["calibration"]["gate"] == api["gate"]
        and manifest["calibration"]["statistic"] == "mean_kappa"
    )
    phase = rounds["phase"]
    assert phase["outcome"] == ("passed" if api["gate"]["passed"] else "failed")
    out = CliRunner().invoke(main, ["agree", *(str(tmp_path / f"{n}.qrels") for n in ("alice", "bob", "carol")),
                                    "--rubric", str(FIXTURES / "rubric.toml"), "--min-kappa", "0.6", "-f", "json"])  # fmt: skip
    assert out.exit_code in (0, 3), out.output
    assert json.loads(out.stdout)["group"] == api
    # the admin page shows the same numbers: every statistic, the matrix and the gate
    for v in api["statistics"].values():
        assert (
            f"{v['value']:.3f}" in html and f"[{v['bootstrap_low']:.3f}, {v['bootstrap_high']:.3f}]" in html
        )
    assert f"{api['kappa_matrix'][0][2]:.3f} (8)" in html and 'id="kappa-matrix"' in html
    assert html_lib.escape(api["gate"]["message"]) in html


def test_a_project_refuses_more_calibration_labellers_than_it_has_and_a_normal_interval_for_alpha(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValidationError, match="each calibration query needs at least two labellers"):
        make_project(tmp_path, calibration_labellers=4)
    with pytest.raises(ValidationError, match="alpha_interval has no normal interval"):
        make_project(tmp_path, calibration_labellers=3, gate_statistic="alpha_interval", gate_use="ci_low")
    assert not (tmp_path / "project.db").exists()
    # two labellers per pair keep the weighted kappa of every two, on the normal interval
    db = make_project(tmp_path)
    with sqlite3.connect(db) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert (meta["gate_statistic"], meta["gate_use"], meta["calibration_labellers"]) == (
        "kappa",
        "ci_low",
        "2",
    )


def test_a_revision_draws_fresh_queries_for_the_same_number_of_labellers(tmp_path: Path) -> None:
    from qrelkit.app.phases import revise
    from qrelkit.app.store import Store

    from .helpers import finish_calibration

    db = make_project(tmp_path, calibration_labellers=3)
    phase = finish_calibration(db, agree=False)  # bob and carol give 3 - alice's grade: the mean kappa fails
    assert phase.state == "paused"
    with Store(db) as store:
        done = revise(store, FIXTURES / "rubric-v2.toml", calibration=1)
    assert done["round"] == 2 and len(done["queries"]) == 1
    pairs = calibration_pairs(db)
    assert sorted(pairs) == ["alice", "bob", "carol"] and pairs["alice"] == pairs["bob"] == pairs["carol"]
    assert {q for q, _ in pairs["alice"]} == set(done["queries"])
