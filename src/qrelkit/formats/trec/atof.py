"""TREC text read as trec_eval 10 reads its numbers: scores with C's ``atof``, grades with ``atol``.

qrelkit's readers refuse a score or grade that is not a plain number (docs/trec_eval.md says why). This
reader, which only ``qrelkit trec_eval --trec-eval-parsing`` uses, reads them instead exactly as trec_eval
10 does, so a script that needs the binary's numbers on such a file gets them:

- a score is ``atof`` of its field (``get_trec_results.c`` line 210): the longest prefix ``strtod`` reads,
  so ``nan``, ``inf``, ``infinity``, ``0x1p3`` (a hexadecimal float, 8), ``1.5abc`` (1.5), and 0 for
  text with no numeric prefix (``abc``);
- a grade is ``atol`` of its field (``get_qrels.c`` line 192): the longest decimal integer prefix, so
  ``1.5`` is 1, ``2abc`` is 2, ``abc`` and ``nan`` are 0;
- trec_eval ranks a query with ``qsort`` and ``comp_sim_docno`` (``form_res_rels.c`` lines 112-113 and
  266-275: score descending, then document id descending with ``strcmp``). A NaN score compares neither
  above nor below anything, so the order of a query that holds one is whatever the C library's ``qsort``
  makes of that comparator, starting from the lines sorted by query and document id
  (``get_trec_results.c`` line 173, ``comp_lines_qid_docno``). A query with a NaN or infinite score is
  therefore ranked here by the same C library's ``qsort`` with the same comparator, and its scores are
  replaced by finite stand-ins in that order (trec_eval prints no score, only what the ranking gives), so
  everything after reading is the ordinary code.

Everything else (fields, comments, sizes, ids, duplicates) is the robust reader's
(:mod:`qrelkit.formats.trec.robust`); the frames go through the same finishing steps.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from ...data.values import Qrels, Run

# strtod's grammar (C99 7.20.1.3), the longest prefix of the field that it reads: a sign, then INF or
# INFINITY, NAN or NAN(chars), a hexadecimal float 0x..p.., or a decimal float; case-insensitive.
_FLOAT = re.compile(
    r"[+-]?(?:"
    r"(?P<inf>inf(?:inity)?)"
    r"|(?P<nan>nan(?:\([0-9a-z_]*\))?)"
    r"|(?P<hex>0x(?:[0-9a-f]+(?:\.[0-9a-f]*)?|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?)"
    r"|(?P<dec>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?)"
    r")",
    re.IGNORECASE,
)
_INT = re.compile(r"[+-]?[0-9]+")
_LONG_MAX = 2**63 - 1


def atof(text: str) -> float:
    """C's ``atof`` (``strtod`` with no end pointer) on one whitespace-free field, in the C locale."""
    m = _FLOAT.match(text)
    if m is None:
        return 0.0  # no numeric prefix: strtod reads nothing and returns 0
    sign = -1.0 if text[0] == "-" else 1.0
    if m.group("inf"):
        return sign * math.inf
    if m.group("nan"):
        return math.nan
    if m.group("hex"):
        try:
            return sign * float.fromhex(m.group("hex"))  # correctly rounded, as glibc's strtod
        except OverflowError:
            return sign * math.inf  # strtod returns HUGE_VAL on overflow
    return sign * float(m.group("dec"))  # float() rounds correctly, as strtod; 1e999 is inf in both


def atol(text: str) -> int:
    """C's ``atol`` (``strtol`` base 10) on one field: its integer prefix, 0 when there is none; clamped
    to the range of a 64-bit long, as glibc clamps an overflow."""
    m = _INT.match(text)
    if m is None:
        return 0
    return max(-_LONG_MAX - 1, min(_LONG_MAX, int(m.group())))


@lru_cache(maxsize=1)
def _libc_qsort():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    qsort = ctypes.CDLL(name).qsort
    qsort.restype = None
    return qsort


_CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_long), ctypes.POINTER(ctypes.c_long))


