"""``qrelkit trec_eval`` on small files without numpy: the command's start-up is most of its time at TREC
size (43,000 lines), and numpy's import is most of that.

:func:`lean_trec_eval` is tried first by ``qrelkit trec_eval`` (through click, :mod:`qrelkit.cli.trec_eval`) and,
before click loads, by ``python -m qrelkit trec_eval`` / the ``qrelkit`` command
(:func:`qrelkit.__main__.run`, through :func:`lean_argv`, which reads only the options it fully
understands). It takes what :mod:`qrelkit.evaluation.trec_fast` takes (both files read whole by the native
scanner, through ctypes arrays instead of numpy ones), forms the same sparse ranked lists in plain Python and
computes the measures listed in :data:`LEAN_MEASURES` with the arithmetic of
:mod:`qrelkit.engine.trec_kernels` in the same order (every sum in rank order, and the running sums of the
kernels' ``prefix`` formed the way its grid or its difference of one running sum forms them), so the floats
are the same and so are the printed bytes (:mod:`qrelkit.report.trec_eval` prints both).

Everything else steps aside (:class:`~qrelkit.errors.StepAside`) to the usual path, which reports every
error: a file over :data:`MAX_BYTES`, gzipped, not ASCII, refused by the scanner; a judged query missing
from the run without ``-c``; a first query with only negative grades; ``-l`` below 0; a measure not in
:data:`LEAN_MEASURES`; ``--trec-eval-parsing``. Logarithms are ``math``'s here and the C library's on the
numpy path too (:mod:`qrelkit.engine.libm`: numpy's own vectorised ones on AVX-512 differ in the last bit),
on every machine. ``tests/property/test_trec_lean.py`` compares the two paths' floats and bytes.
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_left
from itertools import pairwise
from types import SimpleNamespace

from ..errors import QrelkitError, StepAside

TYPE_CHECKING = False  # typing costs this path's start-up a few milliseconds
if TYPE_CHECKING:
    from typing import Any

#: Each file is read whole: at most this many bytes (the fast path's one block, ``NATIVE_BLOCK_BYTES``).
MAX_BYTES = 4 << 20

#: The measures computed here; any other selected measure steps aside.
LEAN_MEASURES = frozenset(
    {
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
        "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "gm_bpref", "Rprec_mult", "utility",
        "11pt_avg", "ndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
        "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "unj",
    }
)  # fmt: skip

NONPOOL, UNJUDGED, MIN_GEO_MEAN = -1, -2, 0.00001  # as engine/trec_kernels.py

#: Scores ranked in single precision: ``TREC_EVAL_CONVENTIONS.precision == "single"`` (trec_eval 10 ranks
#: in double); its module loads numpy, so ``tests/evaluation/test_trec_lean.py`` holds the two together.
SINGLE = False
_RESET_FOR_STAND_IN = ("num_ret", "utility", "unj")  # trec_eval.py's, of the measures here


def lean_argv(argv: list[str]) -> SimpleNamespace:
    """What ``qrelkit trec_eval ARGV`` prints (as :func:`lean_trec_eval`), for arguments made only of the
    short options of :data:`~qrelkit.evaluation.trec_options.OPTIONS` (each a token of its own or with its
    value attached, ``-mMEASURE``; a whole number in plain digits; each option but ``-m`` once) and the two
    files; anything else (``--help``, long options, combined flags, a value beginning with ``-``) steps
    aside to the click command, which is built from the same table."""
    from .trec_options import ARGUMENTS, OPTIONS, trec_options

    short = {o.flag: o for o in OPTIONS if o.short}
    values: dict[str, Any] = {}
    files: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        option = short.get(arg[:2])
        if option is not None and option.type == "flag":
            if len(arg) > 2:
                raise StepAside  # combined flags: click's
            values[option.dest] = True
        elif option is not None:
            if len(arg) > 2:
                value = arg[2:]
            elif i < len(argv):
                value, i = argv[i], i + 1
            else:
                raise StepAside
            if value.startswith("-"):
                raise StepAside
            if option.multiple:
                values.setdefault(option.dest, []).append(value)
            elif option.dest in values or not (value.isascii() and value.isdigit()):
                raise StepAside  # given twice, or not plainly digits: click decides
            else:
                values[option.dest] = int(value)
        elif arg.startswith("-") or not arg:
            raise StepAside
        else:
            files.append(arg)
    if len(files) != len(ARGUMENTS):
        raise StepAside
    out = lean_trec_eval(*files, **trec_options(values))
    if out is None:
        raise StepAside
    return out


def lean_trec_eval(
    qrels_path: str,
    run_path: str,
    *,
    per_query: bool = False,
    complete: bool = False,
    judged_only: bool = False,
    summary: bool = True,
    rel_level: int = 1,
    max_per_topic: int | None = None,
    num_docs: int = 0,
    measures: tuple[str, ...] = (),
    trec_eval_parsing: bool = False,
) -> SimpleNamespace | None:
    """What :func:`~qrelkit.evaluation.trec_eval.trec_eval_files` returns for these options (those of
    :class:`~qrelkit.evaluation.trec_eval.TrecOptions`), for :mod:`qrelkit.report.trec_eval` to print; or
    ``None`` when this path does not take them."""
    try:
        return lean_output(
            qrels_path, run_path, per_query, complete, judged_only, summary, rel_level, max_per_topic,
            num_docs, measures, trec_eval_parsing,
        )  # fmt: skip
    except StepAside:
        return None


def lean_output(
    qrels_path: str,
    run_path: str,
    per_query: bool,
    complete: bool,
    judged_only: bool,
    summary: bool,
    rel_level: int,
    max_per_topic: int | None,
    num_docs: int,
    measures: tuple[str, ...],
    trec_eval_parsing: bool = False,
) -> SimpleNamespace:
    """What :func:`~qrelkit.evaluation.trec_eval.trec_eval_files` returns (``query_ids``, ``run_id``,
    ``options``, ``lines``; values as lists), or :class:`StepAside`."""
    # long: the options' checks, then the lists and the summaries in trec_eval.evaluate_lists' order
    from ..measures.trec_names import MAX_CUTOFF, select

    if trec_eval_parsing or not 0 <= rel_level < 1 << 31 or abs(num_docs) > 2**53:
        raise StepAside  # -l beyond 32 bits: the numpy path's 64-bit integers decide
    if max_per_topic is not None and max_per_topic > MAX_CUTOFF:
        raise StepAside
    try:
        selected = select(list(measures))
    except QrelkitError:
        raise StepAside from None
    names = {m.name for m in selected}
    if not names <= LEAN_MEASURES:
        raise StepAside
    lists = _lists(qrels_path, run_path, judged_only, max_per_topic, rel_level)
    if (any(lists.stand_in) and not complete) or not any(lists.levels[0]):
        raise StepAside  # trec_eval stops at a query (trec_eval.first_fault): the usual path prints that
    options = SimpleNamespace(per_query=per_query, summary=summary)
    out = SimpleNamespace(query_ids=lists.query_ids, run_id=lists.name, options=options, lines=[])
    nq = lists.n
    for m in selected:
        if m.kind == "runid":
            out.lines.append(("runid", "runid", None, lists.name))
            continue
        if m.kind == "num_q":
            out.lines.append(("num_q", "long", None, nq))
            continue
        for name, values in _measure_values(lists, m, num_docs):
            if m.kind == "string":
                strings = ["" if s else v for v, s in zip(values, lists.stand_in, strict=True)]
                out.lines.append((name, "string", strings, None))
                continue
            if m.name in _RESET_FOR_STAND_IN:
                values = [0.0 if s else v for v, s in zip(values, lists.stand_in, strict=True)]
            total = 0.0
            for v in values:  # in query order, as trec_eval adds them
                total += v
            if m.kind == "gm":
                out.lines.append((name, "double", None, math.exp(total / nq) if nq else 0.0))
            elif m.kind == "long":
                if m.name == "num_rel" and complete:  # m_num_rel.c: every judgment graded above 0
                    total = float(sum(sum(row[1:]) for row in lists.levels))
                out.lines.append((name, "long", values, total))
            else:
                out.lines.append((name, "double", values, total / nq if nq else total))
    return out


# ------------------------------------------------------------------------------------------- reading


def _read(path: str, kind: str) -> bytes:
    """A small clean ASCII TREC file's bytes, ending with a newline, as the fast path's block; or
    :class:`StepAside`."""
    from pathlib import Path

    from .._typing import detect_format

    where = Path(path)
    if detect_format(where) != "trec":
        raise StepAside
    try:
        if not where.is_file() or where.stat().st_size > MAX_BYTES:
            raise StepAside
        from ..formats.trec.common import check_trec_input, first_long_line

        check_trec_input(where, kind)
        stored = where.read_bytes()
    except (OSError, QrelkitError):
        raise StepAside from None
    if len(stored) > MAX_BYTES or stored[:2] == b"\x1f\x8b" or not stored.isascii():
        raise StepAside
    if first_long_line(stored) is not None:
        raise StepAside
    return stored + b"\n" if stored[stored.rfind(b"\n") + 1 :] else stored


def _judged_rows(judged: memoryview) -> list[int]:
    """The rows whose judgment index is not -1, in order: found by the top byte of each little-endian
    int64 (0 for an index, 0xff for -1), a search per judged row instead of a step per row."""
    if sys.byteorder != "little":
        return [i for i, j in enumerate(judged.tolist()) if j >= 0]
    top = bytes(judged.cast("B")[7::8])
    out, i = [], top.find(0)
    while i >= 0:
        out.append(i)
        i = top.find(0, i + 1)
    return out


def _ids(raw: Any, n: int) -> list[bytes]:
    off = raw.ints("q_off", n + 1).tolist()
    data = raw.data("q_data", off[-1] if off else 0)
    return [data[a:b] for a, b in pairwise(off)]


def _lists(qrels_path: str, run_path: str, judged_only: bool, max_per_topic: int | None, rel_level: int):
    """trec_fast.fast_rel_lists' sparse lists, per query, with trec_eval's stand-in for the judged queries
    missing from the run (trec_eval.trec_eval_files)."""
    # long: the judgments' table, the run's ranking joined with it, then -M and -J, as trec_fast does
    from pathlib import Path

    from .. import _native as nat

    if not nat.built():
        raise StepAside
    qrels_text = _read(qrels_path, "qrels")
    run_text = _read(run_path, "run")
    qraw = nat.raw_scan_qrels(qrels_text, True)
    if qraw is None:
        raise StepAside
    rraw = None
    try:
        rows = qraw.kept
        if not rows:
            raise StepAside
        qids = _ids(qraw, rows)
        vocabulary = sorted(set(qids))
        code = {q: i for i, q in enumerate(vocabulary)}
        n = len(vocabulary)
        qcode = [code[q] for q in qids]
        grade = qraw.ints("rank", rows).tolist()
        order = sorted(range(rows), key=qcode.__getitem__)
        counts = [0] * n
        for c in qcode:
            counts[c] += 1
        first = [0]
        for c in counts:
            first.append(first[-1] + c)
        first_a, order_a = nat.int64s(first), nat.int64s(order)
        if nat.raw_judged_dups(n, first_a, order_a, qraw):
            raise StepAside  # a judgment given twice: the reader reports it
        judged_grades = [g for g in grade if g >= 0]
        top = max(judged_grades) + 1 if judged_grades else 1
        if top > 1 << 10:  # trec_fast.MAX_LEVELS
            raise StepAside
        levels = [[0] * top for _ in range(n)]
        for c, g in zip(qcode, grade, strict=True):
            if g >= 0:
                levels[c][g] += 1
        rraw = nat.raw_scan_run(run_text, True)
        if rraw is None:
            raise StepAside
        groups = rraw.groups
        group_first = rraw.ints("group_first", groups).tolist()
        q_off = rraw.ints("q_off", rraw.kept + 1)
        q_data = rraw.data("q_data", q_off[-1])
        heads = [q_data[q_off[g] : q_off[g + 1]] for g in group_first]
        if not heads or len(set(heads)) < len(heads):
            raise StepAside  # an empty run, or a query that comes back: the readers decide
        group_qcode = [code.get(h, -1) for h in heads]
        pos_l, judged_l = nat.raw_trec_rank(rraw, nat.int64s(group_qcode), SINGLE, first_a, order_a, qraw)
        hits = _judged_rows(judged_l)
        tag = run_text[rraw.tag_start : rraw.tag_start + rraw.tag_len] if rraw.tag_start >= 0 else b""
        bounds = [*group_first, rraw.kept]
    finally:
        qraw.free()
        if rraw is not None:
            rraw.free()
    num_ret = [0] * n
    in_run = [False] * n
    ranked: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    cut = None if max_per_topic is None else max(max_per_topic, 0)
    h = 0
    for g, q in enumerate(group_qcode):
        a, b = bounds[g], bounds[g + 1]
        if q < 0:
            continue
        in_run[q] = True
        num_ret[q] = b - a if cut is None else min(b - a, cut)
        found = ranked[q]
        h = bisect_left(hits, a, h)
        while h < len(hits) and hits[h] < b:
            i = hits[h]
            h += 1
            if cut is None or pos_l[i] < cut:
                gr = grade[judged_l[i]]
                found.append((pos_l[i], gr if gr >= 0 else UNJUDGED))
        found.sort()
    if judged_only:  # only judged documents are ranked: ranks among them
        ranked = [[(p, r) for p, (_, r) in enumerate(x for x in found if x[1] >= 0)] for found in ranked]
        num_ret = [len(found) for found in ranked]
    stand_in = [not s for s in in_run]
    if any(stand_in):  # trec_eval's stand-in ranking: one document that is not judged (none under -J, -M 0)
        shown = 0 if judged_only or (cut is not None and cut <= 0) else 1
        num_ret = [shown if s else r for r, s in zip(num_ret, stand_in, strict=True)]
    return _Lists(
        query_ids=[q.decode() for q in vocabulary],
        name=tag.decode() or Path(run_path).stem,
        ranked=ranked,
        num_ret=num_ret,
        levels=levels,
        rel_level=rel_level,
        stand_in=stand_in,
    )


# ------------------------------------------------------------------------------------------ the lists


class _Lists:
    """The sparse lists of :class:`qrelkit.engine.trec_kernels.RelLists`, a list per query: ``pos`` (0-based
    ranks, ascending) and ``rel`` (codes) of the returned documents in the judgments."""

    def __init__(self, *, query_ids, name, ranked, num_ret, levels, rel_level, stand_in):
        self.query_ids, self.name, self.stand_in = query_ids, name, stand_in
        self.n = len(query_ids)
        self.pos = [[p for p, _ in rows] for rows in ranked]
        self.rel = [[r for _, r in rows] for rows in ranked]
        self.num_ret, self.levels, self.rel_level = num_ret, levels, rel_level
        cut = max(rel_level, 0)
        self.num_rel = [sum(row[cut:]) for row in levels]
        self.num_nonrel = [sum(row[:cut]) for row in levels]
        self.is_rel = [[r >= rel_level for r in rels] for rels in self.rel]
        self.rel_so_far = [_running(flags) for flags in self.is_rel]
        nonrel = [[r >= 0 and r < rel_level for r in rels] for rels in self.rel]
        self.nonrel_so_far = [_running(flags) for flags in nonrel]
        self.num_rel_ret = [run[-1] if run else 0 for run in self.rel_so_far]
        self.rows = sum(len(p) for p in self.pos)
        self._held: dict[Any, Any] = {}

    def rows_before(self, q: int, k: int) -> int:
        """Rows of query q in its first k ranks (RelLists.rows_before)."""
        return bisect_left(self.pos[q], min(max(k, 0), self.num_ret[q]))

    def hits(self, q: int, k: int) -> int:
        """Relevant rows in query q's first k ranks (``in_top(is_rel, k)``)."""
        j = self.rows_before(q, k)
        return self.rel_so_far[q][j - 1] if j > 0 else 0

    def prefix(self, terms: list[list[float]]) -> list[list[float]]:
        """RelLists.prefix: each query's running sums, on its grid (added rank by rank within the query)
        or by difference of one running sum over every row, as the kernels choose."""
        width = max((len(t) for t in terms), default=0)
        return _prefix(terms, self.n * width <= 4 * self.rows + 1_000_000)

    def held(self, key: Any, make: Any) -> Any:
        if key not in self._held:
            self._held[key] = make()
        return self._held[key]

    @property
    def ap_prefix(self) -> list[list[float]]:
        return self.held("ap", lambda: self.prefix(self.ap_terms))

    @property
    def ap_terms(self) -> list[list[float]]:
        def terms(q: int) -> list[float]:
            return [
                s / (p + 1.0) if r else 0.0
                for s, p, r in zip(self.rel_so_far[q], self.pos[q], self.is_rel[q], strict=True)
            ]

        return self.held("ap_terms", lambda: [terms(q) for q in range(self.n)])

    @property
    def cut_dcg_prefix(self) -> list[list[float]]:
        def terms(q: int) -> list[float]:
            return [
                (float(r) / math.log2(p + 2.0)) if r > 0 else 0.0
                for r, p in zip(self.rel[q], self.pos[q], strict=True)
            ]

        return self.held("dcg", lambda: self.prefix([terms(q) for q in range(self.n)]))

    @property
    def cut_ideal(self) -> list[list[float]]:
        """ndcg_cut's ideal DCG prefix per query (_Ideal.dcg_prefix with the grades as gains)."""

        def make() -> list[list[float]]:
            top = len(self.levels[0])
            table = [float(g) for g in range(top)]
            return _ideal_prefix(self, table)

        return self.held("ideal", make)


