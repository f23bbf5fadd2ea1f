"""Limits on input through the real command line: ids, grades, scales and nesting. Each absurd or hostile
input is one line on stderr naming the file (and line), exit 1 (bad input) or 2 (bad usage): no
traceback, no hang, no number silently changed."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from qrelkit.data.values import Qrels
from qrelkit.errors import InputFormatError
from qrelkit.fingerprint import Fingerprint
from qrelkit.formats import write_qrels

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "docsearch"
RUBRIC = EXAMPLE / "rubric.toml"
FORGED = "x 3\nq9 0 forged"


def cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qrelkit", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The single stderr line of a refused command (asserting the exit code and no traceback)."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pool")
    out = folder / "pool.jsonl"
    runs = sorted((EXAMPLE / "runs").glob("*.run"))
    proc = cli("pool", *runs, "--depth", 2, "--labellers", "alice,bob", "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


def init(tmp_path: Path, *, pool: Path, docs: Path = EXAMPLE / "docs.jsonl", queries: Path | None = None,
         rubric: Path = RUBRIC) -> subprocess.CompletedProcess[str]:  # fmt: skip
    queries = queries or EXAMPLE / "queries.tsv"
    db = tmp_path / "p.db"
    proc = cli("judge", "init", db, "--rubric", rubric, "--pool", pool, "--docs", docs, "--queries", queries)
    if proc.returncode:
        assert not db.exists(), "a refused init leaves no database behind"
    return proc


def replace_first(path: Path, out: Path, **fields: object) -> Path:
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first.update(fields)
    out.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    return out


# -- ids ------------------------------------------------------------------------------------------------


def test_forged_doc_id_in_the_pool_is_refused_with_its_line(tmp_path, pool):
    forged = replace_first(pool, tmp_path / "pool.jsonl", doc_id=FORGED)
    line = one_line_error(init(tmp_path, pool=forged))
    assert line.startswith(f"qrelkit: error: {forged}:1: doc_id holds a space at character 2"), line
    assert "at most 512 bytes" in line


def test_forged_doc_id_in_docs_is_refused_with_its_line(tmp_path, pool):
    docs = tmp_path / "docs.jsonl"
    text = (EXAMPLE / "docs.jsonl").read_text(encoding="utf-8")
    count = len(text.splitlines())
    docs.write_text(text + json.dumps({"doc_id": FORGED, "title": "t", "text": "x"}) + "\n", encoding="utf-8")
    line = one_line_error(init(tmp_path, pool=pool, docs=docs))
    assert line.startswith(f"qrelkit: error: {docs}:{count + 1}: doc_id holds a space"), line


@pytest.mark.parametrize(
    ("doc_id", "what"),
    [
        ("a\tb", "a tab"),
        ("a\u00a0b", "U+00A0"),
        ("a\u2028b", "U+2028"),
        ("a\x7fb", "U+007F"),
        ("d" * 513, "513 bytes long"),
        ("é" * 257, "514 bytes long"),
        ("", "is empty"),
    ],
)
def test_every_bad_id_in_the_pool_is_refused(tmp_path, pool, doc_id, what):
    forged = replace_first(pool, tmp_path / "pool.jsonl", doc_id=doc_id)
    line = one_line_error(init(tmp_path, pool=forged))
    assert f"{forged}:1: doc_id" in line and what in line, line


def test_an_id_of_512_bytes_is_taken(tmp_path, pool):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        (EXAMPLE / "docs.jsonl").read_text(encoding="utf-8")
        + json.dumps({"doc_id": "é" * 256, "text": "x"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    assert init(tmp_path, pool=pool, docs=docs).returncode == 0


def test_bad_query_ids_and_duplicates_in_queries_tsv(tmp_path, pool):
    queries = tmp_path / "queries.tsv"
    queries.write_text("q01\tfirst\nq02\tsecond\nq01\tagain\n", encoding="utf-8")
    line = one_line_error(init(tmp_path, pool=pool, queries=queries))
    assert line.startswith(f"qrelkit: error: {queries}:3: query 'q01' is listed twice"), line
    queries.write_text("q01\tfirst\nq 02\tsecond\n", encoding="utf-8")
    line = one_line_error(init(tmp_path, pool=pool, queries=queries))
    assert line.startswith(f"qrelkit: error: {queries}:2: query_id holds a space"), line


def test_forged_ids_in_jsonl_judgments_and_runs_are_refused(tmp_path):
    qrels, run = tmp_path / "qrels.jsonl", tmp_path / "run.jsonl"
    qrels.write_text(json.dumps({"query_id": "q1", "doc_id": "d1", "grade": 1}) + "\n")
    run.write_text(json.dumps({"query_id": "q1", "doc_id": FORGED, "score": 1.0}) + "\n")
    line = one_line_error(cli("eval", qrels, run))
    assert line.startswith(f"qrelkit: error: {run}:1: doc_id holds a space"), line
    run.write_text(json.dumps({"query_id": "q1", "doc_id": "d" * 100_000, "score": 1.0}) + "\n")
    line = one_line_error(cli("eval", qrels, run))  # no matrix of rows x longest id on any path
    assert line.startswith(f"qrelkit: error: {run}:1: doc_id is 100000 bytes long, more than the 512"), line
    run.write_text(json.dumps({"query_id": "q1", "doc_id": "d1", "score": 1.0}) + "\n")
    qrels.write_text(json.dumps({"query_id": "q1", "doc_id": "d1", "grade": 1}) + "\n" + json.dumps(
        {"query_id": "q1\nq9", "doc_id": "d2", "grade": 1}) + "\n")  # fmt: skip
    line = one_line_error(cli("agree", qrels, qrels))
    assert line.startswith(f"qrelkit: error: {qrels}:2: query_id holds a line end"), line


def test_the_qrels_writer_refuses_an_id_that_would_split_a_line(tmp_path):
    """Every qrels file qrelkit writes (eval's inputs, adjudicate, the app's exports) goes through
    formats.qrels_text: a value built around the readers still cannot write a forged line."""
    frame = pl.DataFrame(
        {"query_id": ["q1", "q1"], "doc_id": ["d1", FORGED], "grade": [1, 3], "line": [1, 2]},
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64, "line": pl.Int64},
    )
    qrels = Qrels(frame, Fingerprint("0" * 64, "frame", "test"), "forged", None, None, {})
    out = tmp_path / "out.qrels"
    with pytest.raises(InputFormatError, match="doc_id holds a space"):
        write_qrels(qrels, out)
    assert not out.exists()


def test_a_forged_id_in_an_existing_project_is_not_exported(tmp_path, pool):
    """A database filled before ids were checked (or edited by hand) cannot export a forged qrels line."""
    import sqlite3

    from .app.helpers import calibration_pairs, grade_pairs

    assert init(tmp_path, pool=pool).returncode == 0
    db = tmp_path / "p.db"
    query, doc = calibration_pairs(db)["alice"][0]
    grade_pairs(db, "alice", {(query, doc): 3})
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE docs SET doc_id = ? WHERE doc_id = ?", (FORGED, doc))
        conn.execute("UPDATE pairs SET doc_id = ? WHERE doc_id = ?", (FORGED, doc))
    out = tmp_path / "alice.qrels"
    line = one_line_error(cli("judge", "export", db, "--labeller", "alice", "-o", out))
    assert "doc_id holds a space" in line, line
    assert not out.exists()


# -- grades ---------------------------------------------------------------------------------------------

RUN = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n"


@pytest.mark.parametrize("suffix", ["", ".gz", ".jsonl"])
def test_a_grade_whose_exponential_gain_overflows_is_an_error(tmp_path, suffix):
    run = tmp_path / "r.run"
    run.write_text(RUN)
    qrels = tmp_path / f"q.qrels{suffix}"
    text = "q1 0 d2 1\nq1 0 d1 1024\n"
    if suffix == ".jsonl":
        text = '{"query_id": "q1", "doc_id": "d2", "grade": 1}\n{"query_id": "q1", "doc_id": "d1", "grade": 1024}\n'
    qrels.write_bytes(gzip.compress(text.encode()) if suffix == ".gz" else text.encode())
    line = one_line_error(cli("eval", qrels, run))
    assert line.startswith(f"qrelkit: error: {qrels}:2: grade 1024 overflows the exponential gain"), line
    assert "grades up to 1000" in line


def test_a_large_grade_under_linear_gain_is_computed(tmp_path):
    run, qrels = tmp_path / "r.run", tmp_path / "q.qrels"
    run.write_text(RUN)
    qrels.write_text("q1 0 d1 1024\nq1 0 d2 1\n")
    proc = cli("eval", qrels, run, "-m", "nDCG(gain=linear)@10", "-f", "tsv")
    assert proc.returncode == 0, proc.stderr
    # ranked in the ideal order: DCG = IDCG = 1024 + 1/log2(3), so nDCG is exactly 1
    assert proc.stdout.strip().splitlines()[-1].split("\t")[-1] == "1.0"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("q.qrels", "q1 0 d1 2\nq1 0 d2 -0\n"),  # the small path
        ("q.tsv.qrels", "q1\t0\td1\t2\nq1\t0\td2\t-0\n"),  # the robust reader
        ("q.qrels.gz", "q1 0 d1 2\nq1 0 d2 -00\n"),  # the streaming readers
        (
            "q.jsonl",
            '{"query_id":"q1","doc_id":"d1","grade":"2"}\n{"query_id":"q1","doc_id":"d2","grade":"-0"}\n',
        ),
    ],
)
def test_negative_zero_is_not_a_grade(tmp_path, name, text):
    run, qrels = tmp_path / "r.run", tmp_path / name
    run.write_text(RUN)
    qrels.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    line = one_line_error(cli("eval", qrels, run))
    assert line.startswith(f"qrelkit: error: {qrels}:2: grade is a negative zero"), line
    line = one_line_error(cli("agree", qrels, qrels))
    assert f"{qrels}:2: grade is a negative zero" in line, line


@pytest.mark.parametrize("grade", ["\u0663", "\uff11", "\u00b2"])
def test_unicode_digits_are_not_grades(tmp_path, grade):
    run, qrels = tmp_path / "r.run", tmp_path / "q.qrels"
    run.write_text(RUN)
    qrels.write_text(f"q1 0 d1 2\nq1 0 d2 {grade}\n", encoding="utf-8")
    line = one_line_error(cli("eval", qrels, run))
    assert line.startswith(f"qrelkit: error: {qrels}:2: grade '{grade}' is not an integer"), line


def rubric_text(scale: str = "", grade: int = 0) -> str:
    return (
        f'[rubric]\nname = "x"\nversion = "1"\ndescription = "d"\n{scale}\n'
        f'[[levels]]\ngrade = {grade}\nlabel = "a"\nquestion = "Does it answer the query?"\n'
    )


def test_a_rubric_scale_is_bounded(tmp_path, pool):
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(rubric_text("scale = [0, 1000000000]"))
    line = one_line_error(cli("rubric", "lint", rubric))
    assert line.startswith(f"{rubric}:5: grade 1000000000 is beyond the bound of a rubric's scale"), line
    assert "grades from -100 to 100" in line
    line = one_line_error(init(tmp_path, pool=pool, rubric=rubric))
    assert f"{rubric}:5: grade 1000000000 is beyond" in line
    rubric.write_text(rubric_text(grade=-101))
    line = one_line_error(cli("rubric", "lint", rubric))
    assert f"{rubric}:7:" in line and "grade -101 is beyond" in line, line


def test_agreement_without_a_rubric_refuses_an_absurd_scale(tmp_path):
    a, b = tmp_path / "a.qrels", tmp_path / "b.qrels"
    a.write_text("q1 0 d1 0\nq1 0 d2 1000000000\n")
    b.write_text("q1 0 d1 1\nq1 0 d2 3\n")
    line = one_line_error(cli("agree", a, b))
    assert line.startswith(f"qrelkit: error: {a}:2: grade 1000000000 is beyond the bound"), line
    assert "--rubric" in line


# -- nesting, surrogates, ranks -------------------------------------------------------------------------


def test_deeply_nested_toml_is_one_line(tmp_path):
    rubric = tmp_path / "deep.toml"
    rubric.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    line = one_line_error(cli("rubric", "lint", rubric))
    assert line.startswith(f"{rubric}: nests TOML arrays or tables too deeply"), line


def test_deeply_nested_json_in_the_pool_is_one_line(tmp_path, pool):
    deep = tmp_path / "pool.jsonl"
    deep.write_text('{"query_id": "q01", "doc_id": "d", "runs": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    line = one_line_error(init(tmp_path, pool=deep))
    assert line.startswith(f"qrelkit: error: {deep}:1: line nests JSON arrays or objects too deeply"), line


def test_a_lone_surrogate_in_docs_is_refused(tmp_path, pool):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        (EXAMPLE / "docs.jsonl").read_text(encoding="utf-8") + '{"doc_id": "z", "text": "a\\ud800b"}\n'
    )
    count = len(docs.read_text(encoding="utf-8").splitlines())
    line = one_line_error(init(tmp_path, pool=pool, docs=docs))
    assert line.startswith(f"qrelkit: error: {docs}:{count}: line holds a lone surrogate"), line


@pytest.mark.parametrize("field", ["best_rank", "runs"])
def test_a_rank_beyond_64_bits_in_the_pool_is_refused(tmp_path, pool, field):
    value = 10**30 if field == "best_rank" else {"bm25": 10**30}
    bad = replace_first(pool, tmp_path / "pool.jsonl", **{field: value})
    line = one_line_error(init(tmp_path, pool=bad))
    assert line.startswith(f"qrelkit: error: {bad}:1:") and "2^63-1" in line and "31 digits" in line, line


# -- files and databases --------------------------------------------------------------------------------


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


@pytest.fixture()
def other_db(tmp_path: Path) -> Path:
    """An SQLite database of another application."""
    import sqlite3

    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("judge", "status"),
        ("judge", "queue"),
        ("judge", "kappa"),
        ("judge", "show", "{db}", "q01", "d1"),
        ("judge", "export", "{db}", "--labeller", "alice", "-o", "{tmp}/a.qrels"),
        ("judge", "export", "{db}", "--final", "-o", "{tmp}/f.qrels"),
        ("judge", "invite", "{db}", "alice"),
        ("judge", "serve", "{db}", "--port", "0"),
        ("compare", "{tmp}/q.qrels", "{tmp}/a.run", "{tmp}/b.run", "--noise-floor", "{db}"),
    ],
)
def test_another_applications_database_is_refused_and_left_unchanged(tmp_path, other_db, args):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 1.0 a\n")
    (tmp_path / "b.run").write_text("q1 Q0 d1 1 1.0 b\n")
    if "{db}" not in args:
        args = (*args, "{db}")
    before = snapshot(other_db)
    proc = cli(*(a.format(db=other_db, tmp=tmp_path) for a in args))
    line = one_line_error(proc)
    assert line == (
        f"qrelkit: error: {other_db}: is not a qrelkit judging project (no qrelkit schema in this SQLite "
        "database). Fix: name the project database that `qrelkit judge init` created"
    ), line
    assert snapshot(other_db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.run", "b.run", "other.sqlite", "q.qrels"]


@pytest.mark.parametrize("command", ["status", "serve"])
def test_random_bytes_are_not_a_database(tmp_path, command):
    db = tmp_path / "random.db"
    db.write_bytes(bytes(range(256)) * 40)
    line = one_line_error(cli("judge", command, db))
    assert line.startswith(f"qrelkit: error: {db}: is not an SQLite database"), line


def test_read_commands_leave_a_project_file_unchanged(tmp_path, pool):
    assert init(tmp_path, pool=pool).returncode == 0
    db = tmp_path / "p.db"
    before = snapshot(db)
    for args in (("status",), ("queue",), ("show", db, "q01", "nope"), ("export", db, "--labeller", "alice",
                 "-o", tmp_path / "a.qrels")):  # fmt: skip
        proc = cli("judge", args[0], *(args[1:] or (db,)))
        assert "Traceback" not in proc.stderr, proc.stderr
    assert (tmp_path / "a.qrels").read_text() == ""  # alice has graded nothing yet
    assert snapshot(db) == before


def test_a_read_only_store_refuses_writes(tmp_path, pool):
    from qrelkit.app.store import Store, StoreError

    assert init(tmp_path, pool=pool).returncode == 0
    with Store(tmp_path / "p.db", read_only=True) as store:
        assert store.read(lambda c: c.execute("SELECT COUNT(*) FROM users").fetchone()[0]) == 3
        with pytest.raises(StoreError, match="opened read-only"):
            store.write(lambda c: c.execute("DELETE FROM invites"))


@pytest.mark.parametrize("where", ["file", "folder"])
def test_serve_refuses_a_read_only_project(tmp_path, pool, where):
    assert init(tmp_path, pool=pool).returncode == 0
    db = tmp_path / "p.db"
    target = db if where == "file" else tmp_path
    mode = target.stat().st_mode
    target.chmod(0o444 if where == "file" else 0o555)
    try:
        line = one_line_error(cli("judge", "serve", db, "--port", 0))
        status = cli("judge", "status", db)
    finally:
        target.chmod(mode)
    assert line.startswith(f"qrelkit: error: {db}: the project database is read-only"), line
    assert status.returncode == 0, status.stderr  # reading it still works


def test_serve_on_a_port_beyond_65535_is_a_usage_error(tmp_path, pool):
    assert init(tmp_path, pool=pool).returncode == 0
    proc = cli("judge", "serve", tmp_path / "p.db", "--port", 99999)
    assert (
        proc.returncode == 2 and "99999 is not in the range" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_output_into_a_missing_folder_is_one_line(tmp_path, pool):
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "r.run").write_text(RUN)
    missing = tmp_path / "missing"
    for args in (
        ("eval", tmp_path / "q.qrels", tmp_path / "r.run", "-o", missing / "out.tsv"),
        ("pool", tmp_path / "r.run", "-o", missing / "pool.jsonl"),
    ):
        line = one_line_error(cli(*args))
        assert f"the folder {str(missing)!r} does not exist" in line, line
    line = one_line_error(init(missing, pool=pool))
    assert line.startswith(f"qrelkit: error: {missing / 'p.db'}: the folder to create"), line
    assert not missing.exists()


# -- gzip -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run whose 150 KB expand to 150 MB (one line, then zeros), and qrels of 150 MB of NUL bytes."""
    folder = tmp_path_factory.mktemp("bombs")
    run, qrels = folder / "bomb.run.gz", folder / "bomb.qrels.gz"
    run.write_bytes(gzip.compress(b"q1 Q0 d1 1 1.0 r\n" + b"0" * (150 << 20), 9))
    qrels.write_bytes(gzip.compress(b"\x00" * (150 << 20), 9))
    assert run.stat().st_size < 200_000 and qrels.stat().st_size < 200_000
    return run, qrels


