"""Runs evaluated through DuckDB under a memory cap give the same numbers as in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from qrelkit import _native, evaluate, read_qrels, read_run
from qrelkit.errors import InputFormatError, ValidationError
from qrelkit.formats import external
from qrelkit.formats.external import parse_size

MEASURES = ["nDCG@5", "nDCG", "AP", "R@10", "RR", "Rprec", "P@3", "Judged@5", "NumRet"]


@pytest.fixture
def force_external(monkeypatch):
    from qrelkit.evaluation import plan

    monkeypatch.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # every file counts as too big for memory
    monkeypatch.setattr(external, "BATCH_ROWS", 7)  # many batches, queries split across them


def _files(tmp_path, grouped=True):
    lines = []
    for q in range(1, 9):
        for d in range(12):
            lines.append((f"q{q}", f"d{(d * 5 + q) % 17}", (d * 7 % 5) / 2))
    if not grouped:
        lines = lines[::2] + lines[1::2]
    lines += [("unjudged-q", "x", 1.0)]
    (tmp_path / "run.txt").write_text(
        "".join(f"{q} Q0 {d} {i} {s} sys\n" for i, (q, d, s) in enumerate(lines, 1))
    )
    (tmp_path / "qrels.txt").write_text(
        "".join(f"q{q} 0 d{d} {(q + d) % 4}\n" for q in [*list(range(1, 9)), 42] for d in range(0, 17, 2))
    )
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


@pytest.mark.parametrize("grouped", [True, False])
def test_duckdb_batches_equal_in_memory(tmp_path, force_external, grouped):
    from qrelkit.evaluation.files import evaluate_files

    qrels_path, run_path = _files(tmp_path, grouped)
    expected = evaluate(read_qrels(qrels_path), read_run(run_path), MEASURES)
    got = evaluate_files(qrels_path, [run_path], MEASURES, memory_limit="500MB")
    assert got.runs[0].meta["reader"] == "duckdb"
    assert got.per_query.equals(expected.per_query)
    assert got.runs[0].queries.counts() == expected.runs[0].queries.counts()
    cut = evaluate_files(qrels_path, [run_path], ["nDCG@5", "R@10"], memory_limit="500MB")
    # streaming first when possible: any order, through the native scanner or Arrow's parse
    assert cut.runs[0].meta["reader"] == "fast"
    assert cut.per_query.equals(
        evaluate(read_qrels(qrels_path), read_run(run_path), ["nDCG@5", "R@10"]).per_query
    )


def test_duckdb_errors_name_the_line(tmp_path, force_external):
    from qrelkit.evaluation.files import evaluate_files

    qrels_path, run_path = _files(tmp_path)
    text = run_path.read_text().splitlines()
    text[4] = text[4].replace(" sys", "").rsplit(" ", 1)[0] + " abc sys"
    run_path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputFormatError) as err:
        evaluate_files(qrels_path, [run_path], ["AP"], memory_limit="500MB")
    assert f"{run_path}:5: score 'abc' is not a number" in str(err.value)
    run_path.write_text("q1 Q0 a 1 1 sys\nq1 Q0 a 2 0.5 sys\n")
    with pytest.raises(ValidationError, match="lines 1, 2"):
        evaluate_files(qrels_path, [run_path], ["AP"], memory_limit="500MB")
    got = evaluate_files(qrels_path, [run_path], ["NumRet"], memory_limit="500MB", on_duplicate="first")
    assert got.runs[0].meta["duplicates_removed"] == 1
    run_path.write_text("q1\tQ0\ta\t1\t1\tsys x\n")  # the native scanner takes tabs and a trailing field
    if _native.lib is not None:
        got = evaluate_files(qrels_path, [run_path], ["AP"], memory_limit="500MB")
        assert got.runs[0].meta["reader"] == "duckdb"
        assert got.runs[0].meta["lines_with_trailing_fields_ignored"] == 1
    run_path.write_text("q1\tQ0\ta\t1\t+1\tsys\n")  # a score the scanner leaves to the robust reader
    with pytest.raises(InputFormatError, match="normalise the whitespace"):
        evaluate_files(qrels_path, [run_path], ["AP"], memory_limit="500MB")


@pytest.mark.parametrize(
    ("text", "value"),
    [("2GB", 2 * 10**9), ("512MiB", 512 * 2**20), ("1.5 GiB", int(1.5 * 2**30)), ("800000000", 800_000_000)],
)
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_parse_size_errors():
    with pytest.raises(ValidationError, match="cannot read memory size"):
        parse_size("lots")
    with pytest.raises(ValidationError, match="below 64 MB"):
        parse_size("10MB")


def test_cli_memory_limit_routes_through_duckdb(tmp_path, force_external):
    import json

    from click.testing import CliRunner

    from qrelkit.cli import main

    qrels_path, run_path = _files(tmp_path)
    args = ["eval", str(qrels_path), str(run_path), "-m", "AP", "-m", "nDCG", "-f", "json"]
    capped = CliRunner().invoke(main, [*args, "--memory-limit", "500MB"])
    plain = CliRunner().invoke(main, args)
    assert capped.exit_code == 0 and plain.exit_code == 0, capped.output
    a, b = json.loads(capped.stdout), json.loads(plain.stdout)
    assert a["runs"][0]["reader"] == "duckdb" and b["runs"][0]["reader"] in ("small", "fast", "robust")
    # the written provenance says why a run was sorted on disk
    assert a["runs"][0]["sorted_on_disk"] == "the file would not fit under the memory limit"
    assert b["runs"][0]["sorted_on_disk"] is None
    assert a["results"] == b["results"]


@pytest.mark.parametrize("native", [True, False])
def test_full_depth_on_an_ungrouped_run_is_sorted_on_disk(tmp_path, monkeypatch, native):
    """Without a memory limit, measures that need every document of a run in no particular order: the run
    is sorted by DuckDB rather than held whole, with the numbers of the robust reader, and the provenance
    says why; a grouped run streams. The same with the native scanner off."""
    from qrelkit.evaluation.files import evaluate_files
    from qrelkit.formats.trec import blocks, small

    if native and _native.lib is None:
        pytest.skip("the native scanner is not built")
    if not native:
        monkeypatch.setattr(_native, "lib", None)
    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 100)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 100)
    for grouped in (True, False):
        qrels_path, run_path = _files(tmp_path, grouped)
        expected = evaluate(read_qrels(qrels_path), read_run(run_path, reader="robust"), MEASURES)
        got = evaluate_files(qrels_path, [run_path], MEASURES)
        meta = got.runs[0].meta
        if grouped:
            assert meta["reader"] == "fast" and "sorted_on_disk" not in meta
        else:
            assert meta["reader"] == "duckdb"
            assert (
                meta["sorted_on_disk"]
                == "a measure needs every document and the lines are not grouped by query"
            )
        assert got.per_query.equals(expected.per_query)


@pytest.mark.parametrize("case", ["ungrouped", "stepped_aside", "gzip"])
def test_bytes_read_never_pass_the_files_sizes(tmp_path, monkeypatch, case):
    """The progress reported (``on_bytes``) never passes the runs' sizes, and reaches them: a run read in
    part before it turns out ungrouped and is sorted by DuckDB, a run the native scanner reads in part
    before stepping aside, and gzip text (larger than its file) each read bytes more than once."""
    import gzip

    from qrelkit.evaluation.files import evaluate_files
    from qrelkit.formats.trec import blocks, small

    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 100)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 100)
    qrels_path, run_path = _files(tmp_path, grouped=case != "ungrouped")
    if case == "stepped_aside":  # a score the scanner leaves to Arrow's parse, in the last lines
        run_path.write_text(run_path.read_text().replace(" 1.0 sys\nunjudged", " +1.0 sys\nunjudged"))
    elif case == "gzip":
        gz = tmp_path / "run.txt.gz"
        gz.write_bytes(gzip.compress(run_path.read_bytes()))
        run_path = gz
    size = run_path.stat().st_size
    totals: list[int] = []
    got = evaluate_files(
        qrels_path, [run_path], MEASURES, on_bytes=lambda n: totals.append((totals[-1] if totals else 0) + n)
    )
    assert totals and totals[-1] == size and max(totals) <= size
    if case == "ungrouped" and _native.lib is not None:
        assert got.runs[0].meta["reader"] == "duckdb"


def test_an_ungrouped_run_streams_through_arrow_without_the_scanner(tmp_path, monkeypatch):
    """Cutoff measures on a run in no particular order with the native scanner off: Arrow's parse keeps
    each query's top rows across chunks (never the robust reader), with the same numbers."""
    from qrelkit.evaluation.files import evaluate_files
    from qrelkit.formats.trec import blocks, small

    monkeypatch.setattr(_native, "lib", None)
    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 64)
    qrels_path, run_path = _files(tmp_path, grouped=False)
    got = evaluate_files(qrels_path, [run_path], ["nDCG@3", "R@5"])
    meta = got.runs[0].meta
    assert meta["reader"] == "fast" and meta["merged_across_blocks"] is True and meta["kept_top"] == 5
    expected = evaluate(read_qrels(qrels_path), read_run(run_path, reader="robust"), ["nDCG@3", "R@5"])
    assert got.per_query.equals(expected.per_query)


