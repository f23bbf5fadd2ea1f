"""Where a model labeller shows: the exported manifest records it and which final grades came from it,
`qrelkit eval` prints "judged in part by model NAME (model ID)" with the share, and warns of
self-preference for a run declared (`--run-model RUN=ID`) to be made with the judge's model."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from .helpers import DOCS, ChatServer, person, scripted


def _open_model(cli, db: Path) -> None:
    perfect = scripted(0, flip_every=10**9)
    with ChatServer(perfect) as srv:
        assert (
            cli("judge", "model", "add", db, "judge", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
        assert cli("judge", "model", "run", db, "judge").exit_code == 0
        assert cli("judge", "model", "probe", db, "judge").exit_code == 0
        assert cli("judge", "model", "run", db, "judge").exit_code == 0


def test_a_failed_model_takes_no_part_in_the_final_qrels(gated: Path, cli, tmp_path: Path) -> None:
    with ChatServer(scripted(3)) as srv:
        assert (
            cli(
                "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1"
            ).exit_code
            == 0
        )
        assert cli("judge", "model", "run", gated, "judge").exit_code == 0
    out = tmp_path / "final.qrels"
    result = cli("judge", "export", gated, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())
    (entry,) = manifest["model_labellers"]
    assert entry["gate"] == "failed" and entry["counted_in_final"] is False
    assert entry["final_grades_with_model_vote"] == 0
    # the final qrels are the people's calibration grades alone: 40 pairs, the disputed ones left out
    assert len(out.read_text().splitlines()) == manifest["adjudication"]["total"]


def test_the_manifest_and_eval_say_the_qrels_were_judged_in_part_by_a_model(
    gated: Path, cli, tmp_path: Path
) -> None:
    _open_model(cli, gated)
    out = tmp_path / "final.qrels"
    result = cli("judge", "export", gated, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())
    (entry,) = manifest["model_labellers"]
    with sqlite3.connect(gated) as conn:
        template_hash = conn.execute("SELECT template_hash FROM model_labellers").fetchone()[0]
    assert entry["model_id"] == "judge-1" and entry["endpoint_host"] == "127.0.0.1"
    assert entry["prompt_hash"] == template_hash and entry["temperature"] == 0.0
    assert entry["gate"] == "passed" and entry["probes"]["order"]["consistency"] == 1.0
    total = len(out.read_text().splitlines())
    # the 20 pairs outside calibration were graded by the model alone; it voted on all 40 calibration pairs too
    assert entry["final_grades_from_model_alone"] == 20
    assert entry["final_grades_with_model_vote"] == total
    assert entry["share_alone"] == 20 / total
    run = tmp_path / "llm.run"
    run.write_text(
        "".join(f"q{q} Q0 d{q}-{d} {d + 1} {10 - d} llmrank\n" for q in range(12) for d in range(5))
    )
    evaluated = cli("eval", out, run, "--run-model", "llmrank=judge-1")
    assert evaluated.exit_code == 0, evaluated.output
    text = evaluated.output
    assert (
        f"judged in part by model judge (model judge-1): {100 * 20 / total:.1f}% of the final grades rest on it alone"
        in text
    )
    assert "self-preference: run llmrank was made with model judge-1" in text
    other = cli("eval", out, run, "--run-model", "llmrank=another-model")
    assert "self-preference" not in other.output and "judged in part by model judge" in other.output
    bad = cli("eval", out, run, "--run-model", "llmrank")
    assert bad.exit_code == 2 and "is not RUN=MODEL_ID" in bad.output


def test_the_admin_page_lists_model_labellers_and_never_shows_the_key(gated: Path, cli, monkeypatch) -> None:
    from qrelkit.app.web import create_app

    from ..helpers import ThreadServer, sign_in

    monkeypatch.setenv("JUDGE_KEY", "sk-page-secret-42")
    with ChatServer(scripted(3), key="sk-page-secret-42") as srv:
        add = [
            "judge",
            "model",
            "add",
            gated,
            "judge",
            "--endpoint",
            srv.url,
            "--model",
            "judge-1",
            "--api-key-env",
            "JUDGE_KEY",
        ]
        assert cli(*add).exit_code == 0
        assert cli("judge", "model", "run", gated, "judge").exit_code == 0
    with ThreadServer(create_app(gated, signin_limit=(1000, 60.0))) as server:
        admin = sign_in(server.url, gated, "admin")
        page = admin.get("/admin")
        # a model labeller's grades are refused by the labeller pages: it has no sign-in at all
        refused = cli("judge", "invite", gated, "judge")
    assert page.status_code == 200
    html = page.text
    assert 'id="model-judge"' in html and "judge-1" in html and "127.0.0.1" in html
    assert "failing: non_inferiority, probes" in html and "full pool closed" in html
    assert "sk-page-secret-42" not in html
    assert refused.exit_code == 1


def test_a_closed_model_puts_no_pair_in_the_adjudication_queue(gated: Path, cli) -> None:
    before = cli("judge", "queue", gated, "--json")
    with ChatServer(scripted(3)) as srv:  # a lenient model: it disagrees with the people on many pairs
        assert (
            cli(
                "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1"
            ).exit_code
            == 0
        )
        assert cli("judge", "model", "run", gated, "judge").exit_code == 0
    after = cli("judge", "queue", gated, "--json")
    assert json.loads(after.stdout) == json.loads(before.stdout)
    assert (
        cli(
            "judge", "model", "override", gated, "judge", "--reason", "measured elsewhere", "--by", "ann"
        ).exit_code
        == 0
    )
    # opened, it counts: yet its grades on pairs alice and bob graded alike are its own disagreements, not
    # disputes, and every pair it has graded is a calibration pair both people graded
    opened = json.loads(cli("judge", "queue", gated, "--json").stdout)
    pairs = [(i["query_id"], i["doc_id"]) for i in json.loads(before.stdout)["items"]]
    assert [(i["query_id"], i["doc_id"]) for i in opened["items"]] == pairs  # the people's disputes, no more
    answer = scripted(3)
    agreed = [(q, d) for q in range(8) for d in range(DOCS) if person("alice", f"q{q}", f"d{q}-{d}")
              == person("bob", f"q{q}", f"d{q}-{d}")]  # fmt: skip
    differ = sum(answer(q, d, "") != person("alice", f"q{q}", f"d{q}-{d}") for q, d in agreed)
    assert differ > 0
    status = json.loads(cli("judge", "model", "status", gated, "judge", "--format", "json").stdout)
    assert status["agreed_disagreements"] == {"pairs": len(agreed), "disagreements": differ,
                                              "rate": differ / len(agreed)}  # fmt: skip
    shown = cli("judge", "model", "status", gated, "judge").stdout
    assert (
        f"pairs people agreed on: the model graded {len(agreed)}, and graded {differ} of them otherwise"
        in shown
    )


def _two_runs(tmp_path: Path) -> tuple[Path, Path]:
    llm, bm25 = tmp_path / "llm.run", tmp_path / "bm25.run"
    llm.write_text(
        "".join(f"q{q} Q0 d{q}-{d} {d + 1} {10 - d} llmrank\n" for q in range(12) for d in range(5))
    )
    bm25.write_text("".join(f"q{q} Q0 d{q}-{d} {5 - d} {d + 1} bm25\n" for q in range(12) for d in range(5)))
    return llm, bm25


def test_compare_and_report_say_the_qrels_were_judged_in_part_by_a_model(
    gated: Path, cli, tmp_path: Path
) -> None:
    _open_model(cli, gated)
    out = tmp_path / "final.qrels"
    assert (
        cli("judge", "export", gated, "--final", "-o", out, "--allow-unresolved", "leave-out").exit_code == 0
    )
    total = len(out.read_text().splitlines())
    # hand arithmetic: the 20 pairs outside calibration rest on the model alone, it voted on every final grade
    judged = (
        f"judged in part by model judge (model judge-1): {100 * 20 / total:.1f}% of the final grades rest on it "
        "alone, 100.0% include its grade"
    )
    selfish = "self-preference: run llmrank was made with model judge-1, which judged these qrels"
    llm, bm25 = _two_runs(tmp_path)
    declared = ("--run-model", "llmrank=judge-1", "--run-model", "bm25=none")
    for fmt in ("table", "json", "markdown", "latex", "html"):
        result = cli("compare", out, bm25, llm, "-f", fmt, *declared)
        assert result.exit_code == 0, (fmt, result.output)
        assert judged in result.stdout and selfish in result.stdout, fmt
        if fmt != "table":  # the other formats repeat the warnings on stderr too
            assert judged in result.stderr and selfish in result.stderr, fmt
    recorded = json.loads(cli("compare", out, bm25, llm, "-f", "json", *declared).stdout)
    assert recorded["judgments"]["run_models"] == {"llmrank": "judge-1", "bm25": "none"}
    markdown = cli("compare", out, bm25, llm, "-f", "markdown", *declared).stdout
    assert f"**Warning:** {judged}." in markdown  # visible text, not only an HTML comment
    plain = cli("compare", out, bm25, llm)
    assert judged in plain.stdout and "self-preference" not in plain.output
    page_path = tmp_path / "report.html"
    report = cli("report", out, bm25, llm, "-o", page_path, *declared)
    assert report.exit_code == 0, report.output
    assert judged in report.stderr and selfish in report.stderr
    page = page_path.read_text()
    summary = page.index('<section id="summary"')
    # the warnings open the summary, the first section, before the comparison and the forest plot
    for text in (judged, selfish):
        at = page.index(f"<strong>Warning:</strong> {text}")
        assert summary < at < page.index("<table", summary) and at < page.index('<section id="forest"')
    bad = cli("report", out, bm25, llm, "-o", page_path, "--run-model", "llmrank")
    assert bad.exit_code == 2 and "is not RUN=MODEL_ID" in bad.output