def _running(flags: list[bool]) -> list[int]:
    out, c = [], 0
    for f in flags:
        c += f
        out.append(c)
    return out


def _prefix(terms: list[list[float]], grid: bool) -> list[list[float]]:
    out = []
    if grid:
        for t in terms:
            s, row = 0.0, list[float]()
            for v in t:
                s = s + v if row else v
                row.append(s)
            out.append(row)
        return out
    c = 0.0
    started = False
    for t in terms:  # one running sum over every row (np.cumsum), less each query's start
        base = c
        row = []
        for v in t:
            c = c + v if started else v
            started = True
            row.append(c - base)
        out.append(row)
    return out


def _ideal_order(table: list[float]) -> list[int]:
    return [g for g in sorted(range(len(table)), key=lambda g: -table[g]) if table[g] > 0]


def _ideal_gains(lists: _Lists, table: list[float]) -> list[list[float]]:
    order = _ideal_order(table)
    return [[table[g] for g in order for _ in range(lists.levels[q][g])] for q in range(lists.n)]


def _ideal_prefix(lists: _Lists, table: list[float]) -> list[list[float]]:
    gains = _ideal_gains(lists, table)
    terms = [[g / math.log2(p + 2.0) for p, g in enumerate(row)] for row in gains]
    width = max((len(t) for t in terms), default=0)
    return _prefix(terms, lists.n * width <= 4 * sum(len(t) for t in terms) + 1_000_000)


