"""A slow, obviously correct oracle for every measure under every convention.

Pure Python over dictionaries and lists, written from the definitions and sharing no code with the kernels:
it ranks each query with ``sorted``, and under averaged ties it *enumerates every ordering* of every tied
block and averages the measure over them (so it only suits small inputs; it refuses more than
``MAX_ORDERINGS`` orderings per query). The property tests compare the kernels with it.

Each measure family has one definition on a fixed ordering (:data:`Definition`: here for qrelkit's first
measures, in :mod:`qrelkit.engine.oracles.trec` for trec_eval's); :data:`qrelkit.engine.registry.REGISTRY`
says which is whose, and :func:`reference_values` averages the one it is given over the orderings.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Callable, Sequence
from inspect import signature

from ...measures.conventions import Conventions, GainMap
from ...measures.grammar import Measure

MAX_ORDERINGS = 200_000

Row = tuple[str, float, int]  # doc_id, score, line (file order)


def _gain(grade: int, gain: str | GainMap) -> float:
    if isinstance(gain, GainMap):
        value = gain.gain(grade)
        if value is None:
            raise KeyError(grade)
        return value
    if gain == "linear":
        return float(grade)
    return float(2**grade - 1)


def _single(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _discount(rank: int, base: float) -> float:
    return 1.0 / math.log(rank + 1, base) if base != 2.0 else 1.0 / math.log2(rank + 1)


def _judgments(qrels: dict[str, dict[str, int]], conv: Conventions) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for q, docs in qrels.items():
        kept: dict[str, int] = {}
        for d, g in docs.items():
            if g < 0 and conv.negative != "gain":  # under "gain" a negative grade is kept as it is
                if conv.negative == "reject":
                    raise ValueError("negative grade")
                if conv.negative == "unjudged":
                    continue
                g = 0
            kept[d] = g
        out[q] = kept
    return out


def _pooled(docs: dict[str, int], conv: Conventions) -> frozenset[str]:
    """The documents judged with a negative grade under ``negative=unjudged``: in the pool, not judged."""
    return frozenset(d for d, g in docs.items() if g < 0) if conv.negative == "unjudged" else frozenset()


def _orderings(rows: list[Row], grades: dict[str, int], conv: Conventions) -> list[list[str]]:
    """Every ordering the tie convention admits (one, unless ties are averaged)."""

    def score_key(row: Row) -> float:
        return -row[1]

    if conv.ties == "average":
        ranked = sorted(rows, key=lambda r: (-r[1], r[2]))
        blocks = [list(group) for _, group in itertools.groupby(ranked, key=lambda r: r[1])]
        count = math.prod(math.factorial(len(b)) for b in blocks)
        if count > MAX_ORDERINGS:
            raise ValueError(f"{count} orderings: too many for the reference oracle")
        perms = [list(itertools.permutations([r[0] for r in b])) for b in blocks]
        return [[d for block in choice for d in block] for choice in itertools.product(*perms)]
    if conv.ties == "docid_desc":
        ranked = sorted(rows, key=lambda r: r[0], reverse=True)
        ranked = sorted(ranked, key=score_key)
    elif conv.ties == "docid_asc":
        ranked = sorted(sorted(rows, key=lambda r: r[0]), key=score_key)
    elif conv.ties == "file_order":
        ranked = sorted(sorted(rows, key=lambda r: r[2]), key=score_key)
    elif conv.ties == "optimistic":
        ranked = sorted(rows, key=lambda r: (-r[1], -grades.get(r[0], -(10**18)), r[2]))
    else:  # pessimistic
        ranked = sorted(rows, key=lambda r: (-r[1], grades.get(r[0], -(10**18)), r[2]))
    return [[r[0] for r in ranked]]


def _denominator(k: int, order: list[str], conv: Conventions) -> int:
    """What P@k and Judged@k divide by: k, or min(k, returned) (at least 1)."""
    return k if conv.cutoff_denominator == "k" else max(1, min(k, len(order)))


#: The measure on one fixed ordering of the returned documents ``order`` (before the no-relevant policy),
#: given the judgments ``grades`` after the negative-grade convention. The last argument holds the returned
#: documents that never count as relevant retrieved (scored <= 0, under ``nonpositive=not_retrieved``).
#: A definition with a ``pooled`` keyword (infAP's) also receives the documents judged with a negative grade
#: under ``negative=unjudged``: in the pool, not judged.
#: :data:`qrelkit.engine.registry.REGISTRY` names each family's definition.
Definition = Callable[[Measure, list[str], dict[str, int], Conventions, frozenset[str]], float]


def _top(measure: Measure, order: list[str]) -> list[str]:
    return order if measure.k is None else order[: measure.k]


def _relevant(measure: Measure, grades: dict[str, int]) -> set[str]:
    """The judged documents of grade >= rel."""
    rel = measure.rel if measure.rel is not None else 1
    return {d for d, g in grades.items() if g >= rel}


def _counted(measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions) -> set[str]:
    """R's documents: the relevant judged ones, or under ``ideal=returned`` the relevant ones returned."""
    relevant = _relevant(measure, grades)
    return relevant & set(order) if conv.ideal == "returned" else relevant


