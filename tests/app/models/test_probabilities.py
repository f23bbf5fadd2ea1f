"""Grade probabilities: a model labeller's per-grade probabilities recorded with its grades, and written beside
its exported qrels in ``<qrels>.probabilities.tsv``.

The endpoint is a real HTTP server on the loopback interface (http.server in a thread, started by the tests)
speaking the chat completions protocol with ``logprobs`` (tests/app/models/helpers.py); the command labeller is
a real program started by the client; the project is a real SQLite database. Every expected probability is
worked out by hand below."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest

from qrelkit.app.models.client import AttemptFailed, grade_probabilities, parse_probabilities
from qrelkit.formats.probabilities import read_probabilities

from .helpers import ChatServer, key_of, scripted, truth

SCALE = (0, 1, 2, 3)


def _alternatives(q: int, d: int, grade: int) -> dict[str, float]:
    """The grade token's alternatives: the grade at 1/2, the next grade at 1/4, the one after at 1/8, and a
    token that is not a grade at 1/16."""
    return {f" {grade}": math.log(0.5), f" {(grade + 1) % 4}": math.log(0.25),
            f" {(grade + 2) % 4}": math.log(0.125), ' "': math.log(0.0625)}  # fmt: skip


def _by_hand(grade: int, top: int) -> dict[int, float]:
    """What the alternatives above give with ``top`` of them listed: the grades among the ``top`` most likely
    tokens, each exp(logprob), divided by their sum; a grade not listed gets 0.
    top 4: 1/2, 1/4, 1/8 over 7/8 -> 4/7, 2/7, 1/7, 0; top 2: 1/2, 1/4 over 3/4 -> 2/3, 1/3, 0, 0."""
    shares = {4: (4 / 7, 2 / 7, 1 / 7, 0.0), 3: (4 / 7, 2 / 7, 1 / 7, 0.0), 2: (2 / 3, 1 / 3, 0.0, 0.0)}[top]
    return {(grade + i) % 4: shares[i] for i in range(4)}


def _stored(db: Path, name: str = "judge") -> dict[tuple[str, str], dict[int, float]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT p.query_id, p.doc_id, g.grade, g.probability FROM model_grade_probabilities g "
            "JOIN grade_events e USING (event_id) JOIN users u USING (user_id) JOIN pairs p USING (pair_id) "
            "WHERE u.name = ?",
            (name,),
        ).fetchall()
    out: dict[tuple[str, str], dict[int, float]] = {}
    for q, d, g, p in rows:
        out.setdefault((q, d), {})[g] = p
    return out


def _close(found: dict[int, float], expected: dict[int, float]) -> bool:
    return set(found) == set(expected) and all(found[g] == pytest.approx(expected[g], rel=1e-12, abs=1e-15)
                                               for g in expected)  # fmt: skip


# ---------------------------------------------------------------------------------------------- the arithmetic


def _reply_tokens(top: list[tuple[str, float]], chosen: str = " 2", before: str = '":') -> dict:
    return {"content": [{"token": '{"', "logprob": 0.0}, {"token": "grade", "logprob": 0.0},
                        {"token": before, "logprob": 0.0},
                        {"token": chosen, "logprob": top[0][1], "top_logprobs": [{"token": t, "logprob": lp}
                                                                                 for t, lp in top]},
                        {"token": ', "reason": "x"}', "logprob": 0.0}]}  # fmt: skip


def test_the_grade_token_alternatives_give_each_grade_its_share() -> None:
    # 1/2, 1/4, 1/8 on grades 2, 3, 0, and 1/16 on a token that is no grade: 4/7, 2/7, 1/7 and grade 1 unlisted
    tokens = _reply_tokens([(" 2", math.log(0.5)), (" 3", math.log(0.25)), (" 0", math.log(0.125)),
                            (' "', math.log(0.0625))])  # fmt: skip
    found = grade_probabilities(tokens, SCALE)
    assert found is not None and _close(found, {0: 1 / 7, 1: 0.0, 2: 4 / 7, 3: 2 / 7})


def test_ways_of_writing_a_grade_add_up_and_other_frames_do_not_count() -> None:
    # the chosen token is "2" after '": ' (no space inside it): "2" and "3" count, " 3" is another frame
    tokens = _reply_tokens([("2", math.log(0.6)), ("3", math.log(0.2)), (" 3", math.log(0.1))],
                           chosen="2", before='": ')  # fmt: skip
    found = grade_probabilities(tokens, SCALE)
    assert found is not None and _close(found, {0: 0.0, 1: 0.0, 2: 0.75, 3: 0.25})  # 0.6 / 0.8, 0.2 / 0.8


def test_a_grade_written_over_two_tokens_or_no_logprobs_gives_none() -> None:
    split = {"content": [{"token": '{"grade": -', "logprob": 0.0}, {"token": "1", "logprob": 0.0}]}
    assert grade_probabilities(split, (-1, 0, 1)) is None
    assert grade_probabilities(None, SCALE) is None
    assert grade_probabilities({"content": "no list"}, SCALE) is None
    only_other = _reply_tokens([(" 2", math.log(0.9))])
    only_other["content"][3]["token"] = " 7"  # a grade off the scale, and no listed alternative on it
    only_other["content"][3]["top_logprobs"] = [{"token": " 7", "logprob": 0.0}]
    assert grade_probabilities(only_other, SCALE) is None


def test_a_program_s_probabilities_are_checked_and_normalised() -> None:
    assert parse_probabilities({"2": 0.5, "3": 0.5}, SCALE) == {0: 0.0, 1: 0.0, 2: 0.5, 3: 0.5}
    found = parse_probabilities({"0": 0.2, "1": 0.2, "2": 0.2, "3": 0.4001}, SCALE)  # within 1e-3: normalised
    assert found[3] == pytest.approx(0.4001 / 1.0001, rel=1e-12)
    for bad, problem in (([0.5, 0.5], "not a JSON object"), ({"7": 1.0}, "not a grade of the scale"),
                         ({"x": 1.0}, "not a grade"), ({"1": 1.5}, "not a number from 0 to 1"),
                         ({"1": 0.5}, "sum to 0.5")):  # fmt: skip
        with pytest.raises(AttemptFailed, match=problem):
            parse_probabilities(bad, SCALE)


# ---------------------------------------------------------------------------------------------- an endpoint


def _add(cli, db: Path, url: str, *extra: str):
    return cli("judge", "model", "add", db, "judge", "--endpoint", url, "--model", "judge-1", *extra)


@pytest.mark.parametrize("top", [4, 2])
def test_logprobs_are_asked_and_recorded_with_each_grade(gated: Path, cli, top: int) -> None:
    with ChatServer(scripted(1, flip_every=10**9), logprobs=_alternatives) as srv:
        add = _add(cli, gated, srv.url, "--logprobs", str(top))
        assert add.exit_code == 0, add.output
        assert f"log-probabilities asked (top {top})" in add.stdout
        run = cli("judge", "model", "run", gated, "judge", "--calibration-only")
    assert run.exit_code == 0, run.output
    assert all(b["logprobs"] is True and b["top_logprobs"] == top for b in srv.bodies)
    stored = _stored(gated)
    assert len(stored) == 40  # the 8 calibration queries x 5 documents
    for (q, d), found in stored.items():
        assert _close(found, _by_hand(truth(*key_of(q, d)), top)), (q, d, found)
    status = cli("judge", "model", "status", gated, "judge")
    assert f"grade probabilities: log-probabilities asked (top {top}); 40 of 40 graded pairs carry them" in (
        status.stdout
    )
    as_json = json.loads(cli("judge", "model", "status", gated, "judge", "--format", "json").stdout)
    assert as_json["probabilities"] == {"top_logprobs": top, "graded_with": 40, "refusals": []}


def test_a_labeller_without_the_option_never_asks_for_logprobs(gated: Path, cli) -> None:
    with ChatServer(scripted(1, flip_every=10**9), logprobs=_alternatives) as srv:
        assert _add(cli, gated, srv.url).exit_code == 0
        assert cli("judge", "model", "run", gated, "judge", "--calibration-only").exit_code == 0
    assert srv.bodies and not any("logprobs" in b or "top_logprobs" in b for b in srv.bodies)
    assert _stored(gated) == {}
    assert "grade probabilities" not in cli("judge", "model", "status", gated, "judge").stdout


def test_an_endpoint_refusing_logprobs_still_grades_and_says_so(gated: Path, cli) -> None:
    with ChatServer(scripted(1, flip_every=10**9), refuse_logprobs=True) as srv:
        assert _add(cli, gated, srv.url, "--logprobs", "5", "--max-concurrency", "1").exit_code == 0
        run = cli("judge", "model", "run", gated, "judge", "--calibration-only")
    assert run.exit_code == 0, run.output
    assert "40 pairs graded" in run.stdout
    asked = [bool(b.get("logprobs")) for b in srv.bodies]
    assert asked[:2] == [True, False] and not any(asked[2:]) and len(asked) == 41  # one refused, then without
    assert _stored(gated) == {}
    with sqlite3.connect(gated) as conn:
        refusals = conn.execute("SELECT reason FROM model_logprobs_refusals").fetchall()
        failed = conn.execute("SELECT COUNT(*) FROM model_attempts").fetchone()[0]
    assert refusals == [('400: {"error": {"message": "logprobs is not supported by this server"}}',)]
    assert failed == 0  # the refusal is not a failed attempt
    (line,) = [x for x in cli("judge", "model", "status", gated, "judge").stdout.splitlines()
               if x.startswith("grade probabilities")]  # fmt: skip
    assert "0 of 40 graded pairs carry them" in line
    assert "the endpoint refused log-probabilities (400: " in line and "asked without them since" in line


def test_logprobs_only_go_with_an_endpoint(gated: Path, cli) -> None:
    result = cli("judge", "model", "add", gated, "local", "--command", "python3 x.py", "--logprobs", "3")
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "--logprobs is for an endpoint" in result.stderr


# ---------------------------------------------------------------------------------------------- a program

PROGRAM = textwrap.dedent("""\
    import json, re, sys
    for line in sys.stdin:
        ask = json.loads(line)
        q = int(re.search(r"query number (\\d+)", ask["query"]).group(1))
        d = int(re.search(r"Title \\d+-(\\d+)", ask["document"]).group(1))
        grade = (q + 2 * d) % 4
        shares = {str(grade): 0.7, str((grade + 1) % 4): 0.3}
        if q == 0 and d == 1:
            shares = {str(grade): 0.5}
        print(json.dumps({"pair_id": ask["pair_id"], "grade": grade, "reason": "by rule",
                          "probabilities": shares}), flush=True)