def _div(num: float, den: float) -> float:
    return float(num) / float(den) if den != 0 else 0.0


def _at(prefix: list[float], j: int) -> float:
    return prefix[j - 1] if j > 0 else 0.0


# ------------------------------------------------------------------------------------------ measures


def _measure_values(L: _Lists, m: Any, num_docs: int) -> list[tuple[str, list[Any]]]:
    """trec_eval.measure_values, for the measures of :data:`LEAN_MEASURES`."""
    names = m.printed_names()
    single = {
        "num_ret": _num_ret, "num_rel": _num_rel, "num_rel_ret": _num_rel_ret, "map": _ap,
        "gm_map": _gm_ap_log, "Rprec": _rprec, "bpref": _bpref, "recip_rank": _recip_rank,
        "gm_bpref": _gm_bpref_log, "set_P": _set_p, "set_relative_P": _set_relative_p,
        "set_recall": _set_recall, "set_map": _set_map, "num_nonrel_judged_ret": _num_nonrel_judged_ret,
    }  # fmt: skip
    if m.name in single:
        return [(names[0], single[m.name](L))]
    cut = {
        "P": _precision, "recall": _recall, "ndcg_cut": _ndcg_cut, "map_cut": _map_cut,
        "relative_P": _relative_precision, "success": _success, "unj": _unjudged,
    }  # fmt: skip
    if m.name in cut:
        return [(name, cut[m.name](L, k)) for name, k in zip(names, m.cutoffs, strict=True)]
    if m.name == "iprec_at_recall":
        values = _iprec_at_recall(L, m.fractions)
        return [(k, _nan_on_empty(L, v, [f])) for k, v, f in zip(names, values, m.fractions, strict=True)]
    if m.name == "Rprec_mult":
        return [(name, _rprec_mult(L, v)) for name, v in zip(names, m.fractions, strict=True)]
    if m.name == "utility":
        a, b, c, d = m.values
        return [(names[0], _utility(L, a, b, c, d, num_docs))]
    if m.name == "11pt_avg":
        return [(names[0], _nan_on_empty(L, _pt_avg(L, m.values), m.values))]
    if m.name == "set_F":
        return [(names[0], _set_f(L, m.values[0]))]
    if m.name == "ndcg":
        return [(names[0], _ndcg(L, m))]
    if m.name == "relstring":
        return [(names[0], _relstring(L, int(m.values[0])))]
    raise StepAside  # not in LEAN_MEASURES


