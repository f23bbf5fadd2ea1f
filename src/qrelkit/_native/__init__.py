"""The native scanner (the C files beside this module, listed in ``qkscan.h``), built into one library when
qrelkit is installed, loaded with ctypes.

:data:`lib` is ``None`` when the library was not built (no C compiler at install time), does not load, or
is from another version of those sources; the streaming reader then parses with Arrow, which gives the same
rows. Setting ``QRELKIT_NATIVE=0`` in the environment turns it off.
"""

from __future__ import annotations

import ctypes
import os
import sys

TYPE_CHECKING = False  # typing, dataclasses (with inspect) and pathlib cost ``qrelkit --version`` 40 ms
if TYPE_CHECKING:
    from dataclasses import dataclass
    from typing import Any

    import numpy as np
else:

    class _Numpy:
        """numpy, imported on first use: loading the library (``qrelkit --version``) needs only ctypes."""

        def __getattr__(self, name: str) -> Any:
            import numpy

            globals()["np"] = numpy
            return getattr(numpy, name)

    np = _Numpy()

    def dataclass(frozen: bool):
        """``dataclasses.dataclass(frozen=True)``'s constructor (fields by position or name, in the order
        of the annotations, defaults from the class) and read-only fields, for the plain records here."""
        assert frozen

        def record(cls):
            names = tuple(cls.__annotations__)
            defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}

            def __init__(self, *args, **kwargs):
                values = dict(zip(names, args, strict=False))
                if len(args) > len(names) or set(values) & set(kwargs) or set(kwargs) - set(names):
                    raise TypeError(f"{cls.__name__}() got arguments {args!r}, {sorted(kwargs)}")
                values.update(kwargs)
                for name in names:
                    if name not in values and name not in defaults:
                        raise TypeError(f"{cls.__name__}() missing argument {name!r}")
                    object.__setattr__(self, name, values.get(name, defaults.get(name)))

            def __setattr__(self, name, value):
                raise AttributeError(f"cannot assign to field {name!r}")

            def __repr__(self):
                return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

            def __delattr__(self, name):
                raise AttributeError(f"cannot delete field {name!r}")

            cls.__init__, cls.__setattr__, cls.__delattr__ = __init__, __setattr__, __delattr__
            cls.__repr__ = __repr__
            return cls

        return record


#: Bumped with every change to the scanner's exported functions or structures (QK_ABI in qkscan.h): a library
#: built from another version of the sources is not used.
ABI = 12

LIBRARY = "_qkscan.dll" if sys.platform == "win32" else "_qkscan.so"

_I64 = ctypes.POINTER(ctypes.c_int64)


class _Result(ctypes.Structure):
    _fields_ = [
        *[
            (name, ctypes.c_int64)
            for name in (
                "status",
                "kept",
                "lines",
                "groups",
                "q_bytes",
                "d_bytes",
                "tag_start",
                "tag_len",
                "refused_line",
                "rows",
                "trailing",
            )
        ],
        ("q_off", _I64),
        ("d_off", _I64),
        ("score", ctypes.POINTER(ctypes.c_double)),
        ("rank", _I64),
        ("row", _I64),
        ("group_first", _I64),
        ("q_data", ctypes.POINTER(ctypes.c_uint8)),
        ("d_data", ctypes.POINTER(ctypes.c_uint8)),
        ("pair", ctypes.POINTER(ctypes.c_uint64)),
    ]


