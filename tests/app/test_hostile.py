"""Hostile input to the judging app and its commands: a grade and "unsure" in one POST, a second server
through a symlink or a hard link, read commands on a database others can read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .helpers import ProcessServer, ThreadServer, count_events, free_port, make_project, position_of, sign_in


def test_a_post_with_a_grade_and_unsure_is_refused(tmp_path: Path) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob")
    pos = position_of(db, "alice", "keys/rotate", "q1")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        alice = sign_in(srv.url, db, "alice")
        both = alice.post(f"/label/{pos}", data={"csrf_token": alice.csrf, "grade": "1", "unsure": "1"})
        assert both.status_code == 400
        assert "either graded or marked unsure, not both" in both.text
        assert count_events(db) == 0
        # each alone is taken
        assert alice.post(f"/label/{pos}", data={"csrf_token": alice.csrf, "grade": "1"}).status_code == 303
        assert alice.post(f"/label/{pos}", data={"csrf_token": alice.csrf, "unsure": "1"}).status_code == 303
        assert count_events(db) == 2


def _second_serve(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qrelkit", "judge", "serve", str(path), "--port", str(free_port())],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_second_server_through_a_symlink_or_a_hard_link_is_refused(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    other = tmp_path / "elsewhere"
    other.mkdir()
    symlink, hardlink = other / "via-symlink.db", other / "via-hardlink.db"
    symlink.symlink_to(db)
    os.link(db, hardlink)
    assert os.stat(hardlink).st_ino == os.stat(db).st_ino
    first = ProcessServer(db)
    try:
        first.start()
        for path in (symlink, hardlink):
            second = _second_serve(path)
            assert second.returncode == 1, (path, second.stderr)
            assert second.stdout == ""
            assert "is already being served" in second.stderr, second.stderr
            assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
    finally:
        first.stop()
    # once the first stops, the hard link serves
    again = ProcessServer(hardlink).start()
    again.stop()


def _files(db: Path) -> dict[str, tuple[int, int]]:
    """The database's files (itself, any -wal, -shm): each one's mode and modification time in ns."""
    return {p.name: (p.stat().st_mode & 0o777, p.stat().st_mtime_ns) for p in db.parent.glob(f"{db.name}*")}


def test_read_commands_change_nothing_and_warn_of_a_file_others_can_read(tmp_path: Path, cli) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    os.chmod(db, 0o644)
    before = _files(db)
    assert sorted(before) == ["project.db"]  # no -wal, no -shm once the store closed
    out = tmp_path / "alice.qrels"
    for args in (("status",), ("queue",), ("export", "--labeller", "alice", "-o", out), ("status", "--json")):
        done = cli("judge", args[0], db, *args[1:])
        assert done.exit_code == 0, done.output
        assert (
            f"warning: {db} is mode 0644: others can read the session secret; `chmod 600 {db}`" in done.stderr
        )
        assert _files(db) == before == {"project.db": (0o644, before["project.db"][1])}  # no -shm, no -wal


def test_a_read_command_beside_a_running_server_reads_its_latest_grades(tmp_path: Path, cli) -> None:
    from qrelkit.app.web import create_app

    db = make_project(tmp_path, labellers="alice,bob")
    pos = position_of(db, "alice", "keys/rotate", "q1")
    with ThreadServer(create_app(db, signin_limit=(1000, 60.0))) as srv:
        alice = sign_in(srv.url, db, "alice")
        assert alice.post(f"/label/{pos}", data={"csrf_token": alice.csrf, "grade": "2"}).status_code == 303
        out = tmp_path / "alice.qrels"
        done = cli("judge", "export", db, "--labeller", "alice", "-o", out)
        assert done.exit_code == 0, done.output
        assert "keys/rotate 2" in out.read_text()  # read through the server's log, not the file alone


def _init(cli, tmp: Path, **files: Path):
    from .helpers import FIXTURES

    paths = {"rubric": FIXTURES / "rubric.toml", "pool": FIXTURES / "pool.jsonl", "docs": FIXTURES / "docs.jsonl",
             "queries": FIXTURES / "queries.tsv", **files}  # fmt: skip
    db = tmp / "new.db"
    args = [x for k, v in paths.items() for x in (f"--{k}", v)]
    return db, cli("judge", "init", db, *args, "--labellers", "alice,bob", "--seed", "1")


def test_judge_init_refuses_a_rubric_with_lint_errors_as_revise_does(tmp_path: Path, cli) -> None:
    from .helpers import FIXTURES

    text = (FIXTURES / "rubric.toml").read_text()
    broken = tmp_path / "rubric.toml"
    broken.write_text(
        text.replace('label = "Gives a step the user needs"', 'label = ""')
    )  # R010-empty: an error
    db, done = _init(cli, tmp_path, rubric=broken)
    assert done.exit_code == 1
    assert done.stderr == (
        f"qrelkit: error: {broken}: the rubric has 1 lint error(s), first: the label is empty. "
        f"Fix: fix them (`qrelkit rubric lint {broken}`) before labellers grade with it\n"
    )
    assert not db.exists()


def test_judge_init_names_a_gzip_file_as_gzip(tmp_path: Path, cli) -> None:
    import gzip

    from .helpers import FIXTURES

    for kind, name in (("rubric", "rubric.toml"), ("pool", "pool.jsonl"), ("docs", "docs.jsonl")):
        packed = tmp_path / f"{name}.gz"
        packed.write_bytes(gzip.compress((FIXTURES / name).read_bytes()))
        db, done = _init(cli, tmp_path, **{kind: packed})
        assert done.exit_code == 1, (kind, done.output)
        assert "is gzip-compressed" in done.stderr and f"gunzip {packed}" in done.stderr, (kind, done.stderr)
        assert "UTF-8" not in done.stderr and done.stderr.count("\n") == 1
        assert not db.exists()


def test_a_valid_invite_passes_an_address_locked_out_by_bad_sign_ins(tmp_path: Path) -> None:
    import httpx

    from qrelkit.app.web import create_app

    from .helpers import CSRF_RE, invite

    db = make_project(tmp_path, labellers="alice,bob")
    with ThreadServer(create_app(db, signin_limit=(5, 60.0))) as srv:
        anon = httpx.Client(base_url=srv.url, timeout=30)
        for i in range(5):
            assert anon.get(f"/invite/{'x' * 30}{i}").status_code == 403
        assert anon.get(f"/invite/{'y' * 32}").status_code == 429  # the address is over its limit
        token = invite(db, "alice")
        page = anon.get(f"/invite/{token}")
        assert page.status_code == 200 and "Sign in as" in page.text
        done = anon.post(f"/invite/{token}", data={"csrf_token": CSRF_RE.search(page.text).group(1)})
        assert done.status_code == 303 and done.headers["location"] == "/label"
        assert anon.get("/label", follow_redirects=True).status_code == 200
        assert anon.get(f"/invite/{'z' * 32}").status_code == 429  # bad links are still refused
        assert anon.get(f"/invite/{token}").status_code == 429  # used now: no longer valid