def _dcg(docs: Sequence[str], grades: dict[str, int], conv: Conventions) -> float:
    return sum(
        (_gain(grades[d], conv.gain) if d in grades else 0.0) * _discount(i + 1, conv.discount)
        for i, d in enumerate(docs)
    )


def _ideal_dcg(measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions) -> float:
    return sum(
        v * _discount(i + 1, conv.discount) for i, v in enumerate(_ideal_gains(measure, order, grades, conv))
    )


def _ideal_gains(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions
) -> list[float]:
    """The ideal ordering's gains within the cutoff, best first."""

    def gain(d: str) -> float:
        return _gain(grades[d], conv.gain) if d in grades else 0.0

    if conv.negative == "gain":
        # every gain of the pool, zeros and negatives included, best first
        pool = list(grades) if conv.ideal == "judged" else list(order)
        values = sorted((gain(d) for d in pool), reverse=True)
    else:
        pool = list(grades) if conv.ideal == "judged" else [d for d in order if d in grades]
        values = sorted((g for g in (gain(d) for d in pool) if g > 0), reverse=True)
    return values if measure.k is None else values[: measure.k]


def dcg(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    return _dcg(_top(measure, order), grades, conv)


def idcg(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    return _ideal_dcg(measure, order, grades, conv)


def ncg(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    """The gains in the top k over the ideal ordering's, no discount."""
    ideal = sum(_ideal_gains(measure, order, grades, conv))
    got = sum(_gain(grades[d], conv.gain) if d in grades else 0.0 for d in _top(measure, order))
    return got / ideal if ideal != 0 else math.nan


def ndcg(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    ideal = _ideal_dcg(measure, order, grades, conv)
    return _dcg(_top(measure, order), grades, conv) / ideal if ideal != 0 else math.nan


def recall(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, unretrieved: frozenset[str]
) -> float:
    relevant = _counted(measure, order, grades, conv)
    found = relevant - unretrieved
    return sum(d in found for d in _top(measure, order)) / len(relevant) if relevant else math.nan


def precision(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, unretrieved: frozenset[str]
) -> float:
    if conv.profile == "cwl_eval":
        return cwl(measure, order, grades, conv, unretrieved)
    found = _relevant(measure, grades) - unretrieved
    hits = sum(d in found for d in _top(measure, order))
    if measure.k is None:  # every returned document
        return hits / len(order) if order else 0.0
    return hits / _denominator(measure.k, order, conv)


def f1(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, unretrieved: frozenset[str]
) -> float:
    """The harmonic mean of precision and recall at k (of every returned document without a cutoff)."""
    relevant = _counted(measure, order, grades, conv)
    if not relevant:
        return math.nan
    found = relevant - unretrieved
    hits = sum(d in found for d in _top(measure, order))
    if hits == 0:
        return 0.0
    p = hits / (len(order) if measure.k is None else _denominator(measure.k, order, conv))
    r = hits / len(relevant)
    return 2 * p * r / (p + r)


def average_precision(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, unretrieved: frozenset[str]
) -> float:
    if conv.profile == "cwl_eval":
        return cwl(measure, order, grades, conv, unretrieved)
    relevant = _counted(measure, order, grades, conv)
    if not relevant:
        return math.nan
    found = relevant - unretrieved
    hits, total = 0, 0.0
    for i, d in enumerate(_top(measure, order)):
        if d in found:
            hits += 1
            total += hits / (i + 1)
    if conv.ap_denominator == "retrieved":
        return total / hits if hits else 0.0
    return total / len(relevant)


def reciprocal_rank(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, unretrieved: frozenset[str]
) -> float:
    if conv.profile == "cwl_eval":
        return cwl(measure, order, grades, conv, unretrieved)
    relevant = _counted(measure, order, grades, conv)
    if not relevant:
        return math.nan
    found = relevant - unretrieved
    for i, d in enumerate(_top(measure, order)):
        if d in found:
            return 1.0 / (i + 1)
    return 0.0


def rprec(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    """P@R; with ``mult`` trec_eval's Rprec_mult: relevant in the top c / c, c = floor(mult * R + 0.9)."""
    relevant = _counted(measure, order, grades, conv)
    if not relevant:
        return math.nan
    if "mult" in dict(measure.params):
        cut = math.floor(float(measure.param("mult")) * len(relevant) + 0.9)
        return sum(d in relevant for d in order[:cut]) / cut
    return sum(d in relevant for d in order[: len(relevant)]) / len(relevant)


def fallout(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    every_relevant = _relevant(measure, grades)
    rel = measure.rel if measure.rel is not None else 1
    returned_not = {d for d in order if d not in every_relevant}
    known = returned_not | ({d for d, g in grades.items() if g < rel} if conv.ideal == "judged" else set())
    return sum(d not in every_relevant for d in _top(measure, order)) / len(known) if known else math.nan


def judged(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    judged_returned = sum(d in grades for d in _top(measure, order))
    if measure.k is None:  # the share of every returned document that is judged (0 when none is)
        return judged_returned / max(1, len(order))
    return judged_returned / _denominator(measure.k, order, conv)


def num_rel(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    return float(len(_relevant(measure, grades)))


def num_ret(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    return float(len(_top(measure, order)))


def num_rel_ret(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    relevant = _relevant(measure, grades)
    return float(sum(d in relevant for d in _top(measure, order)))


def num_q(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    """Every scored query counts once."""
    return 1.0


def accuracy(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, never: frozenset[str]
) -> float:
    """1 - (non-relevant documents above each relevant one, summed) / (non-relevant x relevant), over the
    top k; undefined without a relevant or a non-relevant document there."""
    relevant = _relevant(measure, grades) - never
    above = pairs_wrong = hits = 0
    for d in _top(measure, order):
        if d in relevant:
            pairs_wrong += above
            hits += 1
        else:
            above += 1
    return 1.0 - pairs_wrong / (above * hits) if above and hits else math.nan


def cwl(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    """A C/W/L measure from its definition: the gains grade / max_grade (0 below 0 and unjudged) of the
    first ``depth`` ranks, zeros past the run's end; the continuation C_i of the family at each rank i;
    the weight of rank i, prod_{j<i} C_j over the sum of those products for every rank; sum W_i g_i."""
    family = measure.info.name
    # P, RR, AP and RBP under the cwl_eval profile: depth 1000, and only grades >= rel carry a gain
    depth = 1000 if measure.info.uses_rel else int(measure.param("depth"))
    least = (measure.rel if measure.rel is not None else 1) if measure.info.uses_rel else 0
    k = measure.k or 0
    g = [max(grades[d], 0) / conv.max_grade if grades.get(d, -1) >= least else 0.0 for d in order[:depth]]
    g += [0.0] * (depth - len(g))
    # AP's continuation: the sum of g_j / j over ranks after i, over the same from i on
    after = [0.0] * (depth + 1)
    for j in range(depth, 0, -1):
        after[j - 1] = after[j] + g[j - 1] / j
    t = float(measure.param("T")) if family in ("INST", "INSQ", "BPM", "NERR11") else 0.0
    c: list[float] = []
    got = 0.0
    for i in range(1, depth + 1):
        gi = g[i - 1]
        got += gi
        if family == "INST":
            left = t - got
            c.append(((i + t + left - 1) / (i + t + left)) ** 2)
        elif family == "INSQ":
            c.append(((i + 2 * t - 1) / (i + 2 * t)) ** 2)
        elif family == "BPM":
            c.append(1.0 if got < t and i < k and (not c or c[-1] == 1.0) else 0.0)
        elif family == "NERR8":
            c.append(1 - gi if i < k else 0.0)
        elif family == "NERR9":
            c.append(i / (i + 1) * (1 - gi) if i < k else 0.0)
        elif family == "NERR10":
            c.append(float(measure.param("p")) * (1 - gi))
        elif family == "NERR11":
            c.append(((i + 2 * t - 1) / (i + 2 * t)) ** 2 * (1 - gi))
        elif family == "SDCG":
            c.append(math.log2(i + 1) / math.log2(i + 2) if i < k else 0.0)
        elif family == "P":
            c.append(1.0 if i < k else 0.0)
        elif family == "RR":
            c.append(1.0 if not any(x > 0 for x in g[:i]) else 0.0)
        elif family == "RBP":
            c.append(conv.persistence)
        else:  # AP
            c.append(after[i] / after[i - 1] if i < depth and after[i] > 0 else 0.0)
    reach = [1.0]
    for ci in c[:-1]:
        reach.append(reach[-1] * ci)
    total = sum(reach)
    return sum(r / total * gi for r, gi in zip(reach, g, strict=True))


def rbp(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    if conv.profile == "cwl_eval":
        return cwl(measure, order, grades, conv, _)
    relevant = _relevant(measure, grades)
    if not relevant:
        return math.nan
    p = conv.persistence
    highest = max([1, *grades.values()])  # scaled: grades over the highest judged one (when above 1)
    worth = {
        d: {"binary": 1.0, "grade": float(grades[d]), "scaled": grades[d] / highest}[conv.rbp_gain]
        for d in relevant
    }
    return sum((1 - p) * p**i * worth.get(d, 0.0) for i, d in enumerate(_top(measure, order)))


def rbp_resid(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    p = conv.persistence
    unjudged = [i for i, d in enumerate(_top(measure, order)) if d not in grades]
    if conv.rbp_residual == "if_unjudged" and not unjudged:
        return 0.0
    beyond = p ** (measure.k if measure.k is not None else len(order))
    return sum((1 - p) * p**i for i in unjudged) + beyond


def err(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    value = _expected_reciprocal_rank(measure.k, [_stop(d, grades, conv) for d in order])
    return value if any(g > 0 for g in grades.values()) else math.nan


def nerr(
    measure: Measure, order: list[str], grades: dict[str, int], conv: Conventions, _: frozenset[str]
) -> float:
    value = _expected_reciprocal_rank(measure.k, [_stop(d, grades, conv) for d in order])
    pool = list(grades) if conv.ideal == "judged" else [d for d in order if d in grades]
    ideal = _expected_reciprocal_rank(measure.k, sorted((_stop(d, grades, conv) for d in pool), reverse=True))
    return value / ideal if ideal > 0 else math.nan


def _stop(d: str, grades: dict[str, int], conv: Conventions) -> float:
    """ERR's user model: stop at a document with probability R = (2^g - 1) / 2^max_grade, having not
    stopped before; the gain of stopping at rank i is 1/i."""
    g = grades.get(d, 0)
    if g > conv.max_grade:
        raise ValueError(f"grade {g} above max_grade")
    return (2**g - 1) / 2**conv.max_grade if g > 0 else 0.0


def _expected_reciprocal_rank(k: int | None, probabilities: list[float]) -> float:
    total, still_looking = 0.0, 1.0
    for i, p in enumerate(probabilities if k is None else probabilities[:k]):
        total += still_looking * p / (i + 1)
        still_looking *= 1.0 - p
    return total


def _scored(
    qrels: dict[str, dict[str, int]],
    run: dict[str, list[Row]],
    judged: dict[str, dict[str, int]],
    conv: Conventions,
) -> list[tuple[str, dict[str, int], list[Row]]]:
    """(query, its judgments, its rows) for every scored query: the query set of ``missing_queries``,
    unjudged rows dropped under ``unjudged=drop``, scores rounded under ``precision=single``."""
    scored = sorted(qrels) if conv.missing_queries == "zero" else sorted(set(qrels) & set(run))
    out = []
    for q in scored:
        grades = judged.get(q, {})
        rows = list(run.get(q, []))
        if conv.unjudged == "drop":
            rows = [r for r in rows if r[0] in grades]
        if conv.precision == "single":
            rows = [(d, _single(s), line) for d, s, line in rows]
        out.append((q, grades, rows))
    return out


def reference_values(
    qrels: dict[str, dict[str, int]],
    run: dict[str, list[Row]],
    measure: Measure,
    conventions: Conventions,
    *,
    definition: Definition,
) -> dict[str, float]:
    """Per-query values of ``measure``: ``{query_id: value}`` (NaN where undefined and skipped), its
    ``definition`` (the family's, in :data:`qrelkit.engine.registry.REGISTRY`, which
    :func:`qrelkit.engine.registry.oracle_values` passes) applied to every ordering the tie convention admits.

    ``run`` maps each query to its rows ``(doc_id, score, line)``; ``line`` gives file order.
    """
    conv = measure.conventions(conventions)
    judged = _judgments(qrels, conv)
    if conv.extra_queries == "reject" and set(run) - set(qrels):
        raise ValueError("run has queries without judgments")
    out: dict[str, float] = {}
    for q, grades, rows in _scored(qrels, run, judged, conv):
        orders = _orderings(rows, grades, conv)
        unretrieved = frozenset(d for d, s, _ in rows if s <= 0 and conv.nonpositive == "not_retrieved")
        # infAP's definition also takes the documents "in the pool, not judged" (a negative grade)
        pool = (
            {"pooled": _pooled(qrels.get(q, {}), conv)}
            if "pooled" in signature(definition).parameters
            else {}
        )
        values = [definition(measure, order, grades, conv, unretrieved, **pool) for order in orders]
        if any(math.isnan(v) for v in values):
            value = math.nan
        else:
            value = math.fsum(values) / len(values)
        if value == 0 and conv.no_relevant == "skip_unretrieved" and measure.info.undefined_without_relevant:
            value = math.nan  # nothing relevant retrieved within the cutoff: left out, as trectools does
        if math.isnan(value) and conv.no_relevant in ("zero", "one"):
            value = 0.0 if conv.no_relevant == "zero" else 1.0
        if q not in run and conv.missing_score == "zero":
            value = 0.0  # every measure is 0 for a judged query the run lacks
        out[q] = value
    return out


def printed(value: float, decimals: int) -> float:
    """``value`` rounded to ``decimals`` decimals as a tool printing ``%.<decimals>f`` and reading the text
    back has it, from the definition: the double's exact decimal value, quantized with halves to even."""
    import decimal

    if math.isnan(value) or math.isinf(value):
        return value
    with decimal.localcontext() as ctx:
        ctx.prec = 400  # enough for every double at any of the decimals allowed
        exact = decimal.Decimal(value)  # exact: a double is a finite binary fraction
        return float(exact.quantize(decimal.Decimal(1).scaleb(-decimals), rounding=decimal.ROUND_HALF_EVEN))


def _rbo_sum(ranking: list[str], ideal: list[str], p: float, depth: int) -> float:
    """sum over i = 1..depth of p^(i-1) |top i of ranking & top i of ideal| / i."""
    return math.fsum(p**i * len(set(ranking[: i + 1]) & set(ideal[: i + 1])) / (i + 1) for i in range(depth))


def compat_reference_values(
    qrels: dict[str, dict[str, int]],
    run: dict[str, list[Row]],
    measure: Measure,
    conventions: Conventions,
) -> dict[str, float]:
    """Compat per query from its definition (Clarke et al. 2020): the rank-biased overlap of the run with
    the best of every ideal ranking consistent with the judgments (documents of grade > 0 by grade, each
    grade's documents in every order: all are tried), divided by the ideal's overlap with itself. Ties
    must be ordered (``ties`` other than ``average``)."""
    conv = measure.conventions(conventions)
    judged = _judgments(qrels, conv)
    p = float(measure.param("p"))
    normalize = measure.param("normalize") == "True"
    out: dict[str, float] = {}
    for q, grades, rows in _scored(qrels, run, judged, conv):
        (order,) = _orderings(rows, grades, conv)
        relevant = {d: g for d, g in grades.items() if g > 0}
        if not relevant:
            out[q] = math.nan if conv.no_relevant != "zero" else 0.0
            continue
        depth = max(len(order), len(relevant))
        levels = sorted(set(relevant.values()), reverse=True)
        groups = [[d for d in relevant if relevant[d] == g] for g in levels]
        if math.prod(math.factorial(len(g)) for g in groups) > MAX_ORDERINGS:
            raise ValueError("too many ideal rankings for the reference oracle")
        ideals = (
            [d for part in parts for d in part]
            for parts in itertools.product(*(itertools.permutations(g) for g in groups))
        )
        score = max(_rbo_sum(order, ideal, p, depth) for ideal in ideals)
        if normalize:
            any_ideal = [d for g in groups for d in g]
            value = score / _rbo_sum(any_ideal, any_ideal, p, depth)
        else:
            value = score / math.fsum(p**i for i in range(depth))
        if value == 0 and conv.no_relevant == "skip_unretrieved":
            value = math.nan
        out[q] = value
    return out