def _load() -> ctypes.CDLL | None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
    if os.environ.get("QRELKIT_NATIVE", "1") == "0" or not os.path.isfile(path):
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.qk_abi.restype = ctypes.c_int64
        if lib.qk_abi() != ABI:
            return None
    except (OSError, AttributeError):
        return None
    lib.qk_scan_run.restype = ctypes.POINTER(_Result)
    lib.qk_scan_run.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int32,
        ctypes.c_int32,
    ]
    lib.qk_scan_qrels.restype = ctypes.POINTER(_Result)
    lib.qk_scan_qrels.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32]
    lib.qk_count_lines.restype = ctypes.c_int64
    lib.qk_count_lines.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.qk_split.restype = ctypes.c_int64
    lib.qk_split.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int32,
        ctypes.c_int64,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int32,
        ctypes.c_int32,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int32,
        ctypes.c_int32,
        ctypes.c_void_p,
        ctypes.c_int32,
    ]
    lib.qk_gather.restype = None
    lib.qk_gather.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.qk_words.restype = None
    lib.qk_words.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_int64] + [ctypes.c_void_p] * 2
    lib.qk_free.restype = None
    lib.qk_free.argtypes = [ctypes.POINTER(_Result)]
    lib.qk_top_new.restype = ctypes.c_void_p
    lib.qk_top_new.argtypes = [ctypes.c_int64, ctypes.c_int32]
    lib.qk_top_add.restype = ctypes.c_int64
    lib.qk_top_add.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Result), ctypes.c_int64]
    lib.qk_top_came_back.restype = ctypes.c_int64
    lib.qk_top_came_back.argtypes = [ctypes.c_void_p]
    lib.qk_top_result.restype = ctypes.POINTER(_Result)
    lib.qk_top_result.argtypes = [ctypes.c_void_p]
    lib.qk_top_free.restype = None
    lib.qk_top_free.argtypes = [ctypes.c_void_p]
    lib.qk_judged_dups.restype = ctypes.c_int64
    lib.qk_judged_dups.argtypes = [ctypes.c_int64, *[ctypes.c_void_p] * 4]
    lib.qk_trec_rank.restype = ctypes.c_int64
    lib.qk_trec_rank.argtypes = [
        ctypes.c_int64,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        *[ctypes.c_void_p] * 3,
        ctypes.c_int32,
        *[ctypes.c_void_p] * 6,
    ]
    lib.qk_group_start.restype = ctypes.c_int64
    lib.qk_group_start.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32]
    lib.qk_trec_eval.restype = ctypes.c_int64
    lib.qk_trec_eval.argtypes = [
        ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p,
        ctypes.c_int32,
        ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_int64),
    ]  # fmt: skip
    lib.qk_te_free.restype = None
    lib.qk_te_free.argtypes = [ctypes.c_void_p]
    lib.qk_te_measure.restype = ctypes.c_char_p
    lib.qk_te_measure.argtypes = [ctypes.c_int64]
    lib.qk_te_format.restype = ctypes.c_int64
    lib.qk_te_format.argtypes = [ctypes.c_double, ctypes.c_void_p]
    return lib


lib = _load()


def built() -> bool:
    """Whether the native scanner is loaded (read at each call: tests switch it off by setting ``lib``)."""
    return lib is not None


@dataclass(frozen=True)
class Scanned:
    """One block's kept rows (in file order) as Arrow large-string parts and numpy columns."""

    kept: int
    lines: int  # every line of the block, blank ones included
    q_off: np.ndarray
    q_data: np.ndarray
    d_off: np.ndarray
    d_data: np.ndarray
    score: np.ndarray
    rank: np.ndarray
    row: np.ndarray  # line index within the block (blank lines counted)
    group_first: np.ndarray  # first kept row of each query
    tag: bytes
    pair: np.ndarray | None = None  # any_order: a hash of (query id, document id) for every row
    rows: int = 0  # the lines that are not blank
    trailing: int = 0  # lines with fields after the sixth (ignored)


def _copy(pointer, n: int, dtype) -> np.ndarray:
    if n == 0:
        return np.zeros(0, dtype=dtype)
    return np.ctypeslib.as_array(pointer, shape=(n,)).copy()


def _scan(function, block, *args, build):
    """Call a scanner on ``block`` (bytes-like, ending with a newline; the GIL is released meanwhile) and
    ``build(result, view)`` from its result, which is freed after; ``None`` when it refuses the block."""
    assert lib is not None
    view = np.frombuffer(block, dtype=np.uint8)
    result = function(view.ctypes.data, len(view), *args)
    if not result:
        raise MemoryError("the native scanner ran out of memory")
    try:
        r = result.contents
        return build(r, view) if r.status == 0 else None
    finally:
        lib.qk_free(result)


def _ids(r) -> dict[str, np.ndarray]:
    """The query and document ids of a result's rows, as Arrow string offsets and bytes."""
    return {
        "q_off": _copy(r.q_off, r.kept + 1, np.int64),
        "q_data": _copy(r.q_data, r.q_bytes, np.uint8),
        "d_off": _copy(r.d_off, r.kept + 1, np.int64),
        "d_data": _copy(r.d_data, r.d_bytes, np.uint8),
    }


#: qk_scan_run's flags (scan.c): a query may come back within the block; comment lines are skipped.
ANY_ORDER, COMMENTS = 1, 2


def _flags(any_order: bool, comments: bool) -> int:
    return (ANY_ORDER if any_order else 0) | (COMMENTS if comments else 0)