def _num_ret(L: _Lists) -> list[float]:
    return [float(v) for v in L.num_ret]


def _num_rel(L: _Lists) -> list[float]:
    return [float(v) for v in L.num_rel]


def _num_rel_ret(L: _Lists) -> list[float]:
    return [float(v) for v in L.num_rel_ret]


def _num_nonrel_judged_ret(L: _Lists) -> list[float]:
    out = []
    for q in range(L.n):
        j = L.rows_before(q, L.num_ret[q])
        out.append(float(_at(L.nonrel_so_far[q], j)))
    return out


def _ap(L: _Lists) -> list[float]:
    out = []
    for q in range(L.n):
        total = 0.0
        for t, r in zip(L.ap_terms[q], L.is_rel[q], strict=True):
            if r:
                total += t
        out.append(_div(total, L.num_rel[q]))
    return out


def _map_cut(L: _Lists, k: int) -> list[float]:
    return [_div(_at(L.ap_prefix[q], L.rows_before(q, k)), L.num_rel[q]) for q in range(L.n)]


def _gm_ap_log(L: _Lists) -> list[float]:
    return [math.log(max(v, MIN_GEO_MEAN)) for v in _ap(L)]


def _rprec(L: _Lists) -> list[float]:
    out = []
    for q in range(L.n):
        look = min(L.num_ret[q], L.num_rel[q])
        out.append(_div(L.hits(q, look), 0 if look == 0 else L.num_rel[q]))
    return out


