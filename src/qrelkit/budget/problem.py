"""The judging-budget problem: the pooled pairs, the model's grades, the runs' rankings, and a vectorized
evaluator of every run on every query for any grade vector.

A :class:`Problem` is everything a strategy may read. The people's grades are not in it: :func:`build_problem`
returns them beside it, for the :class:`~qrelkit.budget.oracle.Oracle` alone to hold.

:meth:`Problem.values` computes nDCG@k, P@k and R@k under qrelkit's default conventions
(:data:`qrelkit.measures.conventions.DEFAULT`) exactly as :func:`qrelkit.evaluate` does, on the pooled pairs
with the given grades:

- a run ranks its documents by score, descending, at full (double) precision;
- tied scores are averaged (``ties = "average"``): every position of a tied block takes the mean gain (or the
  mean relevance) of the block's documents, the block's documents past the cutoff included;
- a document that is not a pooled pair is unjudged and worth 0 in place (``unjudged = "zero"``); a negative
  grade is unjudged too (``negative = "unjudged"``), so FULL's negative grades are not pooled;
- gains are added rank by rank, each divided by the C library's log2(rank + 1) (the kernels' own arithmetic,
  so the values are equal to the bit, not merely close);
- the ideal ordering is every pooled pair of the query by gain (``ideal = "judged"``), truncated at k;
- a query with nothing relevant scores 0 (``no_relevant = "zero"``); a query a run lacks scores 0
  (``missing_queries = "zero"``); P@k divides by k (``cutoff_denominator = "k"``).

The queries are FULL's queries that at least one run retrieves; the pooled pairs are FULL's judged pairs of
those queries (with ``pool_depth``, only those ranked within that depth by at least one run); a query none of
whose pairs is pooled is left out.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import IncomparableError, ValidationError
from ..measures.conventions import DEFAULT, GainMap
from ..measures.grammar import Measure, parse

if TYPE_CHECKING:
    from ..data.values import Qrels, Run

#: The measure families :meth:`Problem.values` computes.
SUPPORTED = ("nDCG", "P", "R")

#: The most runs a replay compares: every pair of runs is estimated and scored in every repetition (19,900
#: pairs at the bound), as the decision-level agreement's runs (``compare.decisions.MAX_RUNS``).
MAX_RUNS = 200
#: The most cells a Problem's arrays may hold: runs x queries x k (the ranks) and runs x pooled pairs (what a
#: linearization over every run and pair holds), each 8 bytes: about 200 MB each at the bound.
MAX_CELLS = 25_000_000

#: The convention axes :meth:`Problem.values` follows; a measure that overrides any other is refused.
_FREE_AXES = {"gain", "discount"}


@dataclass(frozen=True)
class TieBlocks:
    """Runs' tied scores that touch the top k: block b is run ``run[b]``'s block on query ``query[b]`` whose
    members are the pairs ``member_pair[member_block == b]`` (-1: a document not pooled, worth 0) and whose
    positions within the top k are ``cover_pos[cover_block == b]``."""

    run: np.ndarray  # int64 [blocks]
    query: np.ndarray  # int64 [blocks]
    size: np.ndarray  # int64 [blocks]: documents in the block
    member_block: np.ndarray  # int64 [members]
    member_pair: np.ndarray  # int64 [members]
    cover_block: np.ndarray  # int64 [covered positions]
    cover_pos: np.ndarray  # int64 [covered positions]: 0-based rank, < k


@dataclass(frozen=True)
class Problem:
    """Everything a strategy may read: the pooled pairs, the model's grades (and probabilities), the runs'
    rankings. Never the people's grades (those come only from the Oracle)."""

    queries: tuple[str, ...]  # sorted query ids (FULL's queries that the runs retrieve, with a pooled pair)
    pairs: tuple[tuple[str, str], ...]  # the pooled pairs (query_id, doc_id), by query in `queries` order
    query_of: np.ndarray  # int64 [pairs]: index into `queries`
    query_start: np.ndarray  # int64 [queries + 1]: query i's pairs are query_start[i]:query_start[i + 1]
    model: np.ndarray  # int64 [pairs]: the model's grade of each pair
    probabilities: (
        np.ndarray | None
    )  # float64 [pairs, max_grade + 1]: the model's grade probabilities, or None
    runs: tuple[str, ...]  # run names, sorted
    ranks: (
        np.ndarray
    )  # int64 [runs, queries, depth]: the pair at each rank, -1 where it is not pooled or none
    depth: int  # the measure's cutoff (nDCG@10: 10)
    measure: str  # nDCG@k, P@k or R@k (gain and discount may be overridden)
    max_grade: int
    #: the runs' tied scores that touch the top k (None: no tie), averaged as ``ties = "average"`` does
    ties: TieBlocks | None = None
    #: the pool depth the pairs were pooled to (None: every pair FULL judged)
    pool_depth: int | None = None
    #: int64 [pairs]: each pair's best 0-based rank over the runs (rank 1 of some run: 0); the pool's order
    best_rank: np.ndarray | None = None
    #: FULL's judged pairs of the queries that the pool depth left out (no run ranks them within it)
    unpooled: int = 0

    # ------------------------------------------------------------------------------------ shape

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def n_queries(self) -> int:
        return len(self.queries)

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    # ------------------------------------------------------------------------------------ the measure

    def _parsed(self) -> tuple[Measure, str | GainMap, float, int]:
        m = parse(self.measure)
        conv = m.conventions(DEFAULT)
        rel = m.rel if m.rel is not None else 1
        return m, conv.gain, float(conv.discount), rel

    def value_range(self) -> tuple[float, float] | None:
        """The values the measure can take on a query: (0, 1) when no grade's gain is negative (nDCG@k,
        P@k and R@k then lie within it); ``None`` when a gain map makes some grade's gain negative."""
        gains = self.gain(np.arange(self.max_grade + 1, dtype=np.int64))
        return (0.0, 1.0) if bool(np.all(np.asarray(gains) >= 0)) else None

    def gain(self, grades: np.ndarray) -> np.ndarray:
        """Each pair's gain under the measure's gain (negative grades: unjudged, 0)."""
        from ..engine.kernels.ranked import gains

        _, gain, _, _ = self._parsed()
        g = np.asarray(grades)
        if np.issubdtype(g.dtype, np.integer):
            out = gains(np.maximum(g, 0).astype(np.int64), None, gain)
        elif isinstance(gain, GainMap):
            raise ValidationError(
                f"{self.measure} takes a gain map, which expected (fractional) grades have no gain in",
                fix="pass whole grades",
            )
        else:
            gf = np.maximum(g.astype(np.float64), 0.0)
            out = gf if gain == "linear" else np.exp2(gf) - 1.0
        return out

    def _per_rank(self, per_pair: np.ndarray) -> np.ndarray:
        """float64 [runs, queries, k]: ``per_pair`` gathered at each rank (0 where nothing pooled is), each tied
        block's positions replaced by the block's mean."""
        padded = np.append(per_pair.astype(np.float64, copy=False), 0.0)
        out = padded[self.ranks]
        t = self.ties
        if t is not None and len(t.run):
            sums = np.bincount(t.member_block, weights=padded[t.member_pair], minlength=len(t.run))
            means = sums / t.size
            out[t.run[t.cover_block], t.query[t.cover_block], t.cover_pos] = means[t.cover_block]
        return out

    def _ideal(self, gain: np.ndarray, k: int, base: float) -> np.ndarray:
        """float64 [queries]: the ideal DCG@k of each query, the pooled pairs' positive gains by gain,
        descending, added rank by rank."""
        from ..engine.kernels.ranked import log_ranks

        q = self.n_queries
        sizes = np.diff(self.query_start)
        width = int(min(k, sizes.max())) if q and len(sizes) else 0
        top = np.zeros((q, max(width, 1)), dtype=np.float64)
        if width:
            longest = int(sizes.max())
            padded = np.zeros((q, longest), dtype=np.float64)
            within = np.arange(len(gain), dtype=np.int64) - self.query_start[self.query_of]
            padded[self.query_of, within] = np.where(gain > 0, gain, 0.0)
            if longest > width:
                part = np.partition(padded, longest - width, axis=1)[:, longest - width :]
            else:
                part = padded
            top[:, :width] = -np.sort(-part, axis=1)[:, :width]
        logs = log_ranks(np.arange(top.shape[1], dtype=np.int64), base)
        acc = np.zeros(q, dtype=np.float64)
        for p in range(top.shape[1]):
            acc = acc + top[:, p] / logs[p]
        return acc

    def values(self, grades: np.ndarray) -> np.ndarray:
        """float64 [runs, queries]: each run's per-query measure when pair i has grade grades[i] (float grades
        allowed: expected grades). Vectorized; equal (==) to qrelkit.evaluate on integer grades under the
        default conventions (a property test holds this against qrelkit.evaluate).

        With float grades nDCG takes the gain of each grade as given (2^g - 1 of the expected grade, not the
        expected gain), and P@k and R@k count a pair as relevant where its grade is at least ``rel``."""
        from ..engine.kernels.ranked import log_ranks

        grades = np.asarray(grades)
        if grades.shape != (self.n_pairs,):
            raise ValidationError(
                f"a grade vector of {grades.shape} for {self.n_pairs} pooled pairs",
                fix="pass one grade a pair",
            )
        m, _, base, rel = self._parsed()
        k = self.depth
        if m.name == "nDCG":
            g = self.gain(grades)
            per_rank = self._per_rank(g)
            logs = log_ranks(np.arange(k, dtype=np.int64), base)
            dcg = np.zeros(per_rank.shape[:2], dtype=np.float64)
            for p in range(k):
                dcg = dcg + per_rank[:, :, p] / logs[p]
            ideal = self._ideal(g, k, base)
            undefined = ideal == 0
            with np.errstate(divide="ignore", invalid="ignore"):
                out: np.ndarray = np.where(undefined, 0.0, dcg / np.where(undefined, 1.0, ideal))
            return out
        hit = (grades >= rel).astype(np.float64)
        per_rank = self._per_rank(hit)
        found = np.zeros(per_rank.shape[:2], dtype=np.float64)
        for p in range(k):  # rank by rank, as the kernels add (a tied block's means are fractions)
            found = found + per_rank[:, :, p]
        if m.name == "P":
            out = found / float(k)
            return out
        nrel = np.bincount(self.query_of, weights=hit, minlength=self.n_queries)
        undefined = nrel == 0
        out = np.where(undefined, 0.0, found / np.where(undefined, 1.0, nrel))
        return out

    def units(self, grades: np.ndarray) -> np.ndarray:
        """float64 [pairs]: what each pair contributes per unit of position weight: its gain (nDCG) or whether
        it is relevant (P, R)."""
        m, _, _, rel = self._parsed()
        if m.name == "nDCG":
            return self.gain(grades).astype(np.float64, copy=False)
        out: np.ndarray = (np.asarray(grades) >= rel).astype(np.float64)
        return out

    def position_weights(self) -> np.ndarray:
        """float64 [runs, pairs]: d(numerator of run r's value on the pair's query) / d(pair's unit): the
        discounts (nDCG) or counts (P, R) of the ranks the run gives the pair within k; a tied block's
        covered ranks shared equally by its members."""
        from ..engine.kernels.ranked import log_ranks

        m, _, base, _ = self._parsed()
        k = self.depth
        per_pos = (
            1.0 / log_ranks(np.arange(k, dtype=np.int64), base)
            if m.name == "nDCG"
            else np.ones(k, dtype=np.float64)
        )
        runs = self.ranks.shape[0]
        weight = np.broadcast_to(per_pos, self.ranks.shape).copy()
        t = self.ties
        if t is not None and len(t.run):
            covered = weight[t.run[t.cover_block], t.query[t.cover_block], t.cover_pos]
            block_weight = np.bincount(t.cover_block, weights=covered, minlength=len(t.run))
            weight[t.run[t.cover_block], t.query[t.cover_block], t.cover_pos] = 0.0
        out = np.zeros((runs, self.n_pairs + 1), dtype=np.float64)
        run_of = np.broadcast_to(np.arange(runs)[:, None, None], self.ranks.shape)
        np.add.at(out, (run_of.ravel(), self.ranks.ravel()), weight.ravel())
        if t is not None and len(t.run):
            share = block_weight / t.size
            np.add.at(out, (t.run[t.member_block], t.member_pair), share[t.member_block])
        result: np.ndarray = out[:, : self.n_pairs]
        return result

    def denominators(self, grades: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(float64 [queries]: what each query's value divides its numerator by: the ideal DCG@k (nDCG), k (P),
        the relevant pairs (R); float64 [pairs]: its derivative in each pair's unit. The ideal DCG's derivative
        is the discount of the pair's place in the ideal order, shared equally among the pairs of equal gain
        (a symmetric choice where the order is not unique), 0 past k."""
        from ..engine.kernels.ranked import log_ranks

        m, _, base, _ = self._parsed()
        k = self.depth
        u = self.units(grades)
        if m.name == "P":
            return np.full(self.n_queries, float(k)), np.zeros(self.n_pairs)
        if m.name == "R":
            return np.bincount(self.query_of, weights=u, minlength=self.n_queries), np.ones(self.n_pairs)
        ideal = self._ideal(u, k, base)
        positive = u > 0
        # each pair's group: (query, gain); the group's places in the ideal order: after every pair of the
        # query with a higher gain
        order = np.lexsort((-u, self.query_of))
        q_sorted, u_sorted = self.query_of[order], u[order]
        place = np.arange(self.n_pairs, dtype=np.int64) - self.query_start[q_sorted]
        head = np.ones(self.n_pairs, dtype=bool)
        head[1:] = (q_sorted[1:] != q_sorted[:-1]) | (u_sorted[1:] != u_sorted[:-1])
        group = np.cumsum(head) - 1
        disc = np.where(place < k, 1.0 / log_ranks(np.minimum(place, k - 1), base), 0.0)
        sums = np.bincount(group, weights=disc)
        sizes = np.bincount(group)
        deriv = np.zeros(self.n_pairs, dtype=np.float64)
        deriv[order] = (sums / sizes)[group]
        deriv[~positive] = 0.0  # a gain of 0 holds no place in the ideal; its derivative is one-sided
        return ideal, deriv

    def linearization(self, grades: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(float64 [runs]: each run's mean at ``grades``; float64 [runs, pairs]: the derivative of each run's
        mean over the queries in each pair's unit, :meth:`units`) for a first-order (Taylor) expansion of
        the means around ``grades``: mean(h) ~ mean(g) + A @ (units(h) - units(g)). Where a query's
        denominator is 0 its value is 0 and its derivative is taken as 0."""
        values = self.values(grades)
        den, dden = self.denominators(grades)
        w = self.position_weights()
        q = self.n_queries
        den_pair = den[self.query_of]
        safe = np.where(den_pair > 0, den_pair, 1.0)
        num_pair = values[:, self.query_of] * den_pair  # the numerator of run r's value on the pair's query
        a = (w / safe - num_pair * dden / safe**2) / q
        a[:, den_pair == 0] = 0.0
        return values.mean(axis=1), a

    def means(self, grades: np.ndarray) -> np.ndarray:
        """float64 [runs]: each run's mean over the queries."""
        out: np.ndarray = self.values(grades).mean(axis=1)
        return out


# ---------------------------------------------------------------------------------------- building


def check_measure(measure: str) -> Measure:
    """The measure, parsed, when :meth:`Problem.values` computes it; else a one-line error."""
    m = parse(measure)
    if m.name not in SUPPORTED or m.k is None:
        raise ValidationError(
            f"judging budgets (the replay, a live design's estimates) are of nDCG@k, P@k and R@k, not {m}",
            got=measure,
            fix="pass -m nDCG@10 (or P@k, R@k)",
        )
    own = dict(m.overrides)
    bad = sorted(set(own) - _FREE_AXES)
    if bad:
        raise ValidationError(
            f"{m} changes {', '.join(bad)}; the replay follows the default conventions except gain and discount",
            got=measure,
            fix="drop those overrides",
        )
    return m


def build_problem(
    full: Qrels,
    model: Qrels,
    runs: Sequence[Run],
    measure: str = "nDCG@10",
    probabilities: Mapping[tuple[str, str], Sequence[float]] | np.ndarray | None = None,
    pool_depth: int | None = None,
    probabilities_source: str | None = None,
) -> tuple[Problem, np.ndarray]:
    """(the Problem, the people's grades per pair, which only the Oracle may hold). Refuses (ValidationError,
    one line) MODEL missing pairs FULL has: how many and the first.

    ``probabilities``: the model's grade probabilities by pair (``{(query_id, doc_id): (p0, ..., pG)}``, as
    :func:`qrelkit.formats.probabilities.read_probabilities` reads them) or an array [pairs, G + 1] in the
    Problem's pair order (``probabilities_source``: their file, for errors). ``pool_depth``: pool only the
    pairs some run ranks within that depth (FULL's pairs below it are left out, of the ideal ordering too);
    None pools every pair FULL judged."""
    import polars as pl

    m = check_measure(measure)
    k = int(m.k or 0)
    if not runs:
        raise ValidationError("no runs to replay", fix="pass at least one run")
    if pool_depth is not None and pool_depth < 1:
        raise ValidationError(f"a pool depth of {pool_depth}", fix="pass a depth of at least 1")
    if len(runs) > MAX_RUNS:
        raise ValidationError(
            f"{len(runs)} runs to replay; at most {MAX_RUNS}",
            fix="replay the candidate runs you would compare (every pair of them is estimated in every repetition)",
        )
    names = sorted(r.name for r in runs)
    if len(set(names)) < len(names):
        dup = next(n for n, b in itertools.pairwise(names) if n == b)
        raise ValidationError(f"two runs are named {dup!r}", fix="give every run its own name")
    by_name = {r.name: r for r in runs}

    judged = full.frame.select("query_id", "doc_id", "grade").filter(pl.col("grade") >= 0)
    run_queries: set[str] = set()
    for r in runs:
        run_queries.update(r.frame.get_column("query_id").unique().to_list())
    queries = tuple(
        sorted(q for q in set(judged.get_column("query_id").unique().to_list()) if q in run_queries)
    )
    if not queries:
        raise ValidationError(
            f"no query of {full.name} is in any run",
            fix="pass runs of the judged queries (check the query ids)",
        )
    qmap = pl.DataFrame({"query_id": list(queries), "q": np.arange(len(queries), dtype=np.int64)})

    # each run's rows on the judged queries, ranked: by score descending, tied scores in a block
    ranked: dict[str, pl.DataFrame] = {}
    for name in names:
        rows = (
            by_name[name]
            .frame.select("query_id", "doc_id", "score", "line")
            .join(qmap, on="query_id", how="inner")
            .sort(["q", "score", "line"], descending=[False, True, False])
            .with_columns(pl.int_range(pl.len()).over("q").alias("pos"))
            .with_columns(pl.col("pos").min().over(["q", "score"]).alias("block_pos"))
        )
        ranked[name] = rows

    pool = judged.join(qmap, on="query_id", how="inner")
    judged_pairs = pool.height
    if pool_depth is not None:
        reached = pl.concat(
            [r.filter(pl.col("block_pos") < pool_depth).select("query_id", "doc_id") for r in ranked.values()]
        ).unique()
        pool = pool.join(reached, on=["query_id", "doc_id"], how="semi")
    if pool.height == 0:
        raise ValidationError(f"no pair of {full.name} is pooled", fix="pass a larger --depth or other runs")
    pooled_queries = set(pool.get_column("query_id").unique().to_list())
    if len(pooled_queries) < len(queries):  # a query with no pooled pair carries nothing to replay: left out
        queries = tuple(q for q in queries if q in pooled_queries)
        qmap = pl.DataFrame({"query_id": list(queries), "q": np.arange(len(queries), dtype=np.int64)})
        pool = pool.drop("q").join(qmap, on="query_id", how="inner")
        ranked = {name: r.drop("q").join(qmap, on="query_id", how="inner") for name, r in ranked.items()}
    pool = pool.sort(["q", "doc_id"]).with_columns(pl.int_range(pl.len()).alias("pair"))
    n_pairs = pool.height

    model_rows = model.frame.select("query_id", "doc_id", pl.col("grade").alias("model_grade"))
    if model_rows.select(pl.struct("query_id", "doc_id").is_duplicated().any()).item():
        raise ValidationError(f"{model.name} grades a pair twice", fix="keep one grade a pair")
    joined = pool.join(model_rows, on=["query_id", "doc_id"], how="left").sort("pair")
    missing = joined.filter(pl.col("model_grade").is_null())
    if missing.height:
        first = missing.row(0, named=True)
        raise ValidationError(
            f"{model.name} lacks {missing.height} of the {n_pairs} pooled pairs {full.name} judged; the first: "
            f"query {first['query_id']} document {first['doc_id']}",
            source=_source(model),
            fix="grade every pooled pair with the model (or pass the qrels the model graded)",
        )

    q_of = joined.get_column("q").to_numpy().astype(np.int64)
    query_start = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_of, minlength=len(queries)), out=query_start[1:])
    people = joined.get_column("grade").to_numpy().astype(np.int64)
    model_grades = joined.get_column("model_grade").to_numpy().astype(np.int64)
    _check_scale(full, model, model_grades)
    max_grade = int(max(1, people.max(initial=0), model_grades.max(initial=0)))
    pairs = tuple(
        zip(joined.get_column("query_id").to_list(), joined.get_column("doc_id").to_list(), strict=True)
    )

    _check_size(len(names), len(queries), k, n_pairs)
    keyed = pool.select("query_id", "doc_id", "pair")
    ranks = np.full((len(names), len(queries), k), -1, dtype=np.int64)
    tie_parts: list[tuple[int, pl.DataFrame]] = []
    best_rank = np.full(n_pairs, np.iinfo(np.int64).max, dtype=np.int64)
    for i, name in enumerate(names):
        rows = ranked[name].join(keyed, on=["query_id", "doc_id"], how="left")
        found = rows.filter(pl.col("pair").is_not_null())
        at = found.get_column("pair").to_numpy().astype(np.int64)
        best_rank[at] = np.minimum(best_rank[at], found.get_column("pos").to_numpy().astype(np.int64))
        top = rows.filter(pl.col("pos") < k)
        ranks[i, top.get_column("q").to_numpy(), top.get_column("pos").to_numpy()] = (
            top.get_column("pair").fill_null(-1).to_numpy()
        )
        tied = rows.with_columns(pl.len().over(["q", "score"]).alias("size")).filter(
            (pl.col("size") > 1) & (pl.col("block_pos") < k)
        )
        if tied.height:
            tie_parts.append((i, tied))
    ties = _tie_blocks(tie_parts, k) if tie_parts else None

    probs = (
        _probabilities(probabilities, pairs, max_grade, probabilities_source)
        if probabilities is not None
        else None
    )
    if probs is not None:
        max_grade = probs.shape[1] - 1
    problem = Problem(
        queries=queries,
        pairs=pairs,
        query_of=q_of,
        query_start=query_start,
        model=model_grades,
        probabilities=probs,
        runs=tuple(names),
        ranks=ranks,
        depth=k,
        measure=str(measure),
        max_grade=max_grade,
        ties=ties,
        pool_depth=pool_depth,
        best_rank=best_rank,
        unpooled=judged_pairs - n_pairs,
    )
    return problem, people