def test_duckdb_memory_comes_from_what_the_process_leaves(monkeypatch):
    """The limit is the whole process's: what it holds already and what DuckDB holds beyond its own
    limit are taken off, room for one batch of BATCH_ROW_BYTES a row is kept, and DuckDB gets the rest
    (hand arithmetic below)."""
    monkeypatch.setattr(external, "process_bytes", lambda: 300 * 2**20)
    monkeypatch.setattr(external, "BATCH_ROWS", 1 << 20)
    monkeypatch.setattr(external, "BATCH_ROW_BYTES", 400)
    monkeypatch.setattr(external, "DUCKDB_OVERHEAD_BYTES", 160 * 2**20)
    # 660 MiB - 300 MiB - 160 MiB = 200 MiB spare; rows = 100 MiB / 400 B = 262144; DuckDB: 200 - 100 MiB
    assert external.budget(660 * 2**20) == (100 * 2**20, 262144)
    # nothing spare: the smallest batch (16384 rows) and DuckDB's floor of 64 MiB
    assert external.budget(200 * 2**20) == (64 * 2**20, 16384)


def test_process_bytes_is_this_process_resident_memory():
    import resource

    now = external.process_bytes()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert 10 * 2**20 < now <= peak_kib * 1024 * 1.01 + 2**20