def test_a_gzip_bomb_is_refused_at_the_expansion_bound(tmp_path, bombs):
    run, qrels = bombs
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    line = one_line_error(cli("eval", tmp_path / "q.qrels", run))
    assert line.startswith(f"qrelkit: error: {run}: gzip data expands to more than 67,108,864 bytes"), line
    assert "at most 100 times the stored size" in line
    line = one_line_error(cli("agree", qrels, qrels))
    assert line.startswith(f"qrelkit: error: {qrels}: gzip data expands to more than"), line


def test_corrupt_gzip_is_one_line_in_every_command(tmp_path, pool):
    good = gzip.compress(RUN.encode())
    bad = tmp_path / "bad.run.gz"
    bad.write_bytes(good[:12] + bytes(b ^ 0xFF for b in good[12:20]) + good[20:])
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    expected = f"qrelkit: error: {bad}: gzip data is corrupt or truncated"
    for args in (
        ("eval", tmp_path / "q.qrels", bad),
        ("agree", bad, tmp_path / "q.qrels"),
        ("pool", bad, "-o", tmp_path / "p.jsonl"),
        ("judge", "init", tmp_path / "p.db", "--rubric", RUBRIC, "--pool", pool, "--docs",
         EXAMPLE / "docs.jsonl", "--queries", EXAMPLE / "queries.tsv", "--runs", bad),
    ):  # fmt: skip
        line = one_line_error(cli(*args))
        assert line.startswith(expected), (args[0], line)


