"""The small-input path: clean TREC files of a few megabytes, read and ranked without a dataframe library.

For small inputs the fixed cost of an evaluation is loading the dataframe libraries, not the work. This
path reads clean TREC text (one space between fields, ``\\n`` line ends, numbers written plainly): the
native scanner (:mod:`qrelkit._native`) splits the fields and reads the numbers in one pass when it is
built, vectorised numpy otherwise. It ranks each run under the conventions exactly as
:func:`qrelkit.engine.encode.encode` does, and hands the same :class:`~qrelkit.engine.encoded.Encoded`
arrays to the same kernels. Anything it does not take (another format, gzip, tabs, ``\\r``, blank lines, a
byte-order mark, a number written unusually, a duplicate document or judgment, a negative zero score, an
input that needs an error message) makes it step aside: :func:`evaluate_small_files` returns ``None`` and
the caller runs the columnar path, which reads, checks and reports. So this path never changes a number
and never has to explain an error; the property tests hold it bit-identical to the columnar path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import _native
from .._typing import detect_format
from ..conventions import Conventions
from ..fingerprint import Fingerprint
from ..measures import Measure, parse_measures
from ..results import Results, RunValues, assemble, unique_run_names
from .encoded import Encoded, QuerySet, encoding_key, offsets_of
from .kernels import compute

#: Files up to this many bytes each may take this path (about a million lines; larger runs stream).
SMALL_FILE_BYTES = 32 << 20

_NUMBER = re.compile(rb"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_INTEGER = re.compile(rb"-?[0-9]{1,18}")


class _Unavailable(Exception):
    """This input is not for the small path; the columnar path will read it (and report any error)."""


@dataclass(frozen=True)
class Columns:
    """One clean TREC file as columns, line = row + 1.

    Document ids are kept as big-endian 64-bit words of their zero-padded bytes: rows compare equal when
    all words are equal, and compare in byte order (the order of the strings) word by word."""

    query: np.ndarray  # S: fixed-width bytes
    query_change: np.ndarray  # bool: the row starts a new stretch of one query id
    doc_words: np.ndarray  # uint64, shape (rows, words)
    doc_hash: np.ndarray  # uint64
    number: np.ndarray  # score (float64) for runs, grade (int64) for judgments
    tag: bytes | None
    fingerprint: Fingerprint
    source: str

    @property
    def rows(self) -> int:
        return len(self.query)


@dataclass(frozen=True)
class SmallQrels:
    """What :func:`qrelkit.results.assemble` records of the judgments."""

    name: str
    fingerprint: Fingerprint
    meta: dict[str, Any]
    rubric_hash: str | None
    columns: Columns = field(repr=False)


# ------------------------------------------------------------------------------------------------ reading


def _split(data: bytes, fields: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes followed by zero padding, field starts, field ends) with starts/ends shaped (lines, fields);
    the exact layout or refuse."""
    buf = np.frombuffer(data, dtype=np.uint8)
    if not len(buf) or buf[-1] != 10:
        raise _Unavailable
    newlines = int(np.count_nonzero(buf == 10))
    if int(np.count_nonzero(buf < 32)) != newlines or not newlines:
        raise _Unavailable  # a control character (tab, carriage return, NUL...): the columnar path judges
    if (buf >= 128).any():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise _Unavailable from None
    if int(np.count_nonzero(buf == 32)) != newlines * (fields - 1):
        raise _Unavailable  # not the same number of fields on every line
    separators = np.flatnonzero(buf <= 32)  # spaces and newlines, the only bytes below 33 left
    ends = separators.reshape(-1, fields)
    if not (buf[ends[:, -1]] == 10).all():
        raise _Unavailable  # a line with another number of fields
    starts = np.empty_like(separators)
    starts[0] = 0
    starts[1:] = separators[:-1] + 1
    starts = starts.reshape(-1, fields)
    lengths = ends - starts
    if not (lengths > 0).all():
        raise _Unavailable  # an empty field: two spaces, a leading space or a blank line
    return _padded(buf, lengths), starts, ends


