"""The small reader (step 1 of :mod:`qrelkit.formats.trec`): clean TREC files of a few megabytes read into
numpy columns for :mod:`qrelkit.engine.encoding.small`, without a dataframe library.

The native scanner (:mod:`qrelkit._native`) splits the fields and reads the numbers in one pass when it is
built, vectorised numpy otherwise (and for numbers the scanner leaves to it). The numpy tokenizer stays
for installs without a C compiler: there it keeps small evaluations free of polars and pyarrow, about
half the time of stepping aside to Arrow's reader (100k lines: 1.0 s against 2.1 s, median of nine
``qrelkit eval`` runs on a loaded machine; 0.04 s with the scanner). Anything that is not a clean file (gzip, a byte-order mark, a number
written unusually, a field longer than :data:`~qrelkit.formats.trec.MAX_ID_BYTES`, ...) makes it step aside
(:class:`~qrelkit.errors.StepAside`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..._native import built, gather
from ..._native import split as native_split
from ..._native import words as native_words
from ..._typing import detect_format
from ...data.columns import Columns
from ...errors import StepAside
from ...fingerprint import Fingerprint
from .common import MAX_ID_BYTES, first_long_line, forbidden_in_text

#: Files up to this many bytes each may take this path (about a million lines; larger runs stream).
SMALL_FILE_BYTES = 32 << 20

_NUMBER = re.compile(rb"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_INTEGER = re.compile(rb"-?[0-9]{1,18}")


def _split(data: bytes, fields: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes followed by zero padding, field starts, field ends) with starts/ends shaped (lines, fields);
    the exact layout or refuse."""
    buf = np.frombuffer(data, dtype=np.uint8)
    if not len(buf) or buf[-1] != 10:
        raise StepAside
    newlines = int(np.count_nonzero(buf == 10))
    if int(np.count_nonzero(buf < 32)) != newlines or not newlines:
        raise StepAside  # a control character (tab, carriage return, NUL...): the columnar path judges
    if (buf >= 128).any():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise StepAside from None
    if int(np.count_nonzero(buf == 32)) != newlines * (fields - 1):
        raise StepAside  # not the same number of fields on every line
    separators = np.flatnonzero(buf <= 32)  # spaces and newlines, the only bytes below 33 left
    ends = separators.reshape(-1, fields)
    if not (buf[ends[:, -1]] == 10).all():
        raise StepAside  # a line with another number of fields
    starts = np.empty_like(separators)
    starts[0] = 0
    starts[1:] = separators[:-1] + 1
    starts = starts.reshape(-1, fields)
    lengths = ends - starts
    if not (lengths > 0).all():
        raise StepAside  # an empty field: two spaces, a leading space or a blank line
    _bounded(lengths)
    return _padded(buf, lengths), starts, ends


def _bounded(lengths: np.ndarray) -> None:
    """Step aside for a field longer than :data:`~qrelkit.formats.trec.MAX_ID_BYTES`: columns are matrices
    of rows x longest field here, and the robust reader refuses such ids (and reads such numbers)."""
    if len(lengths) and int(lengths.max()) > MAX_ID_BYTES:
        raise StepAside


#: The small path's id columns are matrices of rows x the longest id (query ids as bytes, document ids
#: as 64-bit words, and the hashing's temporaries of the same shape): a file takes this path only while
#: they hold at most this many times its bytes. One 512-byte id among a million short ones would make them
#: 64 times larger; such a file steps aside to the streaming readers, whose memory follows the total bytes.
MAX_COLUMN_BYTES_RATIO = 2