def _recip_rank(L: _Lists) -> list[float]:
    out = []
    for q in range(L.n):
        first = next((p for p, r in zip(L.pos[q], L.is_rel[q], strict=True) if r), None)
        out.append(0.0 if first is None else 1.0 / (first + 1.0))
    return out


def _precision(L: _Lists, k: int) -> list[float]:
    return [L.hits(q, k) / float(k) for q in range(L.n)]


def _recall(L: _Lists, k: int) -> list[float]:
    return [_div(L.hits(q, k), L.num_rel[q]) for q in range(L.n)]


def _relative_precision(L: _Lists, k: int) -> list[float]:
    return [_div(L.hits(q, k), min(L.num_rel[q], k)) for q in range(L.n)]


def _success(L: _Lists, k: int) -> list[float]:
    return [1.0 if L.hits(q, k) > 0 else 0.0 for q in range(L.n)]


def _unjudged(L: _Lists, k: int) -> list[float]:
    out = []
    for q in range(L.n):
        shown = min(max(k, 0), L.num_ret[q])
        judged = sum(1 for p, r in zip(L.pos[q], L.rel[q], strict=True) if r >= 0 and p < k)
        out.append((shown - judged) / float(k))
    return out


def _rprec_mult(L: _Lists, mult: float) -> list[float]:
    out = []
    for q in range(L.n):
        cut = math.floor(mult * float(L.num_rel[q]) + 0.9)
        out.append(_div(L.hits(q, cut), cut))
    return out