def _padded(buf: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes followed by zeros, so that any token's window of bytes stays inside."""
    padded = np.zeros(len(buf) + -(-int(lengths.max()) // 8) * 8, dtype=np.uint8)
    padded[: len(buf)] = buf
    return padded


def _matrix(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, multiple: int = 1) -> np.ndarray:
    """Each token's bytes in a row, zero-padded to the longest (rounded up to ``multiple``)."""
    lengths = ends - starts
    width = -(-int(lengths.max()) // multiple) * multiple
    if _native.lib is not None:
        return _native.gather(buf, starts, ends, width)  # one copy per token (numpy: a window, then a mask)
    matrix = np.lib.stride_tricks.sliding_window_view(buf, width)[starts]
    if (lengths != width).any():
        matrix *= np.arange(width, dtype=np.int32) < lengths[:, None]
    return matrix


def _words(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids as big-endian 64-bit words (rows, words), and a hash of each row."""
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
                raise _Unavailable  # written in a way the columnar path judges (and may refuse)
            others.append(convert(token))
        values[~ok] = others
    if fraction and not np.isfinite(values).all():
        raise _Unavailable
    return values


def _same(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes:
    """The one value every token of a column holds (a run's tag); refuses a column of several."""
    first = bytes(buf[starts[0] : ends[0]])
    if not (ends - starts == len(first)).all():
        raise _Unavailable
    matrix = np.lib.stride_tricks.sliding_window_view(buf, len(first))[starts]
    if not (matrix == np.frombuffer(first, dtype=np.uint8)).all():
        raise _Unavailable  # two tags: the columnar path reports the line
    return first


def read_columns(path: Path, kind: str) -> Columns:
    """A clean TREC run (``kind="run"``: query Q0 doc rank score tag) or qrels (``"qrels"``: query
    iteration doc grade); raises :class:`_Unavailable` for anything else."""
    stored = path.read_bytes()
    if stored[:2] == b"\x1f\x8b":
        raise _Unavailable  # gzip: the columnar path streams it
    if stored[:3] == b"\xef\xbb\xbf":
        raise _Unavailable  # a byte-order mark, which the columnar readers drop from the first id
    data = stored if stored.endswith(b"\n") else stored + b"\n"
    run = kind == "run"
    fields = 6 if run else 4
    tag = None
    split = None
    if _native.lib is not None:  # one compiled pass instead of numpy's dozen (same values)
        split = _native.split(data, fields, 4 if run else 3, score=run, integer_field=3 if run else -1,
                              same_field=5 if run else -1)  # fmt: skip
    if split is not None and len(split[2]):
        starts, ends, number = split
        buf = _padded(np.frombuffer(data, dtype=np.uint8), ends - starts)
        if run:
            tag = data[starts[0, 5] : ends[0, 5]]
    else:  # numpy alone (or text the compiled pass refuses, such as a negative zero score)
        buf, starts, ends = _split(data, fields)
        if run:
            _numbers(buf, starts[:, 3], ends[:, 3], fraction=False, value=False)  # ranks: integers, unused
            number = _numbers(buf, starts[:, 4], ends[:, 4], fraction=True)
            tag = _same(buf, starts[:, 5], ends[:, 5])
        else:
            number = _numbers(buf, starts[:, 3], ends[:, 3], fraction=False)
    query_matrix = _matrix(buf, starts[:, 0], ends[:, 0])
    query = query_matrix.view(f"S{query_matrix.shape[1]}").ravel()
    query_change = np.ones(len(query), dtype=bool)
    query_change[1:] = query[1:] != query[:-1]
    doc_words, doc_hash = _words(buf, starts[:, 2], ends[:, 2])
    sha = hashlib.sha256(stored).hexdigest()
    fingerprint = Fingerprint(sha, "file-bytes", str(path))
    return Columns(query, query_change, doc_words, doc_hash, number, tag, fingerprint, str(path))


# ------------------------------------------------------------------------------------------------ ranking


def _vocabulary(columns: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct query ids, each row's index into them, each row's (query, document) key),
    looking only where the query id changes. Keys are 64-bit hashes: equal pairs have equal keys; unequal
    pairs almost never do, and every match found by key is verified."""
    heads = columns.query[columns.query_change]
    vocabulary, inverse = np.unique(heads, return_inverse=True)
    code = inverse[np.cumsum(columns.query_change) - 1]
    query_hash = np.array(
        [int.from_bytes(hashlib.blake2b(q, digest_size=8).digest(), "little") for q in vocabulary.tolist()],
        dtype=np.uint64,
    )
    return vocabulary, code, columns.doc_hash ^ (query_hash[code] * np.uint64(0x9E3779B97F4A7C15))


def _member(values: np.ndarray, vocabulary: np.ndarray) -> np.ndarray:
    """Whether each value is in the sorted ``vocabulary`` (``np.isin`` without loading ``numpy.ma``)."""
    if not len(vocabulary):
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(vocabulary, values), len(vocabulary) - 1)
    return vocabulary[pos] == values


def _same_words(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise equality of two word matrices of possibly different widths (zero padding beyond)."""
    width = max(a.shape[1], b.shape[1])
    if a.shape[1] < width:
        a = np.pad(a, ((0, 0), (0, width - a.shape[1])))
    if b.shape[1] < width:
        b = np.pad(b, ((0, 0), (0, width - b.shape[1])))
    return (a == b).all(axis=1)


@dataclass(frozen=True)
class _Judgments:
    """The judgments indexed once for every run: query vocabulary, and (query, document) keys sorted."""

    vocabulary: np.ndarray  # sorted distinct query ids (S)
    query_ids: list[str]
    code: np.ndarray  # per judgment: index into vocabulary
    order: np.ndarray  # judgments sorted by key
    keys: np.ndarray  # sorted keys

    @classmethod
    def build(cls, qrels: Columns) -> _Judgments:
        vocabulary, code, keys = _vocabulary(qrels)
        order = np.argsort(keys)
        sorted_keys = keys[order]
        if (sorted_keys[1:] == sorted_keys[:-1]).any():
            raise _Unavailable  # a duplicate judgment (or a hash collision): the columnar path decides
        return cls(vocabulary, [q.decode() for q in vocabulary.tolist()], code, order, sorted_keys)


def _query_set(
    judged: _Judgments, run_vocabulary: np.ndarray, conv: Conventions
) -> tuple[QuerySet, np.ndarray]:
    """The scored queries exactly as :func:`qrelkit.engine.encode.select_queries` chooses them, and the
    positions of those queries in the judgments' vocabulary."""
    in_judged = _member(run_vocabulary, judged.vocabulary)
    extra = [q.decode() for q in run_vocabulary[~in_judged].tolist()]
    if extra and conv.extra_queries == "reject":
        raise _Unavailable  # the columnar path raises the error
    in_run = _member(judged.vocabulary, run_vocabulary)
    missing = [q for q, present in zip(judged.query_ids, in_run.tolist(), strict=True) if not present]
    if conv.missing_queries == "zero":
        positions = np.arange(len(judged.vocabulary))
        return QuerySet(list(judged.query_ids), in_run, missing, [], extra), positions
    positions = np.flatnonzero(in_run)
    scored = [judged.query_ids[i] for i in positions.tolist()]
    return QuerySet(scored, np.ones(len(scored), dtype=bool), [], missing, extra), positions


def _query_score_keys(q: np.ndarray, score: np.ndarray) -> list[np.ndarray]:
    """Sort keys (least significant first, for ``np.lexsort``) for query ascending, score descending.

    Scores that are all float32 values (always so under ``precision = "single"``) fold into one 64-bit
    key with the query: the query in the high half, the float's bits mapped to an order-preserving
    unsigned integer and inverted (descending) in the low half."""
    single = score.astype(np.float32)
    if len(q) and int(q.max()) < 2**31 and np.array_equal(single.astype(np.float64), score):
        bits = single.view(np.uint32)
        ascending = bits ^ np.where(bits >> np.uint32(31), np.uint32(0xFFFFFFFF), np.uint32(0x80000000))
        return [(q.astype(np.uint64) << np.uint64(32)) | (~ascending).astype(np.uint64)]
    return [-score, q]


def encode_small(qrels: Columns, judged: _Judgments, run: Columns, conv: Conventions) -> Encoded:
    """Rank ``run`` against ``qrels`` under ``conv``: the same arrays as
    :func:`qrelkit.engine.encode.encode`, step for step (its module docstring lists the steps)."""
    run_vocabulary, run_code, run_keys = _vocabulary(run)
    by_key = np.argsort(run_keys)
    sorted_keys = run_keys[by_key]
    if (sorted_keys[1:] == sorted_keys[:-1]).any():
        raise _Unavailable  # a duplicate document (or a hash collision): the columnar path decides
    slot = np.empty(len(run_keys), dtype=np.int64)
    slot[by_key] = np.searchsorted(judged.keys, sorted_keys)  # needles in order: a cache-friendly search
    np.minimum(slot, len(judged.keys) - 1, out=slot)
    queries, positions = _query_set(judged, run_vocabulary, conv)
    n_queries = len(queries.query_ids)
    # each run query's index in the judgments' vocabulary (-1: not judged), then in the scored list
    vocab_of_run = np.searchsorted(judged.vocabulary, run_vocabulary)
    vocab_of_run[~_member(run_vocabulary, judged.vocabulary)] = -1
    scored_index = np.full(len(judged.vocabulary), -1, dtype=np.int64)
    scored_index[positions] = np.arange(n_queries)
    vocab_pos = vocab_of_run[run_code]
    known = vocab_pos >= 0
    q_all = np.where(known, scored_index[vocab_pos], -1)

    # negative grades
    grade_all = qrels.number
    usable = np.ones(len(grade_all), dtype=bool)
    negative = grade_all < 0
    if negative.any():
        if conv.negative == "reject":
            raise _Unavailable  # the columnar path raises the error, naming the line
        if conv.negative == "zero":
            grade_all = np.where(negative, 0, grade_all)
        elif conv.negative == "unjudged":
            usable = ~negative

    # the run's rows in scored queries, joined with the judgments by key, verified word by word
    keep = q_all >= 0
    rows = np.flatnonzero(keep)
    slot = slot[rows]
    hit = judged.keys[slot] == run_keys[rows]
    row = judged.order[slot]
    hits = np.flatnonzero(hit)
    same = judged.code[row[hits]] == vocab_pos[rows[hits]]
    same &= _same_words(qrels.doc_words[row[hits]], run.doc_words[rows[hits]])
    if not same.all():
        raise _Unavailable  # a hash collision: the columnar path joins by the strings themselves
    is_judged = hit & usable[row]
    if conv.unjudged == "drop":
        rows, row, is_judged = rows[is_judged], row[is_judged], is_judged[is_judged]
    q = q_all[rows]
    score = run.number[rows]
    if conv.precision == "single":
        score = score.astype(np.float32).astype(np.float64)
    if ((score == 0) & np.signbit(score)).any():
        raise _Unavailable  # -0.0: ordered differently from 0.0 by the columnar sort
    grade = np.where(is_judged, grade_all[row], 0).astype(np.int64)

    # the ranking: query, score descending, the tie convention, then file order (rows are in file order
    # and every sort below is stable, so file order needs no key of its own)
    ranking = _query_score_keys(q, score)
    ties: list[np.ndarray] = []
    if conv.ties in ("docid_desc", "docid_asc"):
        words = run.doc_words[rows]
        for j in reversed(range(words.shape[1])):  # the first word is the most significant
            ties.append(~words[:, j] if conv.ties == "docid_desc" else words[:, j])
    elif conv.ties == "optimistic":
        ties += [-grade, ~is_judged]
    elif conv.ties == "pessimistic":
        ties += [grade, is_judged]
    order = (
        np.lexsort([*ties, *ranking]) if ties or len(ranking) > 1 else np.argsort(ranking[0], kind="stable")
    )
    q, score, grade, is_judged = q[order], score[order], grade[order], is_judged[order]

    block_starts = None
    if conv.ties == "average" and len(score):
        new_block = np.ones(len(score), dtype=bool)
        new_block[1:] = (q[1:] != q[:-1]) | (score[1:] != score[:-1])
        block_starts = np.flatnonzero(new_block)
        if len(block_starts) == len(score):
            block_starts = None

    # the judgments of the scored queries, best grade first
    jq = scored_index[judged.code]
    jkeep = (jq >= 0) & usable
    jq, jgrade = jq[jkeep], grade_all[jkeep]
    jorder = np.lexsort((-jgrade, jq))
    return Encoded(
        queries=queries,
        offsets=offsets_of(q, n_queries),
        grade=grade,
        judged=is_judged,
        score=score,
        block_starts=block_starts,
        judged_offsets=offsets_of(jq[jorder], n_queries),
        judged_grade=jgrade[jorder].astype(np.int64),
    )


# --------------------------------------------------------------------------------------------- evaluation


def _eligible(paths: Sequence[Path], input_format: str) -> bool:
    if input_format not in ("auto", "trec"):
        return False
    for path in paths:
        if not path.is_file() or (input_format == "auto" and detect_format(path) != "trec"):
            return False
        if path.stat().st_size > SMALL_FILE_BYTES:
            return False
    return True


def evaluate_small_files(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    measures: Iterable[str | Measure] | None = None,
    conventions: Conventions | None = None,
    *,
    input_format: str = "auto",
    on_duplicate: str = "error",
    scale: Sequence[int] | None = None,
    rubric_hash: str | None = None,
) -> Results | None:
    """:func:`qrelkit.evaluation.evaluate_files` for small, clean TREC files, without the dataframe
    libraries; ``None`` when any input is not for this path (the caller then evaluates it the usual way).
    Identical numbers; the runs' provenance says ``reader: small``."""
    from ..conventions import DEFAULT

    conv = conventions or DEFAULT
    parsed = parse_measures(measures)
    qpath, rpaths = Path(qrels_path), [Path(p) for p in run_paths]
    if not rpaths or not _eligible([qpath, *rpaths], input_format):
        return None
    try:
        qcols = read_columns(qpath, "qrels")
        if scale is not None and not _member(qcols.number, np.array(sorted(set(scale)))).all():
            raise _Unavailable  # a grade outside the rubric: the columnar path names its line
        judged = _Judgments.build(qcols)
        workers = min(2, len(rpaths))

        def one(path: Path) -> RunValues:
            run = read_columns(path, "run")
            cache: dict[tuple[str, ...], Encoded] = {}
            values = {}
            for measure in parsed:
                mconv = measure.conventions(conv)
                key = encoding_key(mconv)
                if key not in cache:
                    cache[key] = encode_small(qcols, judged, run, mconv)
                values[measure] = compute(cache[key], measure, mconv)
            queries = next(iter(cache.values())).queries
            meta = {
                "source": run.source,
                "duplicates_removed": 0,
                "on_duplicate": on_duplicate,
                "rows_read": run.rows,
                "reader": "small",
            }
            name = run.tag.decode() if run.tag else path.stem
            return RunValues(name, run.fingerprint, meta, queries, values)

        if workers > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(workers) as pool:
                items = list(pool.map(one, rpaths))
        else:
            items = [one(p) for p in rpaths]
    except _Unavailable:
        return None
    names = unique_run_names([i.name for i in items], [str(p) for p in rpaths])
    items = [
        RunValues(n, i.fingerprint, i.meta, i.queries, i.values) for n, i in zip(names, items, strict=True)
    ]
    qrels = SmallQrels(
        qpath.name,
        qcols.fingerprint,
        {"source": str(qpath), "duplicates_removed": 0, "on_duplicate": on_duplicate},
        rubric_hash,
        qcols,
    )
    return assemble(qrels, parsed, conv, items)