def test_without_duckdb_an_ungrouped_run_is_held_whole(tmp_path, monkeypatch):
    """DuckDB is optional (qrelkit[scale]): without it, full-depth measures on a run in no particular order
    hold the run whole (in any order), with the same numbers."""
    from qrelkit.evaluation import files as evaluation
    from qrelkit.evaluation import plan
    from qrelkit.formats.trec import small

    real = plan.find_spec
    monkeypatch.setattr(plan, "find_spec", lambda name: None if name == "duckdb" else real(name))
    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)
    qrels_path, run_path = _files(tmp_path, grouped=False)
    got = evaluation.evaluate_files(qrels_path, [run_path], MEASURES)
    assert got.runs[0].meta["reader"] == "fast" and "sorted_on_disk" not in got.runs[0].meta
    expected = evaluate(read_qrels(qrels_path), read_run(run_path, reader="robust"), MEASURES)
    assert got.per_query.equals(expected.per_query)


@pytest.mark.parametrize("policy", ["first", "last", "max"])
@pytest.mark.parametrize("cutoffs", [True, False])
def test_a_duplicate_policy_is_applied_on_disk_not_by_reading_the_run_whole(
    tmp_path, monkeypatch, policy, cutoffs
):
    """A run too large for the small path with a document given twice and ``on_duplicate`` first, last or
    max: the streaming readers step aside (they keep no row they might drop later), and DuckDB applies the
    policy, with the robust reader's numbers and count of rows removed; the provenance says why. A layout
    the native scanner and DuckDB's reader both refuse is read whole by the robust reader, as before,
    unless a memory limit forbids it."""
    from qrelkit.evaluation.files import evaluate_files
    from qrelkit.formats.trec import blocks, small

    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 100)
    monkeypatch.setattr(blocks, "CHUNK_BYTES", 100)
    measures = ["nDCG@3", "R@5", "P@2"] if cutoffs else MEASURES
    qrels_path, run_path = _files(tmp_path, grouped=False)
    text = run_path.read_text()
    run_path.write_text(text + "q3 Q0 d3 900 9.5 sys\nq1 Q0 d1 901 -3 sys\n")  # q3/d3 and q1/d1 again
    robust = read_run(run_path, reader="robust", on_duplicate=policy)
    assert robust.meta["duplicates_removed"] == 2
    expected = evaluate(read_qrels(qrels_path), robust, measures)
    got = evaluate_files(qrels_path, [run_path], measures, on_duplicate=policy)
    meta = got.runs[0].meta
    assert meta["reader"] == "duckdb" and meta["duplicates_removed"] == 2
    why = "documents given twice are resolved on disk" if cutoffs else "a measure needs every document"
    assert meta["sorted_on_disk"].startswith(why)
    assert got.per_query.equals(expected.per_query)
    # a score written "+1" between tabs: neither way into DuckDB takes it, the robust reader does
    run_path.write_text(
        text.replace(" ", "\t").replace("\t1.0\t", "\t+1.0\t") + "q3\tQ0\td3\t900\t9.5\tsys\n"
    )
    expected = evaluate(
        read_qrels(qrels_path), read_run(run_path, reader="robust", on_duplicate=policy), measures
    )
    got = evaluate_files(qrels_path, [run_path], measures, on_duplicate=policy)
    assert got.runs[0].meta.get("reader", "robust") == "robust"
    assert got.per_query.equals(expected.per_query)
    with monkeypatch.context() as m:
        from qrelkit.evaluation import plan

        m.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # too big for memory
        with pytest.raises(InputFormatError, match="normalise the whitespace"):
            evaluate_files(qrels_path, [run_path], ["AP"], on_duplicate=policy, memory_limit="500MB")