def scan_run(
    block,
    keep_top: int | None,
    rank_single: bool,
    any_order: bool = False,
    duplicates: bool = False,
    comments: bool = False,
) -> Scanned | None:
    """Scan whole lines of a clean TREC run (see ``scan.c``); ``None`` when it refuses the block.

    ``any_order``: a query may come back within the block (each stretch of its lines is a group of its
    own, which the caller merges), and ``pair`` holds a hash of each line's (query id, document id).
    ``duplicates`` (every row kept, no ``keep_top``): a document given twice in a query is kept, for a
    caller that applies a duplicate policy, instead of refusing the block. ``comments``: a line whose first
    byte is ``#`` is skipped, as a blank line is (trec_eval 10's comment lines)."""
    assert not (duplicates and keep_top)
    return _scan(
        lib.qk_scan_run,
        block,
        -1 if duplicates else keep_top or 0,
        int(rank_single),
        _flags(any_order, comments),
        build=lambda r, view: _scanned(r, _tag(r, view), any_order),
    )


def _tag(r, view: np.ndarray) -> bytes:
    return bytes(view[r.tag_start : r.tag_start + r.tag_len]) if r.tag_start >= 0 else b""


def _scanned(r, tag: bytes, pairs: bool) -> Scanned:
    """A :class:`Scanned` copied out of a scanner result ``r`` (with its line pairs' hashes if asked)."""
    return Scanned(
        kept=r.kept,
        lines=r.lines,
        **_ids(r),
        score=_copy(r.score, r.kept, np.float64),
        rank=_copy(r.rank, r.kept, np.int64),
        row=_copy(r.row, r.kept, np.int64),
        group_first=_copy(r.group_first, r.groups, np.int64),
        tag=tag,
        pair=_copy(r.pair, r.rows, np.uint64) if pairs else None,
        rows=r.rows,
        trailing=r.trailing,
    )


class Block:
    """One block scanned for :class:`TopRows` (its kept rows stay in the scanner's memory until added)."""

    def __init__(self, result, lines: int, rows: int, size: int, tag: bytes, pair: np.ndarray, trailing: int):
        self._result = result
        self.lines = lines  # blank ones included
        self.rows = rows
        self.trailing = trailing  # lines with fields after the sixth (ignored)
        self.size = size  # bytes scanned
        self.tag = tag
        self.pair = pair

    def take(self):
        result, self._result = self._result, None
        return result

    def __del__(self):
        if self._result is not None and lib is not None:
            lib.qk_free(self._result)


class TopRows:
    """Each query's top ``keep_top`` rows across the blocks of a run in any order (``qk_top_*`` in
    ``top.c``): :meth:`scan` blocks on any thread, :meth:`add` them in file order, then :meth:`result`."""

    def __init__(self, keep_top: int, rank_single: bool, comments: bool = False):
        assert lib is not None and keep_top > 0
        self.keep_top = keep_top
        self.rank_single = rank_single
        self.flags = _flags(True, comments)
        self._state = lib.qk_top_new(keep_top, int(rank_single))
        if not self._state:
            raise MemoryError("the native scanner ran out of memory")

    def scan(self, block) -> Block | None:
        """Scan whole lines of a clean TREC run in any order; ``None`` when the scanner refuses them."""
        view = np.frombuffer(block, dtype=np.uint8)
        result = lib.qk_scan_run(
            view.ctypes.data, len(view), self.keep_top, int(self.rank_single), self.flags
        )
        if not result:
            raise MemoryError("the native scanner ran out of memory")
        r = result.contents
        if r.status != 0:
            lib.qk_free(result)
            return None
        pair = _copy(r.pair, r.rows, np.uint64)
        return Block(result, r.lines, r.rows, len(view), _tag(r, view), pair, r.trailing)

    def add(self, block: Block, first_line: int) -> None:
        """Merge a scanned block whose first line is the file's line ``first_line`` (from 0)."""
        result = block.take()
        try:
            status = lib.qk_top_add(self._state, result, first_line)
        finally:
            lib.qk_free(result)
        if status != 0:
            raise MemoryError("the native scanner ran out of memory")

    def came_back(self) -> bool:
        """Whether a query came back in a later block (the run is not grouped by query)."""
        return bool(lib.qk_top_came_back(self._state))

    def result(self) -> Scanned:
        """Every query's top rows, queries in order of first appearance, rows in file order (``row``: the
        line in the file, from 0)."""
        result = lib.qk_top_result(self._state)
        if not result:
            raise MemoryError("the native scanner ran out of memory")
        try:
            r = result.contents
            if r.status != 0:
                raise MemoryError("the native scanner ran out of memory")
            return _scanned(r, b"", False)
        finally:
            lib.qk_free(result)

    def close(self) -> None:
        if self._state:
            lib.qk_top_free(self._state)
            self._state = None

    def __del__(self):
        if getattr(self, "_state", None) and lib is not None:
            self.close()


