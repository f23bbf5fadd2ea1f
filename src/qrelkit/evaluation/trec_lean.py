"""``qrelkit trec_eval`` on small files without numpy: the command's start-up is most of its time at TREC
size (43,000 lines), and numpy's import is most of that.

:func:`lean_trec_eval` is the ``trec_lean`` reader of the ``trec_eval`` route
(:data:`qrelkit.evaluation.routes.ROUTES`, second, after the one native call of
:mod:`qrelkit.evaluation.trec_native`): :func:`lean_route` runs the route's readers that need no
numpy, for ``qrelkit trec_eval`` (through click, :mod:`qrelkit.cli.trec_eval`) and, before click loads, for
``python -m qrelkit trec_eval`` / the ``qrelkit`` command (:func:`qrelkit.__main__.run`, through
:func:`lean_argv`, which reads only the options it fully understands). It takes what :mod:`qrelkit.evaluation.trec_fast` takes (both files read whole by the native
scanner, through ctypes arrays instead of numpy ones), forms the same sparse ranked lists in plain Python
(:class:`qrelkit.engine.trec.lean_kernels.Lists`) and computes the measures with the lean engine of
:data:`qrelkit.engine.trec.registry.TREC_REGISTRY` (:mod:`qrelkit.engine.trec.lean_kernels`: the arithmetic
of :mod:`qrelkit.engine.trec.kernels` in the same order), so the floats are the same and so are the printed
bytes (:mod:`qrelkit.report.trec_eval` prints both).

Everything else steps aside (:class:`~qrelkit.errors.StepAside`) to the usual path, which reports every
error: a file over :data:`MAX_BYTES`, gzipped, not ASCII, refused by the scanner; a judged query missing
from the run without ``-c``; a first query with only negative grades; ``-l`` below 0; a measure the lean engine
does not have (``lean=False`` in the registry: every measure of ``all_trec`` has one), or a value the numpy
engine carries as an infinity or a NaN, or G's fractional gains (the lean kernels raise it); ``--trec-eval-parsing``. ``tests/property/test_trec_lean.py``
compares the two paths' floats and bytes.
"""

from __future__ import annotations

import sys
from itertools import pairwise
from types import SimpleNamespace

from ..errors import QrelkitError, StepAside
from .trec_native import MAX_BYTES  # each file is read whole: at most this many bytes

TYPE_CHECKING = False  # typing costs this path's start-up a few milliseconds
if TYPE_CHECKING:
    from typing import Any

UNJUDGED = -2  # as engine/trec/kernels.py

#: Scores ranked in single precision: ``TREC_EVAL_CONVENTIONS.precision == "single"`` (trec_eval 10 ranks
#: in double); its module loads numpy, so ``tests/evaluation/test_trec_lean.py`` holds the two together.
SINGLE = False


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
    out = lean_route(*files, **trec_options(values))
    if out is None:
        raise StepAside
    return out


def lean_route(qrels_path: str, run_path: str, **options: Any) -> SimpleNamespace | None:
    """The ``trec_eval`` route's readers that need no numpy (:data:`qrelkit.evaluation.routes.ROUTES`:
    those before the first of :func:`~qrelkit.evaluation.trec_eval.trec_eval_files`' readers), in its
    order, until one takes the files: what it returns, or ``None`` for ``trec_eval_files`` to read them.
    ``options`` are :class:`~qrelkit.evaluation.trec_eval.TrecOptions`' keywords."""
    from .routes import ROUTES

    for reader in ROUTES["trec_eval"]:
        if reader not in LIGHT_READERS:
            return None
        out = LIGHT_READERS[reader](qrels_path, run_path, **options)
        if out is not None:
            return out
    return None


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


def _native_trec_eval(qrels_path: str, run_path: str, **options: Any) -> SimpleNamespace | None:
    from .trec_native import native_trec_eval

    return native_trec_eval(qrels_path, run_path, **options)


#: The readers of the ``trec_eval`` route that need no numpy, by the route's names.
LIGHT_READERS = {"trec_native": _native_trec_eval, "trec_lean": lean_trec_eval}


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
    import math

    from ..engine.trec.registry import LEAN, LEAN_MEASURES, TREC_REGISTRY, measure_values
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
        for name, values in measure_values(LEAN, lists, m, num_docs):
            if m.kind == "string":
                strings = ["" if s else v for v, s in zip(values, lists.stand_in, strict=True)]
                out.lines.append((name, "string", strings, None))
                continue
            if TREC_REGISTRY[m.name].reset_for_stand_in:
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
    import os
    import stat

    from .._typing import detect_format

    if detect_format(path) != "trec":
        raise StepAside
    try:
        info = os.stat(path)  # (pathlib is not loaded on this path: several milliseconds of its start-up)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            raise StepAside
        from ..formats.trec.common import check_trec_input, first_long_line

        check_trec_input(path, kind)
        with open(path, "rb") as handle:
            stored = handle.read()
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
    from bisect import bisect_left

    from .. import _native as nat
    from ..engine.trec.lean_kernels import Lists

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
    name = tag.decode()
    if not name:  # a run without a tag is named after its file
        from pathlib import Path

        name = Path(run_path).stem
    return Lists(
        query_ids=[q.decode() for q in vocabulary],
        name=name,
        ranked=ranked,
        num_ret=num_ret,
        levels=levels,
        rel_level=rel_level,
        stand_in=stand_in,
    )