def test_a_layout_duckdb_refuses_is_read_whole_when_the_limit_allows_it(tmp_path, monkeypatch):
    """A duplicate policy sends a run to DuckDB; a layout neither way into DuckDB takes (tabs and a score
    written +1) is then read by the robust reader, as before, when the run fits under the memory limit;
    only a run that would not fit gets the layout error."""
    from qrelkit.evaluation import plan
    from qrelkit.evaluation.files import evaluate_files
    from qrelkit.formats.trec import small

    monkeypatch.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path
    qrels_path, run_path = _files(tmp_path, grouped=False)
    text = run_path.read_text().replace(" ", "\t").replace("\t1.0\t", "\t+1.0\t")
    run_path.write_text(text + "q3\tQ0\td3\t900\t9.5\tsys\n")
    robust = read_run(run_path, reader="robust", on_duplicate="max")
    expected = evaluate(read_qrels(qrels_path), robust, MEASURES)
    got = evaluate_files(qrels_path, [run_path], MEASURES, on_duplicate="max", memory_limit="8GB")
    assert got.runs[0].meta.get("reader", "robust") == "robust"
    assert got.per_query.equals(expected.per_query)
    monkeypatch.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # now it would not fit
    with pytest.raises(InputFormatError, match="normalise the whitespace"):
        evaluate_files(qrels_path, [run_path], MEASURES, on_duplicate="max", memory_limit="8GB")


def test_blank_blocks_and_a_whitespace_tail_reach_duckdb_through_the_scanner(tmp_path, monkeypatch):
    """A block of blank or comment lines has no tag, so it never counts as a second one: a tab-separated
    run ending in whitespace, cut in blocks of a line or two, is taken by the scanner's way into DuckDB."""
    from qrelkit.formats.trec import blocks

    if _native.lib is None:
        pytest.skip("the native scanner is not built")
    monkeypatch.setattr(blocks, "NATIVE_BLOCK_BYTES", 24)
    _, run_path = _files(tmp_path)
    text = run_path.read_text().replace(" ", "\t")
    run_path.write_text(text.replace("\n", "\n\n \n", 3) + " \r\n \t")
    batches, _, name, meta = external.run_batches(run_path, memory_limit=2**28)
    rows = sum(batch.frame.height for batch in batches)
    assert name == "sys" and rows == text.count("\n") and meta["reader"] == "duckdb"