def _sized_by_bytes(query_lengths: np.ndarray, doc_lengths: np.ndarray, text_bytes: int) -> None:
    """Step aside when the id matrices (rows x the longest query id, rows x the longest document id in
    words) would exceed :data:`MAX_COLUMN_BYTES_RATIO` times ``text_bytes``."""
    rows = len(query_lengths)
    if not rows:
        return
    query_width = int(query_lengths.max())
    doc_width = -(-int(doc_lengths.max()) // 8) * 8
    if rows * (query_width + doc_width) > MAX_COLUMN_BYTES_RATIO * text_bytes + (1 << 20):
        raise StepAside


def _columns(
    q_buf: np.ndarray,
    q_bounds: tuple[np.ndarray, np.ndarray],
    d_buf: np.ndarray,
    d_bounds: tuple[np.ndarray, np.ndarray],
    number: np.ndarray,
    tag: bytes | None,
    fingerprint: Fingerprint,
    source: str,
    trailing: int,
) -> Columns:
    """The columns of rows whose query and document ids are ``buf[start:end]`` of their buffers (each
    followed by the padding :func:`_padded` gives, which numpy's windows need and the native gather does
    not)."""
    query_matrix = _matrix(q_buf, *q_bounds)
    query = query_matrix.view(f"S{query_matrix.shape[1]}").ravel()
    query_change = np.ones(len(query), dtype=bool)
    query_change[1:] = query[1:] != query[:-1]
    doc_words, doc_hash = _words(d_buf, *d_bounds)
    return Columns(query, query_change, doc_words, doc_hash, number, tag, fingerprint, source, trailing)


def _padded(buf: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes followed by zeros, so that any token's window of bytes stays inside."""
    padded = np.zeros(len(buf) + -(-int(lengths.max()) // 8) * 8, dtype=np.uint8)
    padded[: len(buf)] = buf
    return padded


def _matrix(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, multiple: int = 1) -> np.ndarray:
    """Each token's bytes in a row, zero-padded to the longest (rounded up to ``multiple``)."""
    lengths = ends - starts
    width = -(-int(lengths.max()) // multiple) * multiple
    if built():
        return gather(buf, starts, ends, width)  # one copy per token (numpy: a window, then a mask)
    matrix = np.lib.stride_tricks.sliding_window_view(buf, width)[starts]
    if (lengths != width).any():
        matrix *= np.arange(width, dtype=np.int32) < lengths[:, None]
    return matrix


def _words(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids as big-endian 64-bit words (rows, words), and a hash of each row (one native pass when the
    scanner is built, the same words and hashes)."""
    if built():
        return native_words(buf, starts, ends)
    words = _matrix(buf, starts, ends, multiple=8).view(">u8").astype(np.uint64)
    h = np.full(len(words), 0xCBF29CE484222325, dtype=np.uint64)
    lengths = ends - starts
    for j in range(words.shape[1]):  # only a token's own words: the hash must not depend on the padding
        mixed = (h ^ words[:, j]) * np.uint64(0x100000001B3)
        mixed ^= mixed >> np.uint64(29)
        h = mixed if j == 0 else np.where(lengths > 8 * j, mixed, h)
    return words, h


def _plain_numbers(matrix: np.ndarray, lengths: np.ndarray, fraction: bool) -> tuple[np.ndarray, np.ndarray]:
    """Values of tokens written ``-?digits`` (``.digits`` when ``fraction``) with at most 15 digits, and
    the mask of those tokens. Exact: the digits form an integer below 2**53 and 10**f is exact, so one
    correctly rounded division gives the correctly rounded value (Clinger's fast path)."""
    n, width = matrix.shape
    negative = matrix[:, 0] == 45
    mantissa = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)
    after_dot = np.zeros(n, dtype=np.int64)
    dots = np.zeros(n, dtype=np.int64)
    ok = lengths > negative
    for j in range(width):
        c = matrix[:, j]
        live = j < lengths
        digit = live & (c >= 48) & (c <= 57)
        dot = live & (c == 46)
        ok &= ~live | digit | dot | ((j == 0) & negative)
        if fraction:
            ok &= ~dot | ((j > negative) & (j < lengths - 1))  # a digit on both sides
            after_dot += digit & (dots > 0)
        dots += dot
        mantissa = mantissa * np.where(digit, 10, 1) + np.where(digit, c - 48, 0)
        digits += digit
    ok &= (digits <= 15) & (dots <= 1)
    if not fraction:
        ok &= dots == 0
    mantissa = np.where(ok, mantissa, 0)
    if fraction:
        values = mantissa / np.power(10.0, np.where(ok, after_dot, 0))
        return np.where(negative, -values, values), ok
    return np.where(negative, -mantissa, mantissa), ok


def _digits_value(matrix: np.ndarray) -> np.ndarray:
    """The integers written by rows of ASCII digits followed by zero padding."""
    value = np.zeros(len(matrix), dtype=np.int64)
    for j in range(matrix.shape[1]):
        c = matrix[:, j].astype(np.int64)
        value = np.where(c > 0, value * 10 + (c - 48), value)
    return value


def _numbers(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, fraction: bool, value: bool = True
) -> np.ndarray | None:
    """The numbers of one column (``None`` when only checked, ``value=False``), or refuse."""
    lengths = ends - starts
    if not fraction and (lengths == 1).all():  # one-digit grades or ranks, the common case
        digit = buf[starts].astype(np.int64) - 48
        if ((digit >= 0) & (digit <= 9)).all():
            return digit
    matrix = _matrix(buf, starts, ends)
    if not fraction and matrix.shape[1] <= 15 and (((matrix >= 48) & (matrix <= 57)) | (matrix == 0)).all():
        return _digits_value(matrix) if value else None  # unsigned integers of up to 15 digits
    values, ok = _plain_numbers(matrix, lengths, fraction)
    if not ok.all():
        pattern = _NUMBER if fraction else _INTEGER
        convert = float if fraction else int
        tokens = matrix[~ok].view(f"S{matrix.shape[1]}").ravel()
        others = []
        for token in tokens.tolist():
            if not pattern.fullmatch(token):
                raise StepAside  # written in a way the columnar path judges (and may refuse)
            others.append(convert(token))
        values[~ok] = others
    if fraction and not np.isfinite(values).all():
        raise StepAside
    return values


def _same(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes:
    """The one value every token of a column holds (a run's tag); refuses a column of several."""
    first = bytes(buf[starts[0] : ends[0]])
    if not (ends - starts == len(first)).all():
        raise StepAside
    matrix = np.lib.stride_tricks.sliding_window_view(buf, len(first))[starts]
    if not (matrix == np.frombuffer(first, dtype=np.uint8)).all():
        raise StepAside  # two tags: the columnar path reports the line
    return first


def read_columns(path: Path, kind: str, comments: bool = False) -> Columns:
    """A clean TREC run (``kind="run"``: query Q0 doc rank score tag) or qrels (``"qrels"``: query
    iteration doc grade); raises :class:`StepAside` for anything else. ``comments``: lines whose first
    byte is ``#`` are skipped (by the native split; numpy's tokenizer steps aside for them)."""
    stored = path.read_bytes()
    if stored[:2] == b"\x1f\x8b":
        raise StepAside  # gzip: the columnar path streams it
    if stored[:3] == b"\xef\xbb\xbf":
        raise StepAside  # a byte-order mark, which the columnar readers drop from the first id
    if first_long_line(stored) is not None:
        raise StepAside  # a line past the bound: the robust reader refuses it with its line
    data = stored if stored.endswith(b"\n") else stored + b"\n"
    run = kind == "run"
    fields = 6 if run else 4
    tag = None
    split = None
    trailing = 0  # run lines with fields after the sixth (the native split takes them; numpy's refuses)
    if built():  # one compiled pass instead of numpy's dozen (same values), the id rule's bytes included
        split = native_split(data, fields, 4 if run else 3, score=run, integer_field=3 if run else -1,
                              same_field=5 if run else -1, trailing=run, comments=comments)  # fmt: skip
    if split is None and forbidden_in_text(data):  # a tab, DEL, U+00A0... (invalid UTF-8: refused below)
        raise StepAside  # the columnar path reports an id that the id rule forbids, or reads the line
    if split is not None and len(split[2]):
        starts, ends, number, trailing = split
        _bounded(ends - starts)
        buf = np.frombuffer(data, dtype=np.uint8)  # unpadded: the native gather copies each token's bytes
        if run:
            tag = data[starts[0, 5] : ends[0, 5]]
    else:  # numpy alone (or text the compiled pass refuses, such as a negative zero score)
        if comments and (data[:1] == b"#" or b"\n#" in data):
            raise StepAside  # a comment line: numpy's tokenizer would read it as a row
        buf, starts, ends = _split(data, fields)
        if run:
            _numbers(buf, starts[:, 3], ends[:, 3], fraction=False, value=False)  # ranks: integers, unused
            number = _numbers(buf, starts[:, 4], ends[:, 4], fraction=True)
            tag = _same(buf, starts[:, 5], ends[:, 5])
        else:
            number = _numbers(buf, starts[:, 3], ends[:, 3], fraction=False)
    if not run and ((number == 0) & (buf[starts[:, 3]] == 45)).any():
        raise StepAside  # a grade written "-0": the columnar path refuses it
    _sized_by_bytes(ends[:, 0] - starts[:, 0], ends[:, 2] - starts[:, 2], len(data))
    fingerprint = Fingerprint(hashlib.sha256(stored).hexdigest(), "file-bytes", str(path))
    queries, docs = (starts[:, 0], ends[:, 0]), (starts[:, 2], ends[:, 2])
    return _columns(buf, queries, buf, docs, number, tag, fingerprint, str(path), trailing)


def top_columns(
    path: Path,
    keep_top: int,
    rank_single: bool,
    on_bytes: Callable[[int], None] | None = None,
    comments: bool = False,
) -> tuple[Columns, dict[str, object]]:
    """Each query's top ``keep_top`` rows of a clean TREC run of any size (plain or gzip), as columns for
    the small engine, and what the run records of its reading: the rows the streaming reader keeps, read
    by its native pass (:func:`~qrelkit.formats.trec.blocks.top_rows`), with the same meta
    (:func:`~qrelkit.formats.trec.blocks.run_meta`). Each query's rows are together, in file order. Raises
    :class:`StepAside` for whatever that native pass steps aside for, and for what the small engine
    leaves to the columnar path (a score that is not finite, ids whose matrices would outgrow their bytes):
    :class:`ScannerRefused` when the native pass itself stepped aside (as the streaming reader's native
    pass would, with the same options, so its caller can start at Arrow's parse)."""
    from .blocks import run_meta, top_rows

    if not built() or keep_top <= 0:
        raise StepAside
    try:
        top = top_rows(path, keep_top, rank_single, on_bytes, comments)
    except StepAside as refused:
        raise ScannerRefused from refused
    scanned = top.scanned
    if scanned is None or not top.fingerprint:
        raise StepAside  # no row: the readers report the empty run
    if not np.isfinite(scanned.score).all():
        raise StepAside
    q_len, d_len = np.diff(scanned.q_off), np.diff(scanned.d_off)
    _bounded(q_len)
    _bounded(d_len)
    _sized_by_bytes(q_len, d_len, len(scanned.q_data) + len(scanned.d_data))  # one long id among short ones
    columns = _columns(
        _padded(scanned.q_data, q_len), (scanned.q_off[:-1], scanned.q_off[1:]),
        _padded(scanned.d_data, d_len), (scanned.d_off[:-1], scanned.d_off[1:]),
        scanned.score, None if top.tag is None else top.tag.encode(),
        Fingerprint(top.fingerprint, "file-bytes", str(path)), str(path), top.trailing,
    )  # fmt: skip
    return columns, run_meta(top.rows, keep_top, rank_single, top.tag, top.merged, top.trailing)


class ScannerRefused(StepAside):
    """:func:`top_columns`' native pass stepped aside: so would the streaming reader's, with the same options."""


def readable(paths: Sequence[Path], input_format: str) -> bool:
    """Whether every path is a file of TREC text (plain or gzip), which :func:`top_columns` may read."""
    if input_format not in ("auto", "trec"):
        return False
    return all(p.is_file() and (input_format != "auto" or detect_format(p) == "trec") for p in paths)


def eligible(paths: Sequence[Path], input_format: str) -> bool:
    """Whether every file may be read whole by :func:`read_columns`: TREC text, a plain file (gzip is
    streamed), at most :data:`SMALL_FILE_BYTES`."""
    if not readable(paths, input_format):
        return False
    for path in paths:
        if path.stat().st_size > SMALL_FILE_BYTES:
            return False
        with path.open("rb") as probe:
            if probe.read(2) == b"\x1f\x8b":
                return False
    return True