@dataclass(frozen=True)
class ScannedQrels:
    """One block of judgments: every row, in file order."""

    lines: int  # blank ones included
    rows: int
    q_off: np.ndarray
    q_data: np.ndarray
    d_off: np.ndarray
    d_data: np.ndarray
    grade: np.ndarray
    row: np.ndarray  # line index within the block (blank lines counted)


def scan_qrels(block, comments: bool = False) -> ScannedQrels | None:
    """Scan whole lines of clean TREC judgments (see ``scan.c``); ``None`` when it refuses the block.
    ``comments``: a line whose first byte is ``#`` is skipped."""
    return _scan(
        lib.qk_scan_qrels,
        block,
        int(comments),
        build=lambda r, view: ScannedQrels(
            lines=r.lines,
            rows=r.rows,
            **_ids(r),
            grade=_copy(r.rank, r.kept, np.int64),
            row=_copy(r.row, r.kept, np.int64),
        ),
    )


def group_start(block, end: int, first_is_line: bool) -> int:
    """Offset in ``block[:end]`` (ending with a newline) where the trailing stretch of lines of the last
    line's query id begins; 0 when no boundary is found in it."""
    assert lib is not None
    view = np.frombuffer(block, dtype=np.uint8, count=end)
    return int(lib.qk_group_start(view.ctypes.data, end, int(first_is_line)))


