"""The C/W/L family (Moffat et al.) as cwl_eval 1.0.12 computes it: INST, INSQ, BPM, NERR8-11, SDCG.

A C/W/L measure is a user model given by C_i, the probability that a user who has looked at rank i goes
on to rank i + 1. The weight of rank i is W_i = prod_{j < i} C_j / sum_m prod_{j < m} C_m, and the value
is the expected utility per document, sum_i W_i g_i. As in cwl_eval, the ranking is cut or padded with
zero gains to ``depth`` ranks (cwl_eval's ``--max_depth``, 1000 by default), so the sum over m runs to
``depth`` even for a user model that would go on for ever.

Gains: a judged document's grade clipped to [0, max_grade] over max_grade (ir_measures' scaling of
grades for cwl_eval, which reads gains in [0, 1]); an unjudged document is worth 0 (cwl_eval's lower
bound); a grade above ``max_grade`` is refused, as cwl_eval refuses a gain above 1.

The arithmetic is cwl_eval's, step by step (``ruler/measures/cwl_metrics.py``): the C vector in its order
of operations, numpy's ``cumprod`` of C without its last entry, ``1 / sum`` of the products padded with a
leading 1, the products times that weight, and ``np.dot`` of the weights with the gains, query by query
(numpy's ``dot`` of two float64 vectors, as cwl_eval calls it). Squares are the C library's ``pow(x,
2.0)`` (Python's ``math.pow``), as cwl_eval's ``**2.0`` on numpy and Python floats takes them: numpy's
vectorised ``power`` and ``x * x`` differ from it in the last bit for some arguments.

Averaged ties: a C/W/L measure is not linear in the positions' gains. A tied block whose documents have
one gain stands for itself; otherwise the query's value is the mean over every distinct ordering of its
tied blocks (exact), up to :data:`MAX_ORDERINGS` orderings a query; beyond that it is refused with the fix.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import product

import numpy as np

from ...errors import ConventionError
from ...measures.conventions import Conventions
from ...measures.grammar import Measure
from ..encoding.encoded import Encoded, positions

#: The C/W/L families, in the grammar's order.
FAMILIES = ("INST", "INSQ", "BPM", "NERR8", "NERR9", "NERR10", "NERR11", "SDCG")

#: Under averaged ties, the most orderings of one query's tied blocks that are averaged over.
MAX_ORDERINGS = 40320

#: The most cells (queries x depth) held at once: the ranking is cut into groups of queries.
_CELLS = 1 << 21


def grade_gains(grade: np.ndarray, judged: np.ndarray, max_grade: int) -> np.ndarray:
    """cwl_eval's gain per row: the grade clipped at 0, over ``max_grade``; 0 if unjudged."""
    g = np.where(judged, np.maximum(grade.astype(np.float64), 0.0), 0.0)
    if (g > max_grade).any():
        bad = int(g.max())
        raise ConventionError(
            f"grades up to {bad} are above the C/W/L measures' max_grade {max_grade} (gains are grade / max_grade, "
            "at most 1, as cwl_eval reads them)",
            fix=f"set max_grade to at least {bad} (--max-grade {bad}, or INST(max_grade={bad}))",
        )
    out: np.ndarray = g / float(max_grade)
    return out


def _squares(x: np.ndarray) -> np.ndarray:
    """``pow(x, 2.0)`` from the C library for every element (cwl_eval's ``**2.0``)."""
    flat = x.ravel().tolist()
    return np.fromiter(map(math.pow, flat, [2.0] * len(flat)), dtype=np.float64, count=len(flat)).reshape(
        x.shape
    )