def test_no_duckdb_directory_is_left_behind_on_an_error(tmp_path):
    import gc
    import glob
    import tempfile

    run_path = tmp_path / "run.txt"
    run_path.write_bytes(b"1 Q0 d1 1 1.0 t\n1 Q0 d\xff 2 0.5 t\n")  # not UTF-8
    pattern = str(Path(tempfile.gettempdir()) / "qrelkit-duckdb-*")
    before = set(glob.glob(pattern))
    with pytest.raises(InputFormatError, match="not valid UTF-8"):
        external.run_batches(run_path, memory_limit=2**28)
    gc.collect()
    assert set(glob.glob(pattern)) == before


@pytest.mark.skipif(_native.lib is None, reason="the native scanner is not built")
def test_scores_written_dot_five_five_dot_and_minus_zero_between_runs_of_spaces(tmp_path, force_external):
    """`.5`, `5.` and `-0.0` with two spaces between fields: the scanner reads them as the robust reader
    does, so the DuckDB path takes the file and gives the in-memory numbers. By hand for query q: d1 (.5,
    grade 1) ranks second behind d2 (5., grade 0) and ahead of d3 (-0.0, grade 2): AP = (1/2 + 2/3) / 2."""
    import json

    from click.testing import CliRunner

    from qrelkit.cli import main

    (tmp_path / "qrels").write_text("q 0 d1 1\nq 0 d2 0\nq 0 d3 2\n")
    (tmp_path / "run").write_text("q  Q0  d1  1  .5  t\nq  Q0  d2  2  5.  t\nq  Q0  d3  3  -0.0  t\n")
    args = ["eval", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "AP", "-f", "json"]
    capped = CliRunner().invoke(main, [*args, "--memory-limit", "500MB"])
    plain = CliRunner().invoke(main, args)
    assert capped.exit_code == 0 and plain.exit_code == 0, capped.output
    a, b = json.loads(capped.stdout), json.loads(plain.stdout)
    assert a["runs"][0]["reader"] == "duckdb"
    assert a["results"] == b["results"]
    assert a["results"]["per_query"]["t"]["q"]["AP(rel=1)"] == (1 / 2 + 2 / 3) / 2


def test_duckdb_sorts_with_one_thread_per_128_mib_of_its_limit(monkeypatch):
    """DuckDB's documented least is 128 MB a thread: its limit decides the threads, at most the cores this
    process may run on (hand arithmetic: 64 MiB -> 1, 300 MiB -> 2, 2 GiB -> 16 capped at the cores)."""
    monkeypatch.setattr(external.os, "sched_getaffinity", lambda pid: set(range(12)), raising=False)
    assert external.duckdb_threads(64 << 20) == 1
    assert external.duckdb_threads(300 << 20) == 2
    assert external.duckdb_threads(2 << 30) == 12
    monkeypatch.setattr(external.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert external.duckdb_threads(2 << 30) == 1


def test_duckdb_out_of_memory_is_one_line_naming_the_file_and_limit(tmp_path, monkeypatch):
    """A real DuckDB out-of-memory error (forced by giving its 64 MiB to 32 threads, which the thread rule
    never does) reaches the user as one error naming the run, the limit and a larger one, not a traceback."""
    monkeypatch.setattr(external, "duckdb_threads", lambda duck_bytes: 32)
    monkeypatch.setattr(external, "process_bytes", lambda: 0)
    run = tmp_path / "r.run"
    order = sorted(range(1_000_000), key=lambda i: (i * 7919) % 1_000_000)
    run.write_text(
        "".join(f"q{i // 1000} Q0 d{i % 1000} {i % 1000 + 1} {1000 - i % 1000} r\n" for i in order)
    )
    with pytest.raises(ValidationError) as caught:
        batches, *_ = external.run_batches(run, memory_limit=270 << 20)
        for _ in batches:
            pass
    message = str(caught.value)
    assert str(run) in message and "ran out of memory" in message and "283 MB" in message
    assert "--memory-limit 566MB" in message and "\n" not in message
