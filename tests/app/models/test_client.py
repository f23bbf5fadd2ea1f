"""The chat completions exchange against a real HTTP server on the loopback interface (http.server in a
thread, started by the tests): retries, failed attempts, the request's body, the key, bad endpoints."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from qrelkit.app.models.client import (
    AttemptFailed,
    ChatClient,
    EndpointError,
    ask_with_retries,
    parse_answer,
)

from .helpers import ChatServer, free_port_closed, scripted, truth

SCALE = (0, 1, 2, 3)


def _add(cli, db: Path, url: str, *extra: str):
    return cli("judge", "model", "add", db, "judge", "--endpoint", url, "--model", "judge-1", *extra)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"grade": 2, "reason": ', "not a JSON object"),
        ("I would say 3.", "not a JSON object"),
        ('{"grade": 7, "reason": "x"}', "not on the rubric's scale"),
        ('{"grade": "2", "reason": "x"}', "no integer field"),
        ('{"grade": true, "reason": "x"}', "no integer field"),
        ("[2]", "not an object"),
    ],
)
def test_a_reply_that_is_not_a_grade_on_the_scale_is_a_failed_attempt(content: str, problem: str) -> None:
    with pytest.raises(AttemptFailed, match=problem) as caught:
        parse_answer(content, SCALE)
    assert caught.value.raw == content


def test_each_misbehaviour_is_retried_and_recorded_with_its_raw_text(gated: Path, cli) -> None:
    script = {(0, 0, 1): "429", (0, 1, 1): "500", (0, 2, 1): "malformed", (0, 3, 1): "offscale",
              (0, 4, 1): "prose", (1, 0, 1): "slow"}  # fmt: skip
    # pair (1, 1) fails on every attempt: left ungraded and counted, never guessed
    script.update({(1, 1, n): "prose" for n in range(1, 10)})
    with ChatServer(scripted(1, flip_every=10**9), script=script, slow_seconds=2.5) as srv:
        assert _add(cli, gated, srv.url, "--timeout", "1", "--max-retries", "2").exit_code == 0
        result = cli("judge", "model", "run", gated, "judge", "--calibration-only")
    assert result.exit_code == 0, result.output
    assert "39 pairs graded" in result.stdout and "1 left ungraded" in result.stdout
    with sqlite3.connect(gated) as conn:
        attempts = conn.execute(
            "SELECT pair_key, error, raw, final FROM model_attempts ORDER BY attempt_id"
        ).fetchall()
        grades = dict(conn.execute(
            "SELECT p.query_id || ' ' || p.doc_id, e.grade FROM grade_events e JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE u.role = 'model'").fetchall())  # fmt: skip
    errors = {key: error for key, error, _, _ in attempts}
    assert "429" in errors["q0\td0-0"] and "500" in errors["q0\td0-1"]
    assert "not a JSON object" in errors["q0\td0-2"] and "not on the rubric's scale" in errors["q0\td0-3"]
    assert "not a JSON object" in errors["q0\td0-4"] and "no reply within 1 s" in errors["q1\td1-0"]
    raws = {key: raw for key, _, raw, _ in attempts}
    assert raws["q0\td0-4"] == "I would say this document is highly relevant, maybe a 3."
    assert [final for key, _, _, final in attempts if key == "q1\td1-1"] == [0, 0, 1]  # 1 + --max-retries 2
    assert "q1 d1-1" not in grades
    assert (
        grades["q0 d0-0"] == truth(0, 0)
        and grades["q0 d0-3"] == truth(0, 3)
        and grades["q1 d1-0"] == truth(1, 0)
    )
    assert len(srv.asked) == 40 and srv.asked[1, 1] == 3


def test_retry_after_is_honoured() -> None:
    waits: list[float] = []
    with ChatServer(scripted(1, flip_every=10**9), script={(2, 2, 1): "429", (2, 2, 2): "500"}) as srv:
        client = ChatClient(srv.url, "judge-1", scale=SCALE, timeout=5)
        prompt = "Query: query number 2 about x\n\nDocument:\nTitle 2-2\n"
        reply = ask_with_retries(client, "1", prompt, {}, max_retries=3, on_failure=lambda e, last: None,
                                 sleep=waits.append)  # fmt: skip
    assert reply is not None and reply.grade == truth(2, 2)
    assert reply.prompt_tokens == 100 and reply.completion_tokens == 10
    assert waits == [1.0, 0.5]  # Retry-After: 1, then the growing pause's second step


def test_the_request_asks_for_the_schema_and_is_blind(
    gated: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-secret-123456")
    with ChatServer(scripted(1), key="sk-secret-123456") as srv:
        added = _add(cli, gated, srv.url, "--api-key-env", "JUDGE_KEY", "--temperature", "0", "--seed", "42")
        run = cli("judge", "model", "run", gated, "judge", "--calibration-only")
        status = cli("judge", "model", "status", gated, "judge", "--format", "json")
    assert run.exit_code == 0, run.output
    body = srv.bodies[0]
    assert body["model"] == "judge-1" and body["temperature"] == 0 and body["seed"] == 42
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert schema["properties"]["grade"] == {"type": "integer", "enum": [0, 1, 2, 3]}
    assert schema["required"] == ["grade", "reason"]
    assert {h["Authorization"] for h in srv.headers} == {"Bearer sk-secret-123456"}
    text = json.dumps(srv.bodies)
    # blind: the pool's run name ("sys"), ranks and the people's grades never reach a request
    assert '"sys"' not in text and "best_rank" not in text and "alice" not in text and "bob" not in text
    for b in srv.bodies:
        prompt = b["messages"][-1]["content"]
        assert "rank" not in prompt.lower() and "sys" not in prompt.split()
    # the key: never in the database, the command's output or the status
    raw = b"".join(p.read_bytes() for p in gated.parent.glob("project.db*"))
    assert b"sk-secret-123456" not in raw
    for out in (added, run, status):
        assert "sk-secret-123456" not in out.output
    assert json.loads(status.stdout)["labeller"]["api_key_env"] == "JUDGE_KEY"


def _one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_an_unreachable_endpoint_is_one_line(gated: Path, cli) -> None:
    url = f"http://127.0.0.1:{free_port_closed()}/v1"
    assert _add(cli, gated, url).exit_code == 0
    _one_line_error(
        cli("judge", "model", "run", gated, "judge"),
        "cannot reach the endpoint",
        "Fix: start the model server",
    )


def test_a_wrong_key_is_one_line(gated: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-wrong")
    with ChatServer(scripted(1), key="sk-right") as srv:
        assert _add(cli, gated, srv.url, "--api-key-env", "JUDGE_KEY").exit_code == 0
        result = cli("judge", "model", "run", gated, "judge")
    _one_line_error(result, "refused the key (401)", "set JUDGE_KEY to a valid key")
    assert "sk-wrong" not in result.output


def test_a_missing_key_variable_is_one_line(gated: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with ChatServer(scripted(1)) as srv:
        assert _add(cli, gated, srv.url, "--api-key-env", "NO_SUCH_KEY_VAR").exit_code == 0
        _one_line_error(cli("judge", "model", "run", gated, "judge"), "NO_SUCH_KEY_VAR holds no key")


def test_an_unknown_model_is_one_line(gated: Path, cli) -> None:
    with ChatServer(scripted(1), models=("other-model",)) as srv:
        assert _add(cli, gated, srv.url).exit_code == 0
        result = cli("judge", "model", "run", gated, "judge")
    _one_line_error(result, "404 for model 'judge-1'", "--model")


def test_a_template_with_an_unknown_variable_is_one_line(gated: Path, cli, tmp_path: Path) -> None:
    template = tmp_path / "prompt.j2"
    template.write_text("Query: {{ query }}\nDoc: {{ documnet }}\n")
    result = _add(cli, gated, "http://127.0.0.1:9/v1", "--prompt", template)
    _one_line_error(result, str(template), "unknown variable", "'documnet' is undefined", "query, document")
    with sqlite3.connect(gated) as conn:  # nothing recorded
        assert conn.execute("SELECT COUNT(*) FROM users WHERE role = 'model'").fetchone()[0] == 0
    template.write_text("{% for x in levels %}{{ x.grade }}\n")
    _one_line_error(
        _add(cli, gated, "http://127.0.0.1:9/v1", "--prompt", template), "not a valid Jinja template"
    )


def test_a_key_passed_as_the_variable_name_is_refused_without_echoing_it(gated: Path, cli) -> None:
    result = _add(cli, gated, "http://127.0.0.1:9/v1", "--api-key-env", "sk-live-abc/def")
    _one_line_error(result, "names an environment variable")
    assert "sk-live-abc/def" not in result.output


def test_endpoint_errors_are_endpoint_errors() -> None:
    with pytest.raises(EndpointError, match="cannot reach"):
        ChatClient(f"http://127.0.0.1:{free_port_closed()}/v1", "m", scale=SCALE, timeout=2).ask("1", "x", {})


def test_a_rubric_without_levels_is_one_line(tmp_path: Path, cli) -> None:
    from .helpers import RUBRIC

    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC.split("[[levels]]")[0])
    result = cli("rubric", "lint", rubric)
    _one_line_error(result, str(rubric), "the rubric has no levels", "Fix: add a level for each grade")


def test_a_run_off_a_terminal_reports_one_line_per_tenth(gated: Path, cli) -> None:
    # the endpoint is a real HTTP server on loopback speaking chat completions (tests/app/models/helpers.py)
    with ChatServer(scripted(1)) as srv:
        assert _add(cli, gated, srv.url).exit_code == 0
        run = cli("judge", "model", "run", gated, "judge", "--calibration-only")
    assert run.exit_code == 0, run.output
    assert "\r" not in run.stderr  # no carriage returns: a CI log reads one line per tenth
    lines = [line for line in run.stderr.splitlines() if line.startswith("qrelkit: grading")]
    # the 40 calibration pairs of the gated project, one at a time: 4 pairs per tenth
    assert lines == [
        f"qrelkit: grading calibration pairs: {10 * k}% ({4 * k}/40 pairs)" for k in range(1, 11)
    ]


def test_each_stage_of_a_run_reports_its_own_pairs(gated: Path, cli) -> None:
    """Calibration then the pool: each stage counts its own pairs to its own 100%, never past its total."""
    # the endpoint is a real HTTP server on loopback speaking chat completions (tests/app/models/helpers.py)
    with ChatServer(scripted(1)) as srv:
        # a predictor has no gate to pass: it grades the calibration pairs, then the rest of the pool
        assert _add(cli, gated, srv.url, "--role", "predictor").exit_code == 0
        run = cli("judge", "model", "run", gated, "judge")
    assert run.exit_code == 0, run.output
    graded = int(run.stdout.split(": ", 1)[1].split()[0])  # "model labeller judge: N pairs graded ..."
    lines = [line for line in run.stderr.splitlines() if line.startswith("qrelkit: grading")]
    calibration = [line for line in lines if line.startswith("qrelkit: grading calibration pairs: ")]
    pool = [line for line in lines if line.startswith("qrelkit: grading pool pairs: ")]
    assert lines == calibration + pool
    assert calibration[-1] == "qrelkit: grading calibration pairs: 100% (40/40 pairs)"
    assert pool, run.stderr
    last = pool[-1].rsplit("(", 1)[1]
    done, total = last.split()[0].split("/")
    assert pool[-1].startswith("qrelkit: grading pool pairs: 100% (") and done == total
    assert int(total) + 40 == graded