def test_a_gzip_bomb_stops_at_the_memory_limit(tmp_path):
    """Under ``--memory-limit`` a gzip file read whole expands to at most the limit: 4.2 MB of random
    text then 300 MiB of one digit stay under 100 times the stored size (about 280 MB, so the fixed bound alone would
    take them), and stop at a 240 MiB limit (above the smallest limit qrelkit accepts), with the child's peak
    memory near it."""
    import random

    run = tmp_path / "bomb.run.gz"
    noise = "".join(random.Random(0).choices("abcdefghijklmnopqrstuvwxyz0123456789 \n", k=4_200_000))
    run.write_bytes(gzip.compress(noise.encode() + b"0" * (300 << 20), 6))
    assert 2_600_000 < run.stat().st_size < 3_200_000  # 100 times that is more than the 251,658,240 held
    (tmp_path / "q.qrels").write_text("q1 0 d1 1\n")
    # the child's own peak, measured by a parent of its own (this process's children include other tests')
    measure = (
        "import resource, subprocess, sys\n"
        "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(proc.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"  # KiB on Linux
        "sys.exit(proc.returncode)\n"
    )
    # nDCG@10 needs each query's top documents: streamed, until the readers step aside to read it whole
    args = ["eval", tmp_path / "q.qrels", run, "-m", "nDCG@10", "--memory-limit", "240MiB"]
    command = [sys.executable, "-c", measure, sys.executable, "-m", "qrelkit", *map(str, args)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    line = one_line_error(proc)
    assert line.startswith(f"qrelkit: error: {run}: gzip data expands to more than 251,658,240 bytes"), line
    assert "the memory limit of 251,658,240 bytes" in line and "raise --memory-limit" in line, line
    assert "decompress the file first" in line, line
    peak = int(proc.stdout.split()[-1]) * 1024
    assert peak < 700 * 2**20, peak  # the interpreter and libraries, plus 240 MiB of text: not 300 MiB more