def _check_size(runs: int, queries: int, k: int, pairs: int) -> None:
    """Refuse a problem whose arrays would pass :data:`MAX_CELLS`, in one line naming the sizes."""
    for what, cells in (("runs x queries x k", runs * queries * k), ("runs x pooled pairs", runs * pairs)):
        if cells > MAX_CELLS:
            raise ValidationError(
                f"{runs} runs, {queries} queries, {pairs} pooled pairs at k = {k}: {what} is {cells:,} cells, "
                f"past the replay's bound of {MAX_CELLS:,}",
                fix="replay fewer runs (the candidates you would compare), a smaller --depth or a smaller k",
            )


def _check_scale(full: Qrels, model: Qrels, model_grades: np.ndarray) -> None:
    """Refuse a model grading on another scale than the people's: its grades of the pooled pairs must lie
    within FULL's lowest and highest grade (its rubric's scale when it has one). A lenient model that never
    gives the lowest grade is on the same scale; one grading 0..9 beside people's 0..3 is not, and the
    strategies would rank grades of two scales together."""
    if full.scale:
        low, high = min(full.scale), max(full.scale)
    else:
        grades = full.frame["grade"].to_numpy()
        low, high = int(np.min(grades)), int(np.max(grades))  # FULL pools at least one pair: not empty
    if not len(model_grades):
        return
    got_low, got_high = int(model_grades.min()), int(model_grades.max())
    if got_low < low or got_high > high:
        raise IncomparableError(
            f"{model.name} grades {got_low}..{got_high} but {full.name}'s people grade {low}..{high}: "
            "different grade scales",
            source=_source(model),
            got=got_high if got_high > high else got_low,
            fix="map the model's grades to the people's scale first; if the people did not use every grade of "
            "the scale, give the rubric (--rubric rubric.toml)",
        )