def _bpref(L: _Lists) -> list[float]:
    out = []
    for q in range(L.n):
        R, N = float(L.num_rel[q]), float(L.num_nonrel[q])
        total = 0.0
        for r, above in zip(L.is_rel[q], L.nonrel_so_far[q], strict=True):
            if r:
                total += 1.0 - min(float(above), R) / min(N, R) if above > 0 else 1.0
        out.append(_div(total, L.num_rel[q]))
    return out


def _gm_bpref_log(L: _Lists) -> list[float]:
    return [math.log(max(v, MIN_GEO_MEAN)) for v in _bpref(L)]


def _interpolated(L: _Lists, q: int) -> list[float]:
    """trec_kernels._interpolated_at_relevant for one query: the highest precision at or below each
    relevant rank."""
    prec = [s / (p + 1.0) for s, p, r in zip(L.rel_so_far[q], L.pos[q], L.is_rel[q], strict=True) if r]
    best = -1.0
    for i in range(len(prec) - 1, -1, -1):
        best = prec[i] if prec[i] > best else best
        prec[i] = best
    return prec


def _lround(x: float) -> int:
    if x >= 0:
        f = math.floor(x)
        return f + (x - f >= 0.5)
    f = math.floor(-x)
    return -f - (-x - f >= 0.5)