""")


def test_a_program_prints_probabilities_beside_its_grade(gated: Path, cli, tmp_path: Path) -> None:
    program = tmp_path / "judge.py"
    program.write_text(PROGRAM)
    add = cli("judge", "model", "add", gated, "local", "--command", f"{sys.executable} {program}",
              "--max-retries", "0")  # fmt: skip
    assert add.exit_code == 0, add.output
    run = cli("judge", "model", "run", gated, "local", "--calibration-only")
    assert run.exit_code == 0, run.output
    stored = _stored(gated, "local")
    assert len(stored) == 39 and ("q0", "d0-1") not in stored  # its probabilities sum to 0.5: no grade kept
    for (q, d), found in stored.items():
        g = truth(*key_of(q, d))
        assert found == {g: 0.7, (g + 1) % 4: 0.3, (g + 2) % 4: 0.0, (g + 3) % 4: 0.0}
    with sqlite3.connect(gated) as conn:
        (error,) = conn.execute("SELECT error FROM model_attempts").fetchone()
    assert error == "the probabilities sum to 0.5, not 1 (within 0.001)"
    status = cli("judge", "model", "status", gated, "local").stdout
    assert "grade probabilities: printed by the program; 39 of 39 graded pairs carry them" in status


# ---------------------------------------------------------------------------------------------- the side file


def test_a_labeller_export_writes_the_side_file_beside_its_qrels(gated: Path, cli, tmp_path: Path) -> None:
    with ChatServer(scripted(1, flip_every=10**9), logprobs=_alternatives) as srv:
        assert _add(cli, gated, srv.url, "--logprobs", "4").exit_code == 0
        assert cli("judge", "model", "run", gated, "judge", "--calibration-only").exit_code == 0
    out = tmp_path / "judge.qrels"
    result = cli("judge", "export", gated, "--labeller", "judge", "-o", out)
    assert result.exit_code == 0, result.output
    side = tmp_path / "judge.qrels.probabilities.tsv"
    assert side.is_file()
    lines = side.read_text().splitlines()
    assert lines[0].startswith("# qrelkit grade probabilities ") and lines[0].endswith("; grades 0..3")
    assert lines[1] == "query_id\tdoc_id\tp0\tp1\tp2\tp3"
    read = read_probabilities(side, 3)
    qrels = {(q, d) for q, _, d, _ in (x.split() for x in out.read_text().splitlines())}
    assert set(read) == qrels and len(read) == 40
    for (q, d), row in read.items():
        expected = _by_hand(truth(*key_of(q, d)), 4)
        assert row == pytest.approx([expected[g] for g in range(4)], rel=1e-12, abs=1e-15)
    assert read == {k: tuple(v[g] for g in range(4)) for k, v in _stored(gated).items()}  # the stored doubles


def test_the_final_export_writes_the_model_s_side_file_and_names_it(gated: Path, cli, tmp_path: Path) -> None:
    import hashlib

    with ChatServer(scripted(0, flip_every=10**9), logprobs=_alternatives) as srv:
        assert _add(cli, gated, srv.url, "--logprobs", "4").exit_code == 0
        assert cli("judge", "model", "run", gated, "judge").exit_code == 0
        assert cli("judge", "model", "probe", gated, "judge").exit_code == 0
        assert cli("judge", "model", "run", gated, "judge").exit_code == 0
    out = tmp_path / "final.qrels"
    result = cli("judge", "export", gated, "--final", "-o", out, "--allow-unresolved", "leave-out")
    assert result.exit_code == 0, result.output
    side = tmp_path / "final.model.qrels.probabilities.tsv"
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())
    (entry,) = manifest["prediction_powered"]["model_qrels"]
    assert entry["probabilities"] == {"path": side.name, "sha256": hashlib.sha256(side.read_bytes()).hexdigest(),
                                      "pairs": 60, "grades": "0..3"}  # fmt: skip
    read = read_probabilities(side)
    model = {
        (q, d)
        for q, _, d, _ in (x.split() for x in (tmp_path / "final.model.qrels").read_text().splitlines())
    }
    assert set(read) == model and len(model) == 60  # every pair of the pool, each graded with logprobs
    (q, d), row = next(iter(sorted(read.items())))
    expected = _by_hand(truth(*key_of(q, d)), 4)
    assert row == pytest.approx([expected[g] for g in range(4)], rel=1e-12, abs=1e-15)


# ---------------------------------------------------------------------------------------------- older files


def test_a_project_of_schema_9_gains_the_tables_and_keeps_its_labeller(gated: Path, cli) -> None:
    from qrelkit.app.models.register import load_model
    from qrelkit.app.store import SCHEMA_VERSION, Store

    with ChatServer(scripted(1, flip_every=10**9)) as srv:
        assert _add(cli, gated, srv.url).exit_code == 0
        assert cli("judge", "model", "run", gated, "judge", "--calibration-only").exit_code == 0
    with sqlite3.connect(gated) as conn:  # back to schema 9, as the previous qrelkit left it
        conn.executescript(
            "DROP TABLE model_logprobs; DROP TABLE model_logprobs_refusals; DROP TABLE model_grade_probabilities; "
            "DROP TABLE model_answer_probabilities; DROP TABLE design_pairs; DROP TABLE designs; "
            "DELETE FROM schema_migrations WHERE version >= 10; "
            "PRAGMA user_version = 9;"
        )
        before = conn.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0]
    with Store(gated) as store:
        assert store.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION
        model = store.read(lambda c: load_model(c, "judge"))
        assert model.top_logprobs is None
        assert store.read(lambda c: c.execute("SELECT COUNT(*) FROM grade_events").fetchone()[0]) == before
        assert store.integrity_check() == "ok"
    status = cli("judge", "model", "status", gated, "judge")
    assert status.exit_code == 0 and "grade probabilities" not in status.stdout
