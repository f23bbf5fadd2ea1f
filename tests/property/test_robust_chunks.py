"""The robust reader reads a good run in chunks of whole lines (``parse_run_chunked``), holding only the
columns a run keeps; any fault sends it back to reading the whole file, which words the error. Against the
whole-file reading (``parse_run_text`` then ``finish_run``, the reader as it was): the same rows, values,
line numbers and provenance for every run, damaged or not, in every layout, at chunk sizes that cut
between most lines, and the same error text for every damaged one."""

from __future__ import annotations

import gzip

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit.data.values import finish_run
from qrelkit.formats import read_run
from qrelkit.formats.trec import robust

from .test_reader_errors import RUN, _outcome, damaged

COLUMNS = ["query_id", "doc_id", "score", "rank", "line"]

LAYOUTS = [
    RUN,
    RUN.replace(b" ", b"\t"),
    RUN.replace(b"\n", b"\r\n"),
    RUN.replace(b"sys\n", b"sys extra fields\n"),
    RUN.replace(b"\n", b"\n\n  \n"),
    b"# a comment\n" + RUN,
    RUN.replace(b"\n", b"\r"),  # old line ends only: one chunk
    RUN[:-1],  # no newline at the end
    RUN + b"  ",  # whitespace after the last line end
]


def _whole(path, comments, policy):
    raw, fingerprint = robust.read_bytes(path)
    frame = robust.parse_run_text(raw, str(path), comments)
    return finish_run(frame, fingerprint, None, str(path), policy, "--on-duplicate")


def _check(tmp_path, monkeypatch, text, chunk, comments, gz=False, policy="error"):
    monkeypatch.setattr(robust, "CHUNK_BYTES", chunk)
    path = tmp_path / ("run.txt.gz" if gz else "run.txt")
    path.write_bytes(gzip.compress(text) if gz else text)
    want = _outcome(lambda: _whole(path, comments, policy))
    got = _outcome(lambda: read_run(path, reader="robust", on_duplicate=policy, comments=comments))
    assert got[0] == want[0], (got, want)
    if got[0] == "error":
        assert got[1] == want[1]
        return
    assert got[1].frame.select(COLUMNS).equals(want[1].frame.select(COLUMNS))
    got_meta, want_meta = dict(got[1].meta), dict(want[1].meta)
    got_dups, want_dups = got_meta.pop("duplicates", None), want_meta.pop("duplicates", None)
    assert (got[1].name, got[1].fingerprint, got_meta) == (want[1].name, want[1].fingerprint, want_meta)
    # the copies a duplicate policy removed, recorded as a frame (for qrelkit trec_eval's stop)
    assert (got_dups is None) == (want_dups is None)
    if got_dups is not None:
        assert got_dups.sort(got_dups.columns).equals(want_dups.sort(want_dups.columns))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.one_of(st.sampled_from(LAYOUTS), damaged()),
    chunk=st.sampled_from([1, 7, 20, 64, 4 << 20]),
    policy=st.sampled_from(["error", "first", "last", "max"]),
)
def test_chunks_give_the_whole_files_rows_or_its_error(tmp_path, monkeypatch, text, chunk, policy):
    _check(tmp_path, monkeypatch, text, chunk, comments=False, policy=policy)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.sampled_from(LAYOUTS), damaged()), chunk=st.sampled_from([7, 64]), gz=st.booleans())
def test_comment_lines_and_gzip_in_chunks(tmp_path, monkeypatch, text, chunk, gz):
    _check(tmp_path, monkeypatch, text, chunk, comments=True, gz=gz)


def test_a_good_run_is_read_in_chunks(tmp_path, monkeypatch):
    """The chunked reading is what computes a good run's rows (not a silent fallback to the whole file)."""
    monkeypatch.setattr(robust, "CHUNK_BYTES", 20)
    path = tmp_path / "run.txt"
    path.write_bytes(RUN.replace(b" ", b"\t"))
    frame, _, tag = robust.parse_run_chunked(path)
    assert tag == "sys" and frame.get_column("line").to_list() == [1, 2, 3, 4, 5, 6]
    path.write_bytes(RUN.replace(b"2.5", b"high"))  # a fault: the whole file words the error
    assert robust.parse_run_chunked(path) is None


def test_a_gzip_run_past_the_memory_limit_is_refused_in_chunks_as_whole(tmp_path):
    """Under a memory limit a gzip file read by the robust reader may expand to the limit at most, in
    chunks as whole (the whole file's reading words the error)."""
    import pytest

    from qrelkit.errors import InputFormatError
    from qrelkit.formats.trec.common import gzip_limit

    text = "".join(f"q{i % 50} Q0 d{i} 1 {i / 7:.3f} t\n" for i in range(100_000)).encode()
    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(text))
    with gzip_limit(1 << 20), pytest.raises(InputFormatError, match="expands to more than 1,048,576 bytes"):
        read_run(path, reader="robust")
    with gzip_limit(len(text) + 1):
        assert read_run(path, reader="robust").frame.height == 100_000