def trec_eval_order(scores: list[float], docs: list[bytes]) -> list[int]:
    """The positions of one query's rows in trec_eval 10's ranking. The rows come in as trec_eval holds
    them before it ranks (document ids in ascending byte order, ``get_trec_results.c`` line 173); they
    are sorted by ``comp_sim_docno`` (``form_res_rels.c`` lines 266-275) with the C library's ``qsort``,
    the function trec_eval calls (line 112), so that a NaN score lands where the binary puts it."""

    def comp(p1, p2) -> int:
        a, b = p1[0], p2[0]
        if scores[a] > scores[b]:
            return -1
        if scores[a] < scores[b]:
            return 1
        return (docs[b] > docs[a]) - (docs[b] < docs[a])  # strcmp(p2->docno, p1->docno)

    n = len(scores)
    qsort = _libc_qsort()
    if qsort is None:  # no C library to load: glibc's merge sort, in Python
        return _merge_sorted(list(range(n)), lambda a, b: comp([a], [b]))
    items = (ctypes.c_long * n)(*range(n))
    qsort(items, ctypes.c_size_t(n), ctypes.c_size_t(ctypes.sizeof(ctypes.c_long)), _CMP(comp))
    return list(items)


def _merge_sorted(items: list[int], comp) -> list[int]:
    """glibc's ``msort``: top-down, the first half n // 2, the left element first unless it compares above."""
    if len(items) <= 1:
        return items
    half = len(items) // 2
    left, right = _merge_sorted(items[:half], comp), _merge_sorted(items[half:], comp)
    out, i, j = [], 0, 0
    while i < len(left) and j < len(right):
        if comp(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def _scores_as_atof(frame: pl.DataFrame) -> pl.DataFrame:
    """The score column as the text of a finite number trec_eval would rank the same way: ``atof``'s
    value where every score of the query is finite, else stand-ins (n, n-1, ... 1) in trec_eval's order."""
    import polars as pl

    values = [atof(s) for s in frame.get_column("score").to_list()]
    frame = frame.with_columns(pl.Series("score", values, dtype=pl.Float64))
    odd = frame.filter(~pl.col("score").is_finite()).get_column("query_id").unique().to_list()
    rows = frame.with_row_index("_row").filter(pl.col("query_id").is_in(odd))
    stand_in: dict[int, float] = {}
    # one pass per query (partition_by groups once): a query's rows by document id in byte order, stable
    # as glibc's msort keeps lines given twice in file order (get_trec_results.c line 173)
    for part in rows.partition_by("query_id", maintain_order=True):
        part = part.sort("doc_id", maintain_order=True)
        docs = [d.encode() for d in part.get_column("doc_id").to_list()]
        order = trec_eval_order(part.get_column("score").to_list(), docs)
        index = part.get_column("_row").to_list()
        for place, pos in enumerate(order):
            stand_in[index[pos]] = float(len(order) - place)
    new = [stand_in.get(i, v) for i, v in enumerate(values)]
    return frame.with_columns(pl.Series("score", [repr(v) for v in new], dtype=pl.String))


def read_run_atof(path: Path, *, comments: bool, on_duplicate: str, mixed_tags: bool) -> Run:
    """A TREC run read by the robust reader with trec_eval's ``atof`` scores (module docstring)."""
    from ...data.values import finish_run
    from .common import check_trec_input
    from .robust import parse_run_text, read_bytes

    check_trec_input(path, "run")
    raw, fingerprint = read_bytes(path, "run")
    frame = _scores_as_atof(parse_run_text(raw, str(path), comments))
    del raw
    return finish_run(frame, fingerprint, None, str(path), on_duplicate, "--on-duplicate", mixed_tags)


def read_qrels_atof(path: Path, *, comments: bool, on_duplicate: str) -> Qrels:
    """TREC judgments read by the robust reader with trec_eval's ``atol`` grades (module docstring)."""
    import polars as pl

    from ...data.values import finish_qrels
    from .common import check_trec_input
    from .robust import parse_qrels_text, read_bytes

    check_trec_input(path, "qrels")
    raw, fingerprint = read_bytes(path, "qrels")
    frame = parse_qrels_text(raw, str(path), comments)
    grades = [str(atol(g)) for g in frame.get_column("grade").to_list()]
    frame = frame.with_columns(pl.Series("grade", grades, dtype=pl.String))
    return finish_qrels(frame, fingerprint, None, str(path), None, on_duplicate, "--on-duplicate")