def continuation(family: str, params: dict[str, float], gains: np.ndarray) -> np.ndarray:
    """C for every row of ``gains`` (rows x depth), in cwl_eval's order of operations."""
    depth = gains.shape[1]
    rank = np.arange(1, depth + 1, dtype=np.float64)  # cwl_eval's i + 1.0, or rank as a float
    c: np.ndarray
    if family == "INST":  # cwl_inst.py: Ti = T - cg_i; (((i+1) + T + Ti - 1) / ((i+1) + T + Ti))^2
        t = params["T"]
        ti = t - np.cumsum(gains, axis=1)
        base = (rank + t) + ti
        c = _squares((base - 1.0) / base)
    elif family == "INSQ":  # cwl_insq.py: (((i+1) + 2T - 1) / ((i+1) + 2T))^2, the same for every query
        t2 = 2.0 * params["T"]
        one = np.array([math.pow(((r + t2) - 1.0) / (r + t2), 2.0) for r in rank.tolist()])
        c = np.broadcast_to(one, gains.shape)
    elif family == "BPM":  # cwl_bpm.py (static): go on while the gain so far < T and the cost so far < K
        seen = np.cumsum(gains, axis=1) < params["T"]
        cost = rank < params["K"]  # every document costs 1: the cost so far is the rank
        c = (np.logical_and.accumulate(seen, axis=1) & cost).astype(np.float64)
    elif family == "NERR8":  # cwl_nerr.py eq. 8: 1 - g_i for i < k - 1, then 0
        c = np.where(rank < params["k"], 1 - gains, 0.0)
    elif family == "NERR9":  # eq. 9: (rank / (rank + 1)) (1 - g_i) for i < k - 1, then 0
        c = np.where(rank < params["k"], (rank / (rank + 1.0)) * (1.0 - gains), 0.0)
    elif family == "NERR10":  # eq. 10: phi (1 - g_i)
        c = params["p"] * (1 - gains)
    elif family == "NERR11":  # eq. 11: ((rank + 2T - 1) / (rank + 2T))^2 (1 - g_i)
        t2 = 2.0 * params["T"]
        one = np.array([math.pow(((r + t2) - 1.0) / (r + t2), 2.0) for r in rank.tolist()])
        c = one * (1.0 - gains)
    elif family == "SDCG":  # cwl_dcg.py: log2(i + 1) / log2(i + 2) for ranks i < k, math.log's
        k = params["k"]
        one = np.array(
            [math.log(i + 1, 2.0) / math.log(i + 2, 2.0) if i < k else 0.0 for i in range(1, depth + 1)]
        )
        c = np.broadcast_to(one, gains.shape)
    elif family == "P":  # cwl_precision.py: ones(k - 1), padded with zeros to the depth
        c = np.broadcast_to(np.where(rank < params["k"], 1.0, 0.0), gains.shape)
    elif family == "RR":  # cwl_rr.py: 1 until the first document with a gain, 0 from there
        c = np.logical_and.accumulate(gains <= 0, axis=1).astype(np.float64)
    elif family == "RBP":  # cwl_rbp.py: np.dot(np.ones(n), theta)
        c = np.broadcast_to(np.full(depth, params["p"]), gains.shape)
    elif family == "AP":  # cwl_ap.py: sum of g_j / j over j > i, over the same over j >= i (0 when 0)
        rii = gains / np.arange(1, depth + 1, dtype=np.int64)
        c = np.zeros(gains.shape, dtype=np.float64)
        for i in range(depth - 1):
            bot, top = np.sum(rii[:, i:], axis=1), np.sum(rii[:, i + 1 :], axis=1)
            c[:, i] = np.where(top > 0.0, top / np.where(top > 0.0, bot, 1.0), 0.0)
    else:  # pragma: no cover - the registry names only the families above
        raise ValueError(family)
    return c


def expected_utility(family: str, params: dict[str, float], gains: np.ndarray) -> np.ndarray:
    """sum_i W_i g_i for every row of ``gains`` (rows x depth), cwl_eval's ``w_vector`` and ``np.dot``."""
    rows, depth = gains.shape
    c = continuation(family, params, gains)
    prods = np.ones((rows, depth), dtype=np.float64)
    if depth > 1:
        prods[:, 1:] = np.cumprod(c[:, :-1], axis=1)
    w1 = np.divide(1.0, np.sum(prods, axis=1))
    weights = np.empty_like(prods)
    weights[:, 0] = w1
    weights[:, 1:] = np.multiply(prods[:, 1:], w1[:, None])
    return np.array([float(np.dot(weights[r], gains[r])) for r in range(rows)], dtype=np.float64)


def measure_params(family: str, k: int | None, raw: dict[str, str]) -> dict[str, float]:
    """The family's parameters as cwl_eval takes them (floats; the cutoff as ``k`` or BPM's ``K``)."""
    out: dict[str, float] = {key: float(raw[key]) for key in ("T", "p") if key in raw}
    if family == "BPM":
        out["K"] = float(k if k is not None else 0)
    elif family in ("NERR8", "NERR9", "SDCG"):
        out["k"] = float(k if k is not None else 0)
    return out