def split(
    data: bytes,
    fields: int,
    number_field: int,
    *,
    score: bool,
    integer_field: int = -1,
    same_field: int = -1,
    trailing: bool = False,
    comments: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """Field offsets (starts, ends shaped (rows, fields)) and the numbers of one column of TREC text whose
    fields are split on runs of ASCII whitespace, blank lines skipped (see ``qk_split`` in ``split.c``, which
    also applies the id rule's check of :func:`qrelkit.formats.trec.common.forbidden_in_text`), and the
    number of lines with fields after the last (ignored; refused unless ``trailing``, for runs); ``None``
    when the scanner refuses the text. ``comments``: a line whose first byte is ``#`` is skipped."""
    assert lib is not None
    view = np.frombuffer(data, dtype=np.uint8)
    address = view.ctypes.data
    lines = int(lib.qk_count_lines(address, len(view)))
    starts = np.empty((lines, fields), dtype=np.int64)
    ends = np.empty((lines, fields), dtype=np.int64)
    numbers = np.empty(lines, dtype=np.float64 if score else np.int64)
    extra = ctypes.c_int64(0)
    rows = lib.qk_split(
        address,
        len(view),
        fields,
        lines,
        starts.ctypes.data,
        ends.ctypes.data,
        number_field,
        int(score),
        numbers.ctypes.data if score else None,
        None if score else numbers.ctypes.data,
        integer_field,
        same_field,
        ctypes.byref(extra) if trailing else None,
        int(comments),
    )
    if rows < 0:
        return None
    return starts[:rows], ends[:rows], numbers[:rows], extra.value


def gather(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, width: int) -> np.ndarray:
    """Each token ``buf[starts[i]:ends[i]]`` in row i of a (tokens, width) uint8 matrix, zero-padded."""
    assert lib is not None
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    out = np.zeros((len(starts), width), dtype=np.uint8)
    lib.qk_gather(buf.ctypes.data, starts.ctypes.data, ends.ctypes.data, len(starts), width, out.ctypes.data)
    return out


def words(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each token ``buf[starts[i]:ends[i]]`` as big-endian 64-bit words in row i of a (tokens, words)
    uint64 matrix, zero-padded, and each token's hash of its own words (``qk_words``; the small reader's
    numpy fallback computes the same, :func:`qrelkit.formats.trec.small._words`)."""
    assert lib is not None
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    width = -(-int((ends - starts).max()) // 8) if len(starts) else 0
    out = np.zeros((len(starts), width), dtype=np.uint64)
    hashes = np.empty(len(starts), dtype=np.uint64)
    lib.qk_words(buf.ctypes.data, starts.ctypes.data, ends.ctypes.data, len(starts), width, out.ctypes.data,
                 hashes.ctypes.data)  # fmt: skip
    return out, hashes


@dataclass(frozen=True)
class JudgedTable:
    """Judgments grouped by query for :func:`trec_rank`: query q's are ``order[first[q]:first[q + 1]]``."""

    first: np.ndarray  # int64, queries + 1
    order: np.ndarray  # int64 judgment indices, by query
    d_off: np.ndarray  # int64, judgments + 1
    d_data: np.ndarray  # uint8

    @classmethod
    def build(
        cls, qcode: np.ndarray, queries: int, d_off: np.ndarray, d_data: np.ndarray
    ) -> JudgedTable | None:
        """The table of judgments with query codes ``qcode`` (0 .. queries - 1), or ``None`` when a query
        judges a document twice."""
        assert lib is not None
        order = np.argsort(qcode, kind="stable").astype(np.int64)
        first = np.concatenate(([0], np.cumsum(np.bincount(qcode, minlength=queries)))).astype(np.int64)
        d_off = np.ascontiguousarray(d_off, dtype=np.int64)
        d_data = np.ascontiguousarray(d_data, dtype=np.uint8)
        found = lib.qk_judged_dups(
            queries, first.ctypes.data, order.ctypes.data, d_off.ctypes.data, d_data.ctypes.data
        )
        if found < 0:
            raise MemoryError("the native scanner ran out of memory")
        return None if found else cls(first, order, d_off, d_data)


def trec_rank(
    scanned: Scanned, group_qcode: np.ndarray, single: bool, table: JudgedTable
) -> tuple[np.ndarray, np.ndarray]:
    """(rank within its query, judgment index or -1) of every row of a block scanned from a run grouped by
    query (``qk_trec_rank``: trec_eval's order); rows of queries with code -1 get -1 for both."""
    assert lib is not None
    n = scanned.kept
    group_first = np.ascontiguousarray(scanned.group_first, dtype=np.int64)
    group_qcode = np.ascontiguousarray(group_qcode, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    judged = np.empty(n, dtype=np.int64)
    status = lib.qk_trec_rank(
        len(group_first), group_first.ctypes.data, group_qcode.ctypes.data, n,
        scanned.score.ctypes.data, scanned.d_off.ctypes.data, scanned.d_data.ctypes.data, int(single),
        table.first.ctypes.data, table.order.ctypes.data, table.d_off.ctypes.data, table.d_data.ctypes.data,
        pos.ctypes.data, judged.ctypes.data,
    )  # fmt: skip
    if status:
        raise MemoryError("the native scanner ran out of memory")
    return pos, judged


# ----------------------------------------------------------------------------- without numpy
# The same scanner calls for a caller that must not import numpy (``qrelkit trec_eval`` on small files,
# :mod:`qrelkit.evaluation.trec_lean`): the inputs are bytes and ctypes arrays, the outputs memoryviews over
# the scanner's memory, valid until the result is freed.


class Raw:
    """One scanner result (:func:`raw_scan_run`, :func:`raw_scan_qrels`), read in place: its counts, its
    arrays as memoryviews (``int64``, ``double``) and its bytes; :meth:`free` releases it."""

    def __init__(self, result):
        self._result = result
        r = result.contents
        self.r = r
        self.kept, self.groups, self.rows = r.kept, r.groups, r.rows
        self.tag_start, self.tag_len = r.tag_start, r.tag_len

    def ints(self, name: str, n: int) -> memoryview:
        return _view(getattr(self.r, name), n, ctypes.c_int64, "q")

    def doubles(self, name: str, n: int) -> memoryview:
        return _view(getattr(self.r, name), n, ctypes.c_double, "d")

    def data(self, name: str, n: int) -> bytes:
        return ctypes.string_at(getattr(self.r, name), n) if n else b""

    def address(self, name: str) -> int | None:
        return ctypes.cast(getattr(self.r, name), ctypes.c_void_p).value

    def free(self) -> None:
        if self._result is not None and lib is not None:
            lib.qk_free(self._result)
        self._result = None


def _view(pointer, n: int, ctype, code) -> memoryview:
    if n == 0:
        return memoryview(b"").cast(code)
    array = (ctype * n).from_address(ctypes.cast(pointer, ctypes.c_void_p).value)
    return memoryview(array).cast("B").cast(code)


def _raw(result) -> Raw | None:
    if not result:
        raise MemoryError("the native scanner ran out of memory")
    if result.contents.status != 0:
        lib.qk_free(result)
        return None
    return Raw(result)


def raw_scan_run(block: bytes, comments: bool) -> Raw | None:
    """:func:`scan_run` of ``block`` (whole lines, ending with a newline) with no ``keep_top``, ranks in
    double precision and queries grouped, read in place; ``None`` when the scanner refuses it."""
    assert lib is not None
    return _raw(lib.qk_scan_run(block, len(block), 0, 0, _flags(False, comments)))


def raw_scan_qrels(block: bytes, comments: bool) -> Raw | None:
    """:func:`scan_qrels` of ``block``, read in place (grades in ``rank``); ``None`` when refused."""
    assert lib is not None
    return _raw(lib.qk_scan_qrels(block, len(block), int(comments)))


def int64s(values) -> ctypes.Array:
    """A ctypes ``int64`` array of ``values`` (a list of ints)."""
    import struct  # loaded with ctypes already

    n = len(values)
    return (ctypes.c_int64 * max(n, 1)).from_buffer_copy(struct.pack(f"={max(n, 1)}q", *(values or [0])))


def raw_judged_dups(queries: int, first: ctypes.Array, order: ctypes.Array, qrels: Raw) -> bool:
    """:meth:`JudgedTable.build`'s check: whether a query judges a document twice."""
    assert lib is not None
    found = lib.qk_judged_dups(queries, first, order, qrels.address("d_off"), qrels.address("d_data"))
    if found < 0:
        raise MemoryError("the native scanner ran out of memory")
    return bool(found)


def raw_trec_rank(
    run: Raw, group_qcode: ctypes.Array, single: bool, first: ctypes.Array, order: ctypes.Array, qrels: Raw
) -> tuple[memoryview, memoryview]:
    """:func:`trec_rank` of a :func:`raw_scan_run` result against the judgments of a
    :func:`raw_scan_qrels` result grouped by ``first`` and ``order`` (as :class:`JudgedTable`)."""
    assert lib is not None
    n = run.kept
    pos = (ctypes.c_int64 * max(n, 1))()
    judged = (ctypes.c_int64 * max(n, 1))()
    status = lib.qk_trec_rank(
        run.groups, run.address("group_first"), group_qcode, n, run.address("score"), run.address("d_off"),
        run.address("d_data"), int(single), first, order, qrels.address("d_off"), qrels.address("d_data"),
        pos, judged,
    )  # fmt: skip
    if status:
        raise MemoryError("the native scanner ran out of memory")
    return memoryview(pos).cast("B").cast("q")[:n], memoryview(judged).cast("B").cast("q")[:n]


# ------------------------------------------------------------------------------- trec_eval whole


def trec_eval_text(
    qrels: bytes,
    run: bytes,
    mask: int,
    cuts: list[int],
    flags: int,
    rel_level: int,
    max_per_topic: int,
    num_docs: int,
    max_line: int,
) -> bytes | None:
    """``qk_trec_eval`` (``trec_eval.c``): the text ``qrelkit trec_eval`` prints (the arguments are
    described there), or ``None`` when it leaves the files to the lean path."""
    assert lib is not None
    out, length = ctypes.c_void_p(), ctypes.c_int64()
    status = lib.qk_trec_eval(
        qrels, len(qrels), run, len(run), mask, int64s(cuts), flags, rel_level, max_per_topic, num_docs,
        max_line, ctypes.byref(out), ctypes.byref(length),
    )  # fmt: skip
    if status == 2:
        raise MemoryError("the native scanner ran out of memory")
    if status != 0:
        return None
    try:
        return ctypes.string_at(out, length.value) if length.value else b""
    finally:
        lib.qk_te_free(out)


def trec_eval_measures() -> list[str]:
    """The measures ``qk_trec_eval`` computes, in the order of its mask's bits."""
    assert lib is not None
    names, i = [], 0
    while (name := lib.qk_te_measure(i)) is not None:
        names.append(name.decode())
        i += 1
    return names


def trec_eval_format(value: float) -> str:
    """How ``qk_trec_eval`` writes a value (``%6.4f``, NaN as ``-nan``): for the tests."""
    assert lib is not None
    out = ctypes.create_string_buffer(400)  # trec_eval.c's FORMAT_BYTES
    length = lib.qk_te_format(value, ctypes.addressof(out))
    return out.raw[:length].decode()
