"""Which queries' values a tool takes from the order its sort leaves tied scores in.

Some tools rank by a sort that is not stable and follows no documented rule for equal scores
(torchmetrics' ``torch.argsort`` and ``topk``: :attr:`qrelkit.measures.profiles.Profile.unstable_ties`
names the families). Where a block of tied scores holds relevant and non-relevant documents at a place
the measure reads, the tool's value for that query depends on that order; qrelkit averages over every
ordering of the block (``ties = "average"``) or takes the order its tie convention names, so the tool's
own value there may differ. :func:`order_dependent` finds those queries in one encoding, from the tied
blocks of :class:`~qrelkit.engine.encoding.encoded.Encoded` (``block_starts``); :class:`TieOrder` gathers them over
the encodings of one run (its batches, Spark's partitions); :func:`tie_warnings` writes the one warning
per measure the results carry.

Where the order matters, per family (a block "mixed" when it holds a document the measure counts as
relevant and one it does not, the block's first rank s, 0-based; for recall, precision, AP and RR a
document scored <= 0 under ``nonpositive = "not_retrieved"`` counts as not relevant, as torchmetrics
zeroes its target):

- ``P@k``, ``R@k``, ``FallOut@k``: a mixed block straddles rank k (s < k < s + n): how many relevant
  documents fall within k depends on the order. Without a cutoff every document counts: never.
- ``Success@k``: the same, no relevant document ranks above the block, and the block's non-relevant
  documents can fill its ranks within k.
- ``Rprec``: a mixed block straddles rank R (the relevant documents the measure divides by).
- ``RR`` (``@k``): the first block holding a relevant document is mixed (and starts within k): the rank
  of the first relevant document depends on the order.
- ``AP`` (``@k``): any mixed block (starting within k): the precision at each relevant document of the
  block depends on the order, with or without a cutoff.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..measures.conventions import Conventions
from ..measures.grammar import Measure
from .encoding.encoded import Encoded, positions, stretch_firsts, tied_blocks

#: Query ids named in a warning per run, before the count says how many more.
FIRST_QUERIES = 3
#: Runs named in a warning, before the count says how many more.
FIRST_RUNS = 3

#: The families :func:`order_dependent` knows; a profile names those its tool sorts unstably.
FAMILIES = ("P", "R", "FallOut", "Success", "Rprec", "RR", "AP")


def applies(measure: Measure, families: Sequence[str]) -> bool:
    """Whether a measure is one of ``families`` as the tool computes it (R-precision at R itself:
    ``Rprec(mult=...)`` is trec_eval's, which no such tool has)."""
    if measure.name not in families or measure.name not in FAMILIES:
        return False
    return measure.name != "Rprec" or dict(measure.params).get("mult", "1") == "1"


def order_dependent(enc: Encoded, measure: Measure, conv: Conventions) -> np.ndarray:
    """Per query of ``enc``, whether ``measure``'s value depends on the order of a block of tied scores
    (the rules of this module's docstring); ``conv`` the measure's own conventions."""
    from .kernels.ranked import relevant, relevant_count

    out = np.zeros(enc.n_queries, dtype=bool)
    qidx, pos = positions(enc)
    starts = enc.block_starts if enc.block_starts is not None else tied_blocks(qidx, enc.score)
    if starts is None or not len(starts):  # no two scores tie
        return out
    rel = measure.rel if measure.rel is not None else 1
    family, k = measure.name, measure.k
    counts_nonpositive = family in ("P", "R", "RR", "AP")  # nonpositive applies to these kernels
    hit = relevant(enc, rel, conv if counts_nonpositive else None) > 0
    sizes = np.diff(np.append(starts, len(hit)))
    m = np.add.reduceat(hit.astype(np.int64), starts)
    bq, bpos = qidx[starts], pos[starts]
    mixed = (m > 0) & (m < sizes)
    if family == "AP":
        flagged = mixed if k is None else mixed & (bpos < k)
        if k is not None and conv.ap_denominator == "retrieved":
            _same_mean_at_k(enc, hit, starts, sizes, bq, bpos, k, flagged)
    elif family == "RR":
        with_hit = np.flatnonzero(m > 0)
        first = with_hit[np.unique(bq[with_hit], return_index=True)[1]]  # each query's first such block
        flagged = np.zeros(len(starts), dtype=bool)
        flagged[first] = mixed[first] if k is None else mixed[first] & (bpos[first] < k)
    else:
        if family == "Rprec":
            cut: np.ndarray | int | None = relevant_count(enc, rel, conv).astype(np.int64)[bq]
        else:
            cut = k
        if cut is None:
            return out
        flagged = mixed & (bpos < cut) & (bpos + sizes > cut)
        if family == "Success":
            before = np.cumsum(m) - m  # hits in earlier blocks, from the first query's first block
            first_of_query = stretch_firsts(bpos == 0)
            flagged &= (before - before[first_of_query]) == 0
            flagged &= sizes - m >= k - bpos  # else a relevant document is within k in every order
    out[np.unique(bq[flagged])] = True
    return out


def _same_mean_at_k(
    enc: Encoded,
    hit: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    bq: np.ndarray,
    bpos: np.ndarray,
    k: int,
    flagged: np.ndarray,
) -> None:
    """AP@k over the relevant documents retrieved, a mixed block at rank k itself (only its first row
    within k) and nothing mixed above it: the value is the mean precision c relevant documents above give,
    or that mean with the precision (c + 1) / k of one more, which are equal when S0 k = c (c + 1) (S0 the
    precisions' sum). Such a block is unflagged in place; the rest of the rule is exact."""
    from fractions import Fraction

    for b in np.flatnonzero(flagged & (bpos == k - 1) & (sizes > 1)).tolist():
        q = int(bq[b])
        lo = int(enc.offsets[q])
        earlier = np.flatnonzero(flagged[:b] & (bq[:b] == q))
        if len(earlier):
            continue  # a mixed block above: the order matters there
        ranks = np.flatnonzero(hit[lo : int(starts[b])]) + 1
        c = len(ranks)
        total = sum((Fraction(j, int(r)) for j, r in enumerate(ranks.tolist(), start=1)), Fraction(0))
        if c and total * k == c * (c + 1):
            flagged[b] = False


class TieOrder:
    """Per measure, the queries of one run whose value follows the tool's order of tied scores, gathered
    over the run's encodings (:meth:`record`) or from elsewhere (:meth:`add`: Spark's partitions)."""

    def __init__(self, families: Sequence[str]):
        self.families = tuple(families)
        self._found: dict[str, list[str]] = {}

    def wants(self, measure: Measure) -> bool:
        return applies(measure, self.families)

    def record(self, enc: Encoded, measure: Measure, conv: Conventions) -> None:
        """The queries of one encoding where ``measure`` (under its conventions ``conv``) follows the order."""
        if not self.wants(measure):
            return
        flags = np.flatnonzero(order_dependent(enc, measure, conv)).tolist()
        self.add(str(measure), [enc.queries.query_ids[i] for i in flags])

    def add(self, measure: str, query_ids: Sequence[str]) -> None:
        if query_ids:
            self._found.setdefault(measure, []).extend(query_ids)

    def queries(self) -> dict[str, tuple[str, ...]]:
        """Measure name -> the queries found, sorted, each once."""
        return {m: tuple(sorted(set(ids))) for m, ids in self._found.items()}


def tie_order_of(conv: Conventions) -> TieOrder | None:
    """A :class:`TieOrder` when ``conv``'s profile names families its tool sorts unstably, else ``None``
    (nothing to find: nothing is computed)."""
    profile = None
    if conv.profile is not None:
        from ..measures.profiles import tool_of

        profile = tool_of(conv)
    if profile is None:
        return None
    families = profile.unstable_ties
    return TieOrder(families) if families else None


def _where(measure: Measure) -> str:
    """Where, for the measure's family, a mixed block of tied scores makes the order matter."""
    k = measure.k
    if measure.name == "AP":
        return "lies in the ranking" if k is None else f"starts within the top {k}"
    if measure.name == "RR":
        return "holds the first relevant document" + ("" if k is None else f" within the top {k}")
    if measure.name == "Rprec":
        return "straddles rank R (the number of relevant documents)"
    if measure.name == "Success":
        return f"straddles rank {k} with no relevant document above it"
    return f"straddles rank {k}"


def tie_warnings(
    conv: Conventions, measures: Sequence[Measure], found: Sequence[tuple[str, dict[str, tuple[str, ...]]]]
) -> list[str]:
    """One warning per measure whose value follows the tool's order of tied scores in some query:
    ``found`` holds (run name, :meth:`TieOrder.queries`) per run. Each names the measure, the first
    queries of the first runs with their counts, what qrelkit did and why the tool's value may differ."""
    profile = None
    if conv.profile is not None:
        from ..measures.profiles import tool_of

        profile = tool_of(conv)
    if profile is None:
        return []
    tool = profile.tool.split(" ")[0]
    tools = tool + ("'" if tool.endswith("s") else "'s")
    out = []
    for measure in measures:
        name = str(measure)
        per_run = [(run, queries[name]) for run, queries in found if queries.get(name)]
        if not per_run:
            continue
        parts = [_run_part(run, ids) for run, ids in per_run[:FIRST_RUNS]]
        rest = per_run[FIRST_RUNS:]
        if rest:
            n = sum(len(ids) for _, ids in rest)
            parts.append(f"{n} quer{'y' if n == 1 else 'ies'} of {len(rest)} more run{'s' * (len(rest) > 1)}")
        ties = measure.conventions(conv).ties
        did = (
            "averaged over every ordering of the tied documents (ties=average)"
            if ties == "average"
            else f"ordered the tied documents by ties={ties}"
        )
        out.append(
            f"{name} under profile {profile.name!r}: in {_and(parts)} a block of tied scores holding "
            f"relevant and non-relevant documents {_where(measure)}, where {tools} value follows the "
            f"order {profile.unstable_sort} leaves tied documents in (neither stable nor documented); "
            f"qrelkit {did}, so {tools} own value for those queries may differ"
        )
    return out


def _run_part(run: str, ids: Sequence[str]) -> str:
    n = len(ids)
    first = ", ".join(repr(q) for q in ids[:FIRST_QUERIES])
    more = f", ... {n - FIRST_QUERIES} more" if n > FIRST_QUERIES else ""
    return f"{n} quer{'y' if n == 1 else 'ies'} of run {run!r} ({first}{more})"


def _and(parts: list[Any]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