def _source(qrels: Qrels) -> str:
    """The file (or name) a qrels value came from, for an error's location."""
    source = qrels.meta.get("source")
    return str(source) if source and source != "dict" else qrels.name


def _tie_blocks(parts: Sequence[tuple[int, object]], k: int) -> TieBlocks:
    import polars as pl

    run, query, size, m_block, m_pair, c_block, c_pos = [], [], [], [], [], [], []
    offset = 0
    for i, frame in parts:
        assert isinstance(frame, pl.DataFrame)
        blocks = frame.select("q", "block_pos", "size").unique(maintain_order=True)
        ids = blocks.with_columns(pl.int_range(pl.len()).alias("b") + offset)
        members = frame.join(ids.select("q", "block_pos", "b"), on=["q", "block_pos"], how="left")
        n = ids.height
        run.append(np.full(n, i, dtype=np.int64))
        query.append(ids.get_column("q").to_numpy().astype(np.int64))
        sz = ids.get_column("size").to_numpy().astype(np.int64)
        size.append(sz)
        m_block.append(members.get_column("b").to_numpy().astype(np.int64))
        m_pair.append(members.get_column("pair").fill_null(-1).to_numpy().astype(np.int64))
        start = ids.get_column("block_pos").to_numpy().astype(np.int64)
        stop = np.minimum(start + sz, k)
        covered = stop - start
        c_block.append(np.repeat(np.arange(n, dtype=np.int64) + offset, covered))
        c_pos.append(
            np.repeat(start, covered)
            + np.arange(covered.sum())
            - np.repeat(np.cumsum(covered) - covered, covered)
        )
        offset += n
    return TieBlocks(
        run=np.concatenate(run),
        query=np.concatenate(query),
        size=np.concatenate(size),
        member_block=np.concatenate(m_block),
        member_pair=np.concatenate(m_pair),
        cover_block=np.concatenate(c_block),
        cover_pos=np.concatenate(c_pos),
    )


