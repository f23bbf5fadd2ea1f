"""``qrelkit trec_eval`` on small clean files in one native call: the ``trec_native`` reader of the
``trec_eval`` route (:data:`qrelkit.evaluation.routes.ROUTES`, first, before ``trec_lean``).

At TREC size (a run of 53 queries x 100 documents) the command's time is the interpreter's start, its
imports and the measures in plain Python (``benchmarks/startup_floor.py``). :func:`native_trec_eval` reads
both files whole (as :mod:`qrelkit.evaluation.trec_lean` does) and hands them to ``qk_trec_eval``
(``_native/trec_eval.c``), which scans, ranks and joins them with the scanner's own functions, forms each
query's sparse list, computes every selected measure and lays out the text trec_eval 10 prints: the
lean path (:mod:`qrelkit.evaluation.trec_lean`, :mod:`qrelkit.engine.trec.lean_kernels`,
:mod:`qrelkit.report.trec_eval`) statement for statement, so the bytes are the same
(``tests/property/test_trec_native.py`` compares the two paths on generated files).

It takes the measures of ``-m`` given by name or nickname with their default parameters (``-m all_trec``,
``-m official``, ``-m ndcg``, none) and the cutoff measures with whole-number cutoffs (``-m ndcg_cut.10``,
``-m P.5,10``); a measure with other parameters (``-m ndcg.1=3``, ``-m iprec_at_recall.0.5``) goes to the
lean path. It leaves
to the lean path, which says why or takes them, everything the lean path would step aside on, and
anything the C code refuses: a file that is not plain ASCII TREC text within :data:`MAX_BYTES`, a NUL byte
or a line past :data:`MAX_LINE_BYTES`, a judgment given twice, a query that comes back in the run, a
query judged but not in the run without ``-c``, a first query without judgments, a division by zero the
numpy engine carries as an infinity, a run without a tag (the lean path names it after its file).

Imports :mod:`qrelkit.measures.trec_names` (the names) and the native library (with ctypes), nothing else.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

#: Each file is read whole: at most this many bytes (the fast path's one block, ``NATIVE_BLOCK_BYTES``).
MAX_BYTES = 4 << 20

#: A longer line is not TREC text (:data:`qrelkit.formats.trec.common.MAX_LINE_BYTES`, which
#: ``tests/evaluation/test_trec_native.py`` holds equal; that module is not loaded on this path).
MAX_LINE_BYTES = 1 << 20

#: ``qk_trec_eval``'s option flags.
PER_QUERY, COMPLETE, JUDGED_ONLY, SUMMARY = 1, 2, 4, 8


def native_trec_eval(
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
    """What ``qrelkit trec_eval`` prints for these options (those of
    :class:`~qrelkit.evaluation.trec_eval.TrecOptions`), laid out (``text``); or ``None`` when this
    reader does not take them."""
    from ..measures.trec_names import MAX_CUTOFF

    if trec_eval_parsing or not 0 <= rel_level < 1 << 31 or abs(num_docs) > 2**53:
        return None
    if max_per_topic is not None and max_per_topic > MAX_CUTOFF:
        return None
    from .. import _native as nat

    if not nat.built():
        return None
    selection = measure_selection(measures, nat.trec_eval_measures())
    if selection is None:
        return None
    mask, cuts = selection
    qrels, run = _read(qrels_path), _read(run_path)
    if qrels is None or run is None:
        return None
    flags = (
        (PER_QUERY if per_query else 0)
        | (COMPLETE if complete else 0)
        | (JUDGED_ONLY if judged_only else 0)
        | (SUMMARY if summary else 0)
    )
    cut = -1 if max_per_topic is None else max(max_per_topic, 0)
    text = nat.trec_eval_text(qrels, run, mask, cuts, flags, rel_level, cut, num_docs, MAX_LINE_BYTES)
    if text is None:
        return None
    return SimpleNamespace(text=text.decode("ascii"))


#: The measures with whole-number cutoffs, in the order ``qk_trec_eval`` takes their cutoffs (``C_P`` ..
#: ``C_UNJ`` in ``qkscan.h``): trec_names' measures of the ``"cut"`` kind, in its order.
CUT_MEASURES = ("P", "recall", "ndcg_cut", "map_cut", "relative_P", "success", "unj")


def measure_selection(args: tuple[str, ...] | list[str], known: list[str]) -> tuple[int, list[int]] | None:
    """``qk_trec_eval``'s mask and cutoffs for ``-m`` arguments (``official`` when none), marked as
    :func:`qrelkit.measures.trec_names.select` marks them: each argument a measure's name or a nickname,
    or a measure of :data:`CUT_MEASURES` with its cutoffs in plain digits (``ndcg_cut.10``, ``P.5,10``;
    the first setting of a measure wins). Bit i of the mask is ``known[i]``, the C code's measures in its
    order (``_native.trec_eval_measures()``; ``tests/evaluation/test_trec_native.py`` holds it equal to
    ``trec_names.ORDER``); the cutoffs are, for each of :data:`CUT_MEASURES`, their count (0: the
    defaults) and the cutoffs ascending. ``None`` for anything else (other parameters, a cutoff of 0 or
    given twice, an unknown name, a measure the C code does not compute): the lean path and ``select``
    decide."""
    from ..measures.trec_names import KIND, MAX_CUTOFF, NICKNAMES

    marked: set[str] = set()
    given: dict[str, list[int]] = {}
    for arg in args or ("official",):
        name, dot, rest = arg.partition(".")
        if dot:
            parts = rest.split(",")
            if name not in CUT_MEASURES or not all(
                p.isdigit() and p.isascii() and p[0] != "0" for p in parts
            ):
                return None
            cuts = sorted(int(p) for p in parts)
            if len(set(cuts)) != len(cuts) or cuts[-1] > MAX_CUTOFF:
                return None
            given.setdefault(name, cuts)
            marked.add(name)
        elif name in NICKNAMES:
            marked.update(NICKNAMES[name])
        elif name in KIND:
            marked.add(name)
        else:
            return None
    if not marked <= set(known):
        return None
    mask = 0
    for i, name in enumerate(known):
        if name in marked:
            mask |= 1 << i
    flat: list[int] = []
    for name in CUT_MEASURES:
        cuts = given.get(name, [])
        flat += [len(cuts), *cuts]
    return mask, flat


def _read(path: str) -> bytes | None:
    """A small ASCII TREC file's bytes, ending with a newline (as :func:`qrelkit.evaluation.trec_lean._read`
    reads it; the NUL and long-line checks are the C code's), or ``None``."""
    import stat

    from .._typing import detect_format

    if detect_format(path) != "trec":
        return None
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            return None
        with open(path, "rb") as handle:
            stored = handle.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(stored) > MAX_BYTES or stored[:2] == b"\x1f\x8b" or not stored.isascii():
        return None
    return stored + b"\n" if stored[stored.rfind(b"\n") + 1 :] else stored
