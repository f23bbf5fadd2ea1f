"""The slow oracle's definitions of trec_eval's measures, one per family (:mod:`qrelkit.engine.registry` names
each family's; :func:`qrelkit.engine.oracles.reference.reference_values` averages it over the orderings).

Plain Python on one fixed ordering, written from trec_eval 10's definitions (``m_<name>.c``) as sums over
ranks, sharing no code with :mod:`qrelkit.engine.trec.kernels` or :mod:`qrelkit.engine.trec.measures`.
``order`` is the returned documents in rank order; ``grades`` the judgments after the negative-grade
convention (a judged negative grade, kept under ``negative=gain``, reads as grade 0 here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...measures.conventions import Conventions, GainMap
from ...measures.grammar import Measure

EPS = 0.00001


def _grade_gain(grade: int, conv: Conventions) -> float:
    gain = conv.gain
    if isinstance(gain, GainMap):
        return dict(gain.items).get(grade, float(grade))
    return float(grade) if gain == "linear" else float(2**grade - 1)


def _half_up(x: float) -> int:
    whole = math.floor(x)
    return whole + (1 if x - whole >= 0.5 else 0)


@dataclass(frozen=True)
class _Lists:
    """One ordering as trec_eval sees it: per rank, relevant or judged non-relevant; R and N."""

    is_rel: list[bool]
    nonrel: list[bool]
    R: int
    N: int
    n_top: int  # ranks within the cutoff
    nret: int
    nrr: int
    grade: dict[str, int]


def _lists(measure: Measure, order: list[str], grades: dict[str, int]) -> _Lists:
    k = measure.k
    rel = measure.rel if measure.rel is not None else 1
    grade = {d: max(g, 0) for d, g in grades.items()}
    is_rel = [d in grade and grade[d] >= rel for d in order]
    nonrel = [d in grade and grade[d] < rel for d in order]
    R = sum(1 for g in grade.values() if g >= rel)
    N = sum(1 for g in grade.values() if g < rel)
    n_top = len(order if k is None else order[:k])
    return _Lists(is_rel, nonrel, R, N, n_top, len(order), sum(is_rel), grade)


# Each definition below is a :data:`qrelkit.engine.oracles.reference.Definition` (trec_eval's measures ignore
# ``nonpositive``, so the last argument is unused).


def success(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    return 1.0 if any(t.is_rel[: t.n_top]) else 0.0


def rel_p(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t, k = _lists(m, order, grades), m.k
    assert k is not None
    return sum(t.is_rel[:k]) / min(k, t.R) if t.R else 0.0


def unjudged(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    k = m.k
    assert k is not None
    return sum(1 for d in order[:k] if d not in grades) / k


def num_nonrel_judged_ret(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    return float(sum(t.nonrel[: t.n_top]))


def set_p(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    return t.nrr / t.nret if t.nret else 0.0


def set_rel_p(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    return t.nrr / min(t.nret, t.R) if t.nret and t.R else 0.0


def set_ap(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    return t.nrr * t.nrr / (t.nret * t.R) if t.nret and t.R else 0.0


def set_f(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    beta = float(m.param("beta"))
    if not t.nrr:
        return 0.0
    P, Rc = t.nrr / t.nret, t.nrr / t.R
    return (beta + 1) * P * Rc / (beta * P + Rc)


def utility(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    a, b, c, d = (float(m.param(x)) for x in "abcd")
    docs = float(m.param("docs"))
    return a * t.nrr + b * (t.nret - t.nrr) + c * (t.R - t.nrr) + d * (docs + t.nrr - t.nret - t.R)


def bpref(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    total, seen_nonrel = 0.0, 0
    for r, n in zip(t.is_rel, t.nonrel, strict=True):
        if n:
            seen_nonrel += 1
        elif r:
            total += 1.0 if seen_nonrel == 0 else 1.0 - min(seen_nonrel, t.R) / min(t.N, t.R)
    return total / t.R if t.R else 0.0


def inf_ap(
    m: Measure,
    order: list[str],
    grades: dict[str, int],
    conv: Conventions,
    _: frozenset[str],
    pooled: frozenset[str] = frozenset(),
) -> float:
    """``pooled``: the documents in the pool but not judged (a negative grade), counted above a relevant
    document with the judged ones."""
    t = _lists(m, order, grades)
    total, r_above, n_above, u_above = 0.0, 0, 0, 0
    for j, (r, n) in enumerate(zip(t.is_rel, t.nonrel, strict=True)):
        if r:
            if j == 0:
                total += 1.0
            else:
                total += 1 / (j + 1) + (j / (j + 1)) * ((r_above + n_above + u_above) / j) * (
                    (r_above + EPS) / (r_above + n_above + 2 * EPS)
                )
            r_above += 1
        elif n:
            n_above += 1
        elif order[j] in pooled:
            u_above += 1
    return total / t.R if t.R else 0.0


def _interpolated(m: Measure, order: list[str], grades: dict[str, int], conv: Conventions) -> list[float]:
    """Interpolated precision at each of the measure's recall levels."""
    t = _lists(m, order, grades)
    levels = [float(x) for x in m.param("recall").strip("{}").split(",")]
    precisions = [sum(t.is_rel[: i + 1]) / (i + 1) for i in range(t.nret)]
    rel_ranks = [i for i, r in enumerate(t.is_rel) if r]

    def at(level: float) -> float:
        # trec_eval 10: lround(level * R); trec_eval 9: (long)(level * R + 0.9)
        cut = _half_up(level * t.R) if conv.iprec_cutoff == "round" else math.floor(level * t.R + 0.9)
        if cut > t.nrr or not t.nrr:
            return 0.0
        return max(precisions[rel_ranks[max(cut, 1) - 1] :])

    return [at(x) for x in levels]