def compute(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """The registry's kernel for every C/W/L family: its parameters read from the measure."""
    family = measure.info.name
    raw = {key: measure.param(key) for key, _ in measure.info.params}
    return cwl(enc, family, measure_params(family, measure.k, raw), int(raw["depth"]), conv)


#: trec_eval's families that the cwl_eval profile computes as cwl_eval's C/W/L classes do
PROFILE_FAMILIES = ("P", "RR", "AP", "RBP")

#: cwl_eval's depth (its --max_depth default) for those families, which take no depth parameter
PROFILE_DEPTH = 1000


def under_profile(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """P@k, RR, AP and RBP as cwl_eval computes them (``--profile cwl_eval``): its C/W/L classes over the
    gains grade / max_grade of the documents of grade >= rel (0 below), to depth 1000."""
    family = measure.info.name
    if family == "P" and (measure.k is None or measure.k > PROFILE_DEPTH):
        raise ConventionError(
            f"cwl_eval computes precision at a cutoff from 1 to {PROFILE_DEPTH} only (got {measure})",
            fix="write P@k with k from 1 to 1000, e.g. P@10",
        )
    if family != "P" and measure.k is not None:
        raise ConventionError(
            f"cwl_eval computes {family} over the whole ranking, not at a cutoff (got {measure})",
            fix=f"write {family} without @{measure.k}, or leave --profile cwl_eval",
        )
    rel = measure.rel if measure.rel is not None else 1
    judged = enc.judged & (enc.grade >= rel)
    params = {"k": float(measure.k or 0), "p": float(conv.persistence)}
    return cwl(enc, family, params, PROFILE_DEPTH, conv, judged=judged)


def cwl(
    enc: Encoded,
    family: str,
    params: dict[str, float],
    depth: int,
    conv: Conventions,
    judged: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(values per query, undefined mask: never) of a C/W/L family over the encoded rankings (``judged``:
    the rows that carry a gain, by default the judged ones)."""
    n = enc.n_queries
    qidx, pos = positions(enc)
    g = grade_gains(enc.grade, enc.judged if judged is None else judged, conv.max_grade)
    keep = pos < depth
    values = np.zeros(n, dtype=np.float64)
    step = max(1, _CELLS // depth)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        rows = keep & (qidx >= lo) & (qidx < hi)
        matrix = np.zeros((hi - lo, depth), dtype=np.float64)
        matrix[qidx[rows] - lo, pos[rows]] = g[rows]
        values[lo:hi] = expected_utility(family, params, matrix)
    if conv.ties == "average" and enc.block_starts is not None:
        for q, orderings in _tied_queries(enc, g, depth):
            each = [
                expected_utility(family, params, np.array(batch, dtype=np.float64))
                for batch in _batches(orderings, step)
            ]
            values[q] = float(np.mean(np.concatenate(each)))
    return values, np.zeros(n, dtype=bool)


def _batches(rows: Iterator[np.ndarray], size: int) -> Iterator[list[np.ndarray]]:
    batch: list[np.ndarray] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _tied_queries(enc: Encoded, g: np.ndarray, depth: int) -> Iterator[tuple[int, Iterator[np.ndarray]]]:
    """(query, its gains within ``depth`` under each distinct ordering of its tied blocks, one row at a
    time) for each query where the order within a tied block changes the gains within ``depth``."""
    assert enc.block_starts is not None
    starts = enc.block_starts
    ends = np.append(starts[1:], len(g))
    shared = starts[ends - starts > 1]  # blocks of more than one document: only their queries can move
    for q in np.unique(np.searchsorted(enc.offsets, shared, side="right") - 1).tolist():
        lo, hi = int(enc.offsets[q]), int(enc.offsets[q + 1])
        first, last = np.searchsorted(starts, lo), np.searchsorted(starts, min(hi, lo + depth))
        blocks = [
            (int(s), int(e))
            for s, e in zip(starts[first:last].tolist(), ends[first:last].tolist(), strict=True)
        ]
        mixed = [(s, e) for s, e in blocks if e - s > 1 and len(set(g[s:e].tolist())) > 1]
        if not mixed:
            continue
        count = math.prod(_arrangements(g[s:e].tolist()) for s, e in mixed)
        if count > MAX_ORDERINGS:
            raise ConventionError(
                f"query {enc.queries.query_ids[q]} has {count} orderings of its tied documents: too many to "
                "average a C/W/L measure over exactly",
                fix="break ties another way, e.g. --ties docid_desc (or INST(ties=docid_desc))",
            )
        choices = [list(_distinct_orders(g[s:e].tolist())) for s, e in mixed]
        base = np.zeros(max(depth, hi - lo), dtype=np.float64)
        base[: hi - lo] = g[lo:hi]
        yield q, _orderings(base, lo, depth, mixed, choices)


def _orderings(
    base: np.ndarray,
    lo: int,
    depth: int,
    mixed: list[tuple[int, int]],
    choices: list[list[tuple[float, ...]]],
) -> Iterator[np.ndarray]:
    for combo in product(*choices):
        row = base.copy()
        for (s, e), gains in zip(mixed, combo, strict=True):
            row[s - lo : e - lo] = gains
        yield row[:depth]


def _arrangements(values: list[float]) -> int:
    """How many distinct orderings ``values`` have: n! over the factorial of each value's count."""
    out = math.factorial(len(values))
    for v in set(values):
        out //= math.factorial(values.count(v))
    return out


def _distinct_orders(values: list[float]) -> Iterator[tuple[float, ...]]:
    """Every distinct ordering of ``values``, each once (no n! detour through repeated ones)."""
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    keys = sorted(counts)
    order: list[float] = []

    def extend() -> Iterator[tuple[float, ...]]:
        if len(order) == len(values):
            yield tuple(order)
            return
        for v in keys:
            if counts[v]:
                counts[v] -= 1
                order.append(v)
                yield from extend()
                order.pop()
                counts[v] += 1

    yield from extend()
