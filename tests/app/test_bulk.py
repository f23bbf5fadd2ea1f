"""Decisions in bulk on a real SQLite project: the queue written as a file to fill, the filled file applied
in one transaction through the one-pair rules (the override rule, the gate, undo, the record), and every
refused line named with its file, line, value and fix."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..conftest import CLI
from .helpers import make_project
from .test_admin_daily import ORDER, disputes, grade

judge = CLI.under("judge")


def decided(db: Path) -> list[tuple[str, str, int, str | None, str | None]]:
    """Every adjudication row, oldest first: pair, grade, who, note (read with SQL, not with qrelkit)."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT p.query_id, p.doc_id, a.grade, u.name, a.note FROM adjudications a JOIN pairs p USING (pair_id) "
            "LEFT JOIN users u ON u.user_id = a.user_id ORDER BY a.event_id"
        ).fetchall()


def test_the_queue_file_filled_in_goes_back_as_decisions(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    disputes(db)
    path = tmp_path / "queue.tsv"
    done = judge("queue", db, "--format", "tsv", "-o", path)
    assert done.exit_code == 0 and f"wrote 5 pairs to {path}" in done.stderr
    lines = path.read_text(encoding="utf-8").splitlines()
    comments = [line for line in lines if line.startswith("#")]
    assert len(comments) == 3 and "--decisions" in comments[2]
    header, *rows = [line.split("\t") for line in lines if not line.startswith("#")]
    assert header[:4] == ["query_id", "doc_id", "grade", "note"] and "grades" in header
    assert [(r[0], r[1]) for r in rows] == ORDER  # the queue's order: unsure first, then the spread
    assert all(r[2] == "" and r[3] == "" for r in rows)
    shown = dict(zip(header, rows[2], strict=True))  # q1 keys/rotate: alice 3, bob 0
    assert shown["grades"] == "alice:3,bob:0" and shown["distance"] == "3" and shown["calibration"] == "yes"
    assert dict(zip(header, rows[0], strict=True))["unsure"] == "alice"

    # fill three of the five (one with a note), leave two empty, write it back with Windows line ends
    fill = {("q1", "keys/rotate"): ("2", "step only"), ("q2", "sdk/retries"): ("1", ""),
            ("q1", "security/advisory-4"): ("0", "")}  # fmt: skip
    out = []
    for line in lines:
        fields = line.split("\t")
        if (fields[0], fields[1] if len(fields) > 1 else "") in fill:
            fields[2], fields[3] = fill[fields[0], fields[1]]
        out.append("\t".join(fields))
    path.write_bytes(("\r\n".join(out) + "\r\n").encode())
    applied = judge("decide", db, "--decisions", path, "--by", "admin")
    assert applied.exit_code == 0, applied.output
    assert applied.stdout == (
        f"{path}: applied 3 decision(s) (decisions 1 to 3; `qrelkit judge undo DB N` undoes one), refused 0, "
        "left undecided 2\n"
    )
    # in the file's order, each its own decision, recorded as the one-pair command records it
    assert decided(db) == [("q1", "security/advisory-4", 0, "admin", None), ("q1", "keys/rotate", 2, "admin", "step only"),
                           ("q2", "sdk/retries", 1, "admin", None)]  # fmt: skip
    left = judge("queue", db, "--json")
    assert left.exit_code == 0 and '"limits/rate"' in left.stdout and '"keys/rotate"' not in left.stdout
    assert judge("undo", db, "2", "--by", "admin").exit_code == 0  # one decision of the file, undone alone
    assert '"keys/rotate"' in judge("queue", db, "--json").stdout


def test_a_refused_line_applies_nothing_unless_partial(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    disputes(db)
    path = tmp_path / "decisions.tsv"
    lines = [
        "# decided on Monday",  # 1: a comment
        "q1\tkeys/rotate\t2\tfine",  # 2: good
        "q1\tkeys/policy\t7",  # 3: off the scale 0..3
        "q2\tsdk/timeouts\t1",  # 4: alice and carol agreed on 1: not disputed
        "q2\tnope\t1",  # 5: not in the pool
        "q1\tkeys/rotate\t3",  # 6: the pair of line 2 again
        "q2\tsdk/retries\ttwo",  # 7: not a whole number
        "q2 sdk/retries 2",  # 8: spaces, not tabs
        "",
        "q2\tlimits/rate\t",  # 10: left undecided
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = judge("decide", db, "--decisions", path)
    assert whole.exit_code == 1 and decided(db) == []
    said = whole.stderr.splitlines()
    assert (
        said[-1]
        == f"{path}: nothing applied: 6 line(s) refused; fix them, or pass --partial to apply the others"
    )
    refused = said[:-1]
    assert [line.split(": ", 2)[1] for line in refused] == [f"{path}:{n}" for n in (3, 4, 5, 6, 7, 8)]
    assert "grade 7" in refused[0] or "(got 7)" in refused[0]
    assert "not disputed (agreed: alice 1, carol 1)" in refused[1] and "--allow-override" in refused[1]
    assert "pair (q2, nope) is not in this project's pool" in refused[2]
    assert "decided on line 2 already" in refused[3]
    assert "not a whole number (got 'two')" in refused[4] and "leave it empty" in refused[4]
    assert "1 tab-separated field(s)" in refused[5] and "separate the fields with tabs" in refused[5]
    assert whole.stdout == ""

    some = judge("decide", db, "--decisions", path, "--partial", "--by", "admin")
    assert some.exit_code == 1  # a refused line is an error either way: a script sees it
    assert some.stdout == (
        f"{path}: applied 1 decision(s) (decision 1; `qrelkit judge undo DB N` undoes one), refused 6, "
        "left undecided 1\n"
    )
    assert len(some.stderr.splitlines()) == 6 and decided(db) == [("q1", "keys/rotate", 2, "admin", "fine")]

    # the agreed pair with the override allowed: decided, and counted as an override in the manifest
    path.write_text("q2\tsdk/timeouts\t2\n", encoding="utf-8")
    assert judge("decide", db, "--decisions", path, "--allow-override").exit_code == 0
    final = tmp_path / "final.qrels"
    assert judge("export", db, "--final", "-o", final, "--allow-unresolved", "leave-out").exit_code == 0
    from qrelkit.judgments.manifest import read_manifest

    counts = read_manifest(final)["adjudication"]
    assert (counts["adjudicated"], counts["overridden"]) == (1, 1)
    assert "q2 0 sdk/timeouts 2" in final.read_text().splitlines()


def test_a_calibration_pair_waits_for_the_gate(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    grade(db, "alice", "q1", "keys/rotate", 3)
    grade(db, "bob", "q1", "keys/rotate", 0)  # disputed, but other calibration pairs are ungraded
    path = tmp_path / "d.tsv"
    path.write_text("query_id\tdoc_id\tgrade\tnote\nq1\tkeys/rotate\t2\t\n", encoding="utf-8")
    done = judge("decide", db, "--decisions", path)
    assert done.exit_code == 1 and decided(db) == []
    assert (
        f"{path}:2: pair (q1, keys/rotate) is a calibration pair of round 1, whose gate is not decided yet"
        in (done.stderr)
    )
    one = judge("decide", db, "q1", "keys/rotate", "2")  # the one-pair command: the same rule
    assert one.exit_code == 1 and "whose gate is not decided yet" in one.stderr
    queue = judge("queue", db, "--format", "tsv")
    assert "\twaits for the gate\t" in queue.stdout


def test_bad_decisions_files_are_one_line_each(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    folder = tmp_path / "folder"
    folder.mkdir()
    missing = judge("decide", db, "--decisions", tmp_path / "none.tsv")
    assert missing.exit_code == 1 and "none.tsv" in missing.stderr and len(missing.stderr.splitlines()) == 1
    latin = tmp_path / "latin.tsv"
    latin.write_bytes(b"q1\tkeys/rotate\t2\n" + "q1\tkeys/policy\t1\tcaf\xe9\n".encode("latin-1"))
    bad = judge("decide", db, "--decisions", latin)
    assert (
        bad.exit_code == 1
        and f"{latin}:2: is not UTF-8 text" in bad.stderr
        and "save the file as UTF-8" in bad.stderr
    )
    huge = tmp_path / "huge.tsv"
    with huge.open("wb") as handle:  # sparse: refused on its stored size, before a byte is read
        handle.truncate(256 * 1024 * 1024 + 1)
    big = judge("decide", db, "--decisions", huge)
    assert big.exit_code == 1 and "bound of 256 MiB" in big.stderr and len(big.stderr.splitlines()) == 1
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    piped = judge("decide", db, "--decisions", fifo)
    assert piped.exit_code == 1 and "FIFO" in piped.stderr
    for args in ((), ("q1", "keys/rotate"), ("q1", "keys/rotate", "2", "--decisions", latin), ("--partial",)):
        usage = judge("decide", db, *args)
        assert usage.exit_code == 2 and "--decisions FILE" in usage.stderr, args
    assert decided(db) == []


def test_a_file_of_garbage_stays_bounded_and_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    disputes(db)
    garbage = tmp_path / "garbage.tsv"
    garbage.write_text("".join(f"q1\tkeys/rotate{i}\tx\n" for i in range(150)), encoding="utf-8")
    done = judge("decide", db, "--decisions", garbage)
    said = done.stderr.splitlines()
    assert done.exit_code == 1 and len(said) == 100 + 2  # the first 100 listed, the rest counted
    assert said[100] == "refused: and 50 more line(s) (the first 100 are listed)"
    assert said[101].endswith(
        "nothing applied: 150 line(s) refused; fix them, or pass --partial to apply the others"
    )
    # the fixture pool has 16 pairs: a 17th distinct decision cannot be this project's file
    many = tmp_path / "many.tsv"
    many.write_text("".join(f"q9\tdoc{i}\t1\n" for i in range(17)), encoding="utf-8")
    refused = judge("decide", db, "--decisions", many)
    assert refused.exit_code == 1 and len(refused.stderr.splitlines()) == 1
    assert f"{many}:17: has more decisions than the project has pairs (16)" in refused.stderr
    bom = tmp_path / "bom.tsv"
    bom.write_bytes("\ufeffquery_id\tdoc_id\tgrade\tnote\nq1\tkeys/rotate\t2\t\n".encode())
    applied = judge("decide", db, "--decisions", bom)
    assert applied.exit_code == 0 and "applied 1 decision(s)" in applied.stdout
    assert decided(db) == [("q1", "keys/rotate", 2, None, None)]


def test_nothing_applied_is_said_in_one_line(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    disputes(db)
    queue = tmp_path / "queue.tsv"
    assert judge("queue", db, "--format", "tsv", "-o", queue).exit_code == 0
    as_written = judge("decide", db, "--decisions", queue)  # the queue file, no grade filled in
    assert as_written.exit_code == 0, as_written.output
    assert as_written.stdout == f"{queue}: nothing applied: 5 undecided line(s)\n" and as_written.stderr == ""
    undecided = tmp_path / "undecided.tsv"
    undecided.write_text("q1\tkeys/rotate\t\nq2\tsdk/retries\t\t\n", encoding="utf-8")
    left = judge("decide", db, "--decisions", undecided)
    assert left.exit_code == 0 and left.stdout == f"{undecided}: nothing applied: 2 undecided line(s)\n"
    comment = tmp_path / "comment.tsv"
    comment.write_text("# nothing decided yet\n", encoding="utf-8")
    alone = judge("decide", db, "--decisions", comment)
    assert alone.exit_code == 0 and alone.stdout == f"{comment}: nothing applied: 0 undecided line(s)\n"
    refused = tmp_path / "refused.tsv"
    refused.write_text("q1\tkeys/rotate\t7\nq2\tnope\t1\nq2\tsdk/retries\t\n", encoding="utf-8")
    partial = judge("decide", db, "--decisions", refused, "--partial")
    assert partial.exit_code == 1  # a refused line is an error
    assert partial.stdout == f"{refused}: nothing applied: 1 undecided line(s), 2 line(s) refused\n"
    said = partial.stderr.splitlines()
    assert len(said) == 2 and f"{refused}:1:" in said[0] and f"{refused}:2:" in said[1]
    assert "Traceback" not in partial.output and decided(db) == []


def test_the_refused_lines_listed_are_the_first_of_the_file(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    disputes(db)
    path = tmp_path / "decisions.tsv"
    lines = ["q1\tkeys/rotate\t9", "q2\tnope\t1"]  # 1: off the scale, 2: not in the pool (later passes)
    lines += [f"q1\tkeys/rotate{i}\tx" for i in range(101)]  # 3..103: not a whole number (read first)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = judge("decide", db, "--decisions", path)
    said = done.stderr.splitlines()
    assert done.exit_code == 1 and len(said) == 100 + 2
    assert [line.split(": ", 2)[1] for line in said[:100]] == [f"{path}:{n}" for n in range(1, 101)]
    assert "(got 9)" in said[0] and "is not in this project's pool" in said[1]
    assert said[100] == "refused: and 3 more line(s) (the first 100 are listed)"
    assert said[101].endswith(
        "nothing applied: 103 line(s) refused; fix them, or pass --partial to apply the others"
    )


def test_a_grade_is_written_in_ascii_digits(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    disputes(db)
    path = tmp_path / "decisions.tsv"
    lines = [
        "q1\tkeys/rotate\t1_0",  # 1: int() reads 10
        "q1\tkeys/policy\t\u0661",  # 2: ARABIC-INDIC DIGIT ONE, int() reads 1
        "q2\tsdk/retries\t\uff12",  # 3: FULLWIDTH DIGIT TWO, int() reads 2
        "q2\tlimits/rate\t" + "1" * 5000,  # 4: digits past what int() converts
        "q1\tsecurity/advisory-4\t+2",  # 5: a sign is a whole number
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = judge("decide", db, "--decisions", path, "--partial")
    assert done.exit_code == 1 and "Traceback" not in done.output
    said = done.stderr.splitlines()
    assert [line.split(": ", 2)[1] for line in said] == [f"{path}:{n}" for n in (1, 2, 3, 4)]
    assert all("the grade is not a whole number" in line and "ASCII digits" in line for line in said)
    assert "(got '1_0')" in said[0] and "(got '\u0661')" in said[1] and "(got '\uff12')" in said[2]
    assert "(got '111" in said[3] and len(said[3]) < 400  # the value named, cut short
    assert done.stdout.startswith(f"{path}: applied 1 decision(s) (decision 1;")
    assert decided(db) == [("q1", "security/advisory-4", 2, None, None)]


def test_the_pairs_waiting_for_the_gate_are_read_once_a_file(tmp_path: Path) -> None:
    """The calibration round's pairs are read once per file, not once per line: the statements that read
    them (SQLite's own trace of the writer's connection) are as many for four lines as for one."""
    from qrelkit.app.bulk import apply_decisions
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store

    db = make_project(tmp_path, runs=False)
    grade(db, "alice", "q1", "keys/rotate", 3)
    grade(db, "bob", "q1", "keys/rotate", 0)  # the round is not complete: its calibration pairs wait
    pairs = ["keys/rotate", "keys/policy", "security/advisory-4", "changelog/2026"]

    def reads(lines: int) -> tuple[int, list[int]]:
        path = tmp_path / f"d{lines}.tsv"
        path.write_text("".join(f"q1\t{doc}\t2\n" for doc in pairs[:lines]), encoding="utf-8")
        statements: list[str] = []
        with Store(db) as store:
            rubric = load_rubric_from_store(store)
            store.write(lambda conn: conn.set_trace_callback(statements.append))
            done = apply_decisions(store, rubric, path, by=None, partial=True)
            store.write(lambda conn: conn.set_trace_callback(None))
        return sum("round_pairs" in s for s in statements), [e.line or 0 for e in done.refused]

    one, refused_one = reads(1)
    four, refused_four = reads(4)
    assert refused_one == [1] and refused_four == [1, 2, 3, 4] and decided(db) == []
    assert four == one


def test_a_lone_carriage_return_ends_a_line_and_control_characters_are_refused(tmp_path: Path) -> None:
    db = make_project(tmp_path, runs=False)
    disputes(db)
    joined = tmp_path / "joined.tsv"  # two decisions separated by a lone CR (old Mac line ends): two lines
    joined.write_bytes(b"q1\tkeys/rotate\t2\tfirst\rq2\tsdk/retries\t1\tsecond\r")
    applied = judge("decide", db, "--decisions", joined, "--by", "admin")
    assert applied.exit_code == 0, applied.output
    assert "applied 2 decision(s)" in applied.stdout and "refused 0" in applied.stdout
    assert decided(db) == [
        ("q1", "keys/rotate", 2, "admin", "first"),
        ("q2", "sdk/retries", 1, "admin", "second"),
    ]
    control = tmp_path / "control.tsv"  # a BEL and an ESC in notes: refused, naming the line and character
    control.write_bytes(
        b"q1\tkeys/policy\t1\tok\nq1\tsecurity/advisory-4\t0\tbell\x07\nq2\tlimits/rate\t2\t\x1b[31m\n"
    )
    refused = judge("decide", db, "--decisions", control, "--by", "admin")
    said = refused.stderr.splitlines()
    assert refused.exit_code == 1 and len(said) == 3, refused.output
    assert f"{control}:2: holds the control character U+0007 at character 30" in said[0]
    assert f"{control}:3: holds the control character U+001B at character 18" in said[1]
    nul = tmp_path / "nul.tsv"  # a NUL byte: the whole file is refused, naming its line, nothing stored
    nul.write_bytes(b"q1\tkeys/policy\t1\tok\nq1\tsecurity/advisory-4\t0\tnote\x00here\n")
    stopped = judge("decide", db, "--decisions", nul, "--by", "admin")
    assert stopped.exit_code == 1 and len(stopped.stderr.splitlines()) == 1, stopped.output
    assert f"{nul}:2: decisions file holds binary data (a NUL byte at byte offset 49)" in stopped.stderr
    assert len(decided(db)) == 2  # neither file applied anything