def iprec(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    return _interpolated(m, order, grades, conv)[0]


def iprec_mean(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    values = _interpolated(m, order, grades, conv)
    return sum(values) / len(values)


def bin_g(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    total, r_so_far = 0.0, 0
    for i, r in enumerate(t.is_rel):
        if r:
            r_so_far += 1
            total += 1 / math.log2(3 + i - r_so_far)
    return total / t.R if t.nrr else 0.0


def g(m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]) -> float:
    t = _lists(m, order, grades)
    return _graded("G", order, t.grade, conv, t.R)


def ndcg_rel(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    return _graded("nDCGRel", order, t.grade, conv, t.R)


def rndcg(
    m: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    t = _lists(m, order, grades)
    return _graded("RnDCG", order, t.grade, conv, t.R)


def _graded(name: str, order: list[str], grade: dict[str, int], conv: Conventions, R: int) -> float:
    g = [_grade_gain(grade[d], conv) if d in grade else 0.0 for d in order]
    ideal = sorted((x for x in (_grade_gain(v, conv) for v in grade.values()) if x > 0), reverse=True)
    L, n = len(ideal), len(g)

    def dcg(values: list[float], j: int) -> float:  # DCG of the first j ranks
        return sum(v / math.log2(i + 2) for i, v in enumerate(values[:j]))

    if name == "G":
        total, cost, got = 0.0, 0.0, 0.0
        for i, gi in enumerate(g):
            cost += max(ideal[i] if i < L else 0.0, 1.0)
            got += gi
            if gi != 0:
                total += gi / math.log2(2 + cost - got)
        return total / sum(ideal) if ideal else 0.0
    if name == "nDCGRel":
        if not L:
            return 0.0
        points = [dcg(g, i + 1) / dcg(ideal, i + 1) for i, gi in enumerate(g) if gi > 0]
        total = sum(points) + (L - len(points)) * dcg(g, n) / dcg(ideal, L)
        return total / L if total > 0 else 0.0
    # RnDCG: nDCG at each rank j where the ideal gain changes level (j = 1 .. L, the ideal's gain after L
    # being 0); trec_eval's loop also takes the final nDCG of a ranking longer than L + 1
    if R == 0:
        return 0.0
    ext = [*ideal, 0.0]
    points = [dcg(g, j) / dcg(ideal, j) for j in range(1, L + 1) if ext[j] != ext[j - 1]]
    if n > L + 1:
        points.append(dcg(g, n) / dcg(ideal, L))
    return sum(points) / len(points) if points else math.nan
