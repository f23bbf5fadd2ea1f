"""Runs of a model labeller: resumable after SIGKILL without paying twice, the answer cache, the budget and
the limit, the --command JSON-lines exchange, the migration of an older project."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from .helpers import ChatServer, scripted, truth


def _grades(db: Path, name: str = "judge") -> list[tuple[str, str, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT p.query_id, p.doc_id, e.grade FROM grade_events e JOIN users u USING (user_id) "
            "JOIN pairs p USING (pair_id) WHERE u.name = ? ORDER BY e.event_id", (name,)).fetchall()  # fmt: skip


def _key(q: str, d: str) -> tuple[int, int]:
    return int(q[1:]), int(d.split("-")[1])


def test_a_killed_run_loses_nothing_acknowledged_and_never_asks_a_graded_pair_again(gated: Path, cli) -> None:
    with ChatServer(scripted(2), delay=0.15) as srv:
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
            "--max-concurrency",
            "2",
        ]
        assert cli(*add).exit_code == 0
        proc = subprocess.Popen([sys.executable, "-m", "qrelkit", "judge", "model", "run", str(gated), "judge",
                                 "--calibration-only"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 60
        while len(_grades(gated)) < 12:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        first = _grades(gated)
        assert 12 <= len(first) < 40
        asked_before = dict(srv.asked)
        result = cli("judge", "model", "run", gated, "judge", "--calibration-only")
    assert result.exit_code == 0, result.output
    after = _grades(gated)
    assert after[: len(first)] == first  # nothing acknowledged was lost
    pairs = [(q, d) for q, d, _ in after]
    assert len(pairs) == len(set(pairs)) == 40  # every calibration pair graded once
    for q, d, _ in first:  # a pair graded before the kill was never asked again
        assert srv.asked[_key(q, d)] == 1
    in_flight = sum(asked_before.values()) - len(first)
    assert 0 <= in_flight <= 2 and sum(srv.asked.values()) == 40 + in_flight


def test_the_same_model_added_again_reuses_the_answers_paid_for(gated: Path, cli) -> None:
    with ChatServer(scripted(2)) as srv:
        for name in ("judge", "judge-b"):
            add = ["judge", "model", "add", gated, name, "--endpoint", srv.url, "--model", "judge-1"]
            assert cli(*add).exit_code == 0
        assert cli("judge", "model", "run", gated, "judge", "--calibration-only").exit_code == 0
        asked = sum(srv.asked.values())
        again = cli("judge", "model", "run", gated, "judge-b", "--calibration-only")
        assert sum(srv.asked.values()) == asked == 40
        add = [
            "judge",
            "model",
            "add",
            gated,
            "judge-hot",
            "--endpoint",
            srv.url,
            "--model",
            "judge-1",
            "--temperature",
            "0.7",
        ]
        assert cli(*add).exit_code == 0
        assert cli("judge", "model", "run", gated, "judge-hot", "--calibration-only").exit_code == 0
        assert sum(srv.asked.values()) == 80  # another temperature is another labeller: asked afresh
    assert "40 pairs graded (0 asked, 40 from the cache)" in again.stdout
    assert sorted(_grades(gated, "judge-b")) == sorted(_grades(gated, "judge"))


def test_budget_and_limit(gated: Path, cli) -> None:
    with ChatServer(scripted(2)) as srv:
        assert (
            cli(
                "judge", "model", "add", gated, "judge", "--endpoint", srv.url, "--model", "judge-1"
            ).exit_code
            == 0
        )
        budget = cli("judge", "model", "run", gated, "judge", "--budget-pairs", "5")
        assert "5 pairs graded" in budget.stdout and "35 left by --budget-pairs" in budget.stdout
        limit = cli("judge", "model", "run", gated, "judge", "--limit", "3")
        assert "3 pairs graded" in limit.stdout
    assert len(_grades(gated)) == 8 and sum(srv.asked.values()) == 8


PROGRAM = textwrap.dedent("""\
    import json, os, re, sys
    with open(sys.argv[1], "a") as f:
        f.write(f"{os.getpid()}\\n")
    for line in sys.stdin:
        ask = json.loads(line)
        q = int(re.search(r"query number (\\d+)", ask["query"]).group(1))
        d = int(re.search(r"Title \\d+-(\\d+)", ask["document"]).group(1))
        assert set(ask) == {"pair_id", "query", "document", "rubric", "prompt"}, sorted(ask)
        assert ask["rubric"]["scale"] == [0, 1, 2, 3]
        grade = (q + 2 * d) % 4
        if q == 0 and d == 1:
            print("not json", flush=True)
            continue
        print(json.dumps({"pair_id": ask["pair_id"], "grade": grade, "reason": "by rule"}), flush=True)
""")


def test_a_command_speaks_json_lines_and_is_started_once(gated: Path, cli, tmp_path: Path) -> None:
    program, starts = tmp_path / "judge.py", tmp_path / "starts.txt"
    program.write_text(PROGRAM)
    command = f"{sys.executable} {program} {starts}"
    add = cli("judge", "model", "add", gated, "local", "--command", command, "--max-retries", "1")
    assert add.exit_code == 0, add.output
    result = cli("judge", "model", "run", gated, "local", "--calibration-only")
    assert result.exit_code == 0, result.output
    grades = _grades(gated, "local")
    assert len(grades) == 39 and all(g == truth(*_key(q, d)) for q, d, g in grades)
    assert len(starts.read_text().split()) == 1
    with sqlite3.connect(gated) as conn:
        errors = conn.execute("SELECT error, raw FROM model_attempts").fetchall()
    assert errors == [("the program's line is not a JSON object", "not json")] * 2


def test_a_command_that_dies_is_one_line(gated: Path, cli, tmp_path: Path) -> None:
    program = tmp_path / "dies.py"
    program.write_text(
        "import sys\nsys.stdin.readline()\nprint('model file missing', file=sys.stderr)\nsys.exit(3)\n"
    )
    assert (
        cli("judge", "model", "add", gated, "local", "--command", f"{sys.executable} {program}").exit_code
        == 0
    )
    result = cli("judge", "model", "run", gated, "local")
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "exited (code 3): model file missing" in result.stderr


def test_an_older_project_migrates_and_keeps_its_rows(tmp_path: Path) -> None:
    from qrelkit.app.store import MIGRATIONS, SCHEMA_VERSION, Store, _split_sql

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for number, name, sql in MIGRATIONS[:4]:
        for statement in _split_sql(sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, '')", (number, name))
    conn.execute("PRAGMA user_version = 4")
    conn.execute(
        "INSERT INTO users (name, role, created_at) VALUES ('ann', 'admin', ''), ('bo', 'labeller', '')"
    )
    conn.close()
    with Store(db) as store:
        assert store.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION
        store.write(
            lambda c: c.execute("INSERT INTO users (name, role, created_at) VALUES ('m', 'model', '')")
        )
        names = store.read(lambda c: c.execute("SELECT name, role FROM users ORDER BY user_id").fetchall())
        assert [tuple(r) for r in names] == [("ann", "admin"), ("bo", "labeller"), ("m", "model")]
        assert store.integrity_check() == "ok"
        try:
            store.write(
                lambda c: c.execute("INSERT INTO users (name, role, created_at) VALUES ('x', 'robot', '')")
            )
        except sqlite3.IntegrityError as exc:
            assert "CHECK" in str(exc)
        else:
            raise AssertionError("the role CHECK was lost")