def _probabilities(
    given: Mapping[tuple[str, str], Sequence[float]] | np.ndarray,
    pairs: tuple[tuple[str, str], ...],
    max_grade: int,
    source: str | None = None,
) -> np.ndarray:
    """float64 [pairs, max_grade + 1], each row summing to 1 (within 1e-6)."""
    if isinstance(given, np.ndarray):
        arr = np.asarray(given, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[0] != len(pairs):
            raise ValidationError(
                f"grade probabilities of shape {arr.shape} for {len(pairs)} pairs",
                source=source,
                fix="pass one row a pooled pair",
            )
    else:
        missing = [p for p in pairs if p not in given]
        if missing:
            q, d = missing[0]
            raise ValidationError(
                f"the grade probabilities lack {len(missing)} of the {len(pairs)} pooled pairs; the first: "
                f"query {q} document {d}",
                source=source,
                fix="write probabilities for every pair the model graded",
            )
        width = max(len(given[p]) for p in pairs)
        arr = np.zeros((len(pairs), width), dtype=np.float64)
        for i, p in enumerate(pairs):
            row = given[p]
            arr[i, : len(row)] = row
    if arr.shape[1] < max_grade + 1:
        arr = np.hstack([arr, np.zeros((arr.shape[0], max_grade + 1 - arr.shape[1]))])
    sums = arr.sum(axis=1)
    bad = np.flatnonzero((np.abs(sums - 1.0) > 1e-6) | (arr < 0).any(axis=1))
    if len(bad):
        q, d = pairs[int(bad[0])]
        raise ValidationError(
            f"grade probabilities of query {q} document {d} sum to {sums[bad[0]]:.6g}, not 1",
            source=source,
            fix="write each pair's probabilities over the grades 0..G, summing to 1",
        )
    return arr
