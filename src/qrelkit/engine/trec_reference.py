"""The slow oracle's definitions of trec_eval's measures (:mod:`qrelkit.engine.reference` calls them).

Plain Python on one fixed ordering, written from trec_eval 10's definitions (``m_<name>.c``) as sums over
ranks, sharing no code with :mod:`qrelkit.engine.trec_kernels` or :mod:`qrelkit.engine.trec_measures`.
``order`` is the returned documents in rank order; ``grades`` the judgments after the negative-grade
convention (a judged negative grade, kept under ``negative=gain``, reads as grade 0 here).
"""

from __future__ import annotations

import math

from ..measures.conventions import Conventions, GainMap
from ..measures.grammar import TREC_INFO, Measure

NAMES = frozenset(info.name for info in TREC_INFO)
EPS = 0.00001


def _grade_gain(grade: int, conv: Conventions) -> float:
    gain = conv.gain
    if isinstance(gain, GainMap):
        return dict(gain.items).get(grade, float(grade))
    return float(grade) if gain == "linear" else float(2**grade - 1)


def _half_up(x: float) -> int:
    whole = math.floor(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def trec_one(measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions) -> float:
    name, k = measure.name, measure.k
    rel = measure.rel if measure.rel is not None else 1
    grade = {d: max(g, 0) for d, g in grades.items()}
    is_rel = [d in grade and grade[d] >= rel for d in order]
    nonrel = [d in grade and grade[d] < rel for d in order]
    R = sum(1 for g in grade.values() if g >= rel)
    N = sum(1 for g in grade.values() if g < rel)
    top = order if k is None else order[:k]
    n_top = len(top)
    nret, nrr = len(order), sum(is_rel)

    if name == "Success":
        return 1.0 if any(is_rel[:n_top]) else 0.0
    if name == "RelP":
        assert k is not None
        return sum(is_rel[:k]) / min(k, R) if R else 0.0
    if name == "Unjudged":
        assert k is not None
        return sum(1 for d in top if d not in grade) / k
    if name == "NumNonRelJudgedRet":
        return float(sum(nonrel[:n_top]))
    if name == "SetP":
        return nrr / nret if nret else 0.0
    if name == "SetRelP":
        return nrr / min(nret, R) if nret and R else 0.0
    if name == "SetAP":
        return nrr * nrr / (nret * R) if nret and R else 0.0
    if name == "SetF":
        beta = float(measure.param("beta"))
        if not nrr:
            return 0.0
        P, Rc = nrr / nret, nrr / R
        return (beta + 1) * P * Rc / (beta * P + Rc)
    if name == "Utility":
        a, b, c, d = (float(measure.param(x)) for x in "abcd")
        docs = float(measure.param("docs"))
        return a * nrr + b * (nret - nrr) + c * (R - nrr) + d * (docs + nrr - nret - R)
    if name == "bpref":
        total, seen_nonrel = 0.0, 0
        for r, n in zip(is_rel, nonrel, strict=True):
            if n:
                seen_nonrel += 1
            elif r:
                total += 1.0 if seen_nonrel == 0 else 1.0 - min(seen_nonrel, R) / min(N, R)
        return total / R if R else 0.0
    if name == "infAP":
        total, r_above, n_above = 0.0, 0, 0
        for j, (r, n) in enumerate(zip(is_rel, nonrel, strict=True)):
            if r:
                if j == 0:
                    total += 1.0
                else:
                    total += 1 / (j + 1) + (j / (j + 1)) * ((r_above + n_above) / j) * (
                        (r_above + EPS) / (r_above + n_above + 2 * EPS)
                    )
                r_above += 1
            elif n:
                n_above += 1
        return total / R if R else 0.0
    if name in ("IPrec", "IPrecMean"):
        levels = [float(x) for x in measure.param("recall").strip("{}").split(",")]
        precisions = [sum(is_rel[: i + 1]) / (i + 1) for i in range(nret)]
        rel_ranks = [i for i, r in enumerate(is_rel) if r]

        def at(level: float) -> float:
            # trec_eval 10: lround(level * R); trec_eval 9: (long)(level * R + 0.9)
            t = _half_up(level * R) if conv.iprec_cutoff == "round" else math.floor(level * R + 0.9)
            if t > nrr or not nrr:
                return 0.0
            return max(precisions[rel_ranks[max(t, 1) - 1] :])

        values = [at(x) for x in levels]
        return values[0] if name == "IPrec" else sum(values) / len(values)
    if name == "binG":
        total, r_so_far = 0.0, 0
        for i, r in enumerate(is_rel):
            if r:
                r_so_far += 1
                total += 1 / math.log2(3 + i - r_so_far)
        return total / R if nrr else 0.0
    if name in ("G", "nDCGRel", "RnDCG"):
        return _graded(name, order, grade, conv, R)
    raise ValueError(name)


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