def _iprec_at_recall(L: _Lists, levels: list[float]) -> list[list[float]]:
    interp = [_interpolated(L, q) for q in range(L.n)]
    out = []
    for level in levels:
        values = []
        for q in range(L.n):
            nrr = L.num_rel_ret[q]
            t = _lround(level * float(L.num_rel[q]))
            values.append(interp[q][max(t, 1) - 1] if t <= nrr and nrr > 0 else 0.0)
        out.append(values)
    return out


def _pt_avg(L: _Lists, levels: list[float]) -> list[float]:
    values = _iprec_at_recall(L, sorted(levels))
    out = []
    for q in range(L.n):
        total = 0.0
        for v in reversed(values):
            total = total + v[q]
        out.append(total / float(len(levels)))
    return out


def _nan_on_empty(L: _Lists, values: list[float], levels: list[float]) -> list[float]:
    """trec_eval._nan_on_empty."""
    out = []
    for q, v in enumerate(values):
        R = float(L.num_rel[q])
        empty = L.num_ret[q] == 0 and any(float(level) * R < 0.5 for level in levels)
        out.append(math.nan if empty else v)
    return out


def _set_p(L: _Lists) -> list[float]:
    return [_div(L.num_rel_ret[q], L.num_ret[q]) for q in range(L.n)]


def _set_recall(L: _Lists) -> list[float]:
    return [_div(L.num_rel_ret[q], L.num_rel[q]) for q in range(L.n)]


def _set_relative_p(L: _Lists) -> list[float]:
    out = []
    for q in range(L.n):
        ret, rel = L.num_ret[q], L.num_rel[q]
        out.append(_div(L.num_rel_ret[q], min(ret, rel) if ret > 0 and rel > 0 else 0))
    return out


def _set_map(L: _Lists) -> list[float]:
    out = []
    for q in range(L.n):
        nrr = float(L.num_rel_ret[q])
        out.append(_div(nrr * nrr, float(L.num_ret[q]) * float(L.num_rel[q])))
    return out


def _set_f(L: _Lists, beta: float) -> list[float]:
    out = []
    for q in range(L.n):
        nrr = L.num_rel_ret[q]
        if nrr > 0:
            P = nrr / L.num_ret[q]
            R = nrr / L.num_rel[q]
            out.append((beta + 1.0) * P * R / (beta * P + R))
        else:
            out.append(0.0)
    return out


def _utility(L: _Lists, a: float, b: float, c: float, d: float, num_docs: int) -> list[float]:
    out = []
    for q in range(L.n):
        nrr, nret, R = L.num_rel_ret[q], L.num_ret[q], L.num_rel[q]
        out.append(a * nrr + b * (nret - nrr) + c * (R - nrr) + d * (num_docs + nrr - nret - R))
    return out


def _ndcg_cut(L: _Lists, k: int) -> list[float]:
    out = []
    for q in range(L.n):
        num = _at(L.cut_dcg_prefix[q], L.rows_before(q, k))
        ideal = L.cut_ideal[q]
        den = _at(ideal, min(k, len(ideal)))
        out.append(num / den if den > 0 else num)
    return out


def _ndcg(L: _Lists, m: Any) -> list[float]:
    """m_ndcg.c with trec_eval.measure_values' gains (grades, and any ``grade=gain`` given)."""
    top = len(L.levels[0])
    table = [float(g) for g in range(top)]
    for key, value in m.pairs:
        if key.lstrip("+-").isdigit():
            if not math.isfinite(value):
                raise StepAside
            if 0 <= int(key) < top:
                table[int(key)] = value
    gains = _ideal_gains(L, table)
    out = []
    for q in range(L.n):
        num = 0.0
        for r, p in zip(L.rel[q], L.pos[q], strict=True):
            g = table[r] if r >= 0 else 0.0
            num += g / math.log2(p + 2.0) if g != 0 else 0.0
        den = 0.0
        for p, g in enumerate(gains[q]):
            den += g / math.log2(p + 2.0)
        out.append(_div(num, den))
    return out


def _relstring(L: _Lists, length: int) -> list[str]:
    width = max(length, 0)
    out = []
    for q in range(L.n):
        chars = ["-"] * min(L.num_ret[q], width)
        for p, r in zip(L.pos[q], L.rel[q], strict=True):
            if p < len(chars):
                chars[p] = ">" if r > 9 else str(r) if r >= 0 else "." if r == UNJUDGED else "<"
        out.append("".join(chars))
    return out
