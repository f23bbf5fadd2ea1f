"""The bottom line of a comparison: one sentence per measure saying which run is better, which is worse
and which cannot be told apart from its baseline, in words a reader can act on.

:func:`bottom_line` is the one place these sentences are worded; ``qrelkit compare``'s table output, its
HTML page and ``qrelkit report`` print what it returns. A pair is *better* or *worse* when its adjusted
p-value is below alpha (the comparison's own ``significant``), else *not distinguishable*. With a
labeller-noise floor a significant pair is said to be more than the floor, by less than the floor
(``|difference| <= floor``), or within labeller noise because the relabelled copies' range contains 0;
without one the sentence says no floor was measured. When the comparison estimated the differences from a
model's judgments and people's sample (prediction-powered), the sentence speaks of the estimate: its value,
interval and adjusted p-value, and the estimator and the people-judged queries it rests on; an estimate
whose interval is not measurable (the values it rests on do not vary) says so, with the reason. A pair not
told apart whose power analysis (``--power``) needs more queries than it has says that too: "8 queries: too
few to detect a difference of 0.050 at power 0.8 (25 needed)", never a bare "not distinguishable".

Numbers: differences and intervals to 3 decimals (a non-zero difference under 0.0005 to 2 significant
digits), the interval is the comparison's t-interval at its level (``1 - alpha``), p-values to 4 decimals
or in scientific notation below 1e-4.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Claim", "bottom_line", "claims"]


@dataclass(frozen=True)
class Claim:
    """What one (baseline, treatment, measure) says, from the paired test or from the estimate."""

    baseline: str
    treatment: str
    measure: str
    queries: int
    difference: float
    low: float
    high: float
    p_adjusted: float
    significant: bool
    noise: Any = None  # qrelkit.compare.noise.PairNoise
    estimator: str | None = None
    human_queries: int = 0
    power: Any = None  # qrelkit.compare.power.Power or qrelkit.estimation.ppi.HumanPower, with --power
    reason: str | None = None  # why the estimate's interval is not measurable


def claims(comparison: Any) -> list[Claim]:
    """One claim per pair and measure, in the comparison's order: the estimate's when the comparison
    estimated the differences, else the paired test's."""
    noise = comparison.noise
    if comparison.human is not None and comparison.estimated:
        out = []
        for e in comparison.estimated:
            entry = noise.pair(e.baseline, e.treatment, e.measure) if noise is not None else None
            i = e.estimate
            out.append(Claim(e.baseline, e.treatment, e.measure, i.human_queries + i.unlabeled_queries, i.value,
                             i.low, i.high, e.p_adjusted, e.significant, entry, comparison.estimator,
                             i.human_queries, e.power, i.reason))  # fmt: skip
        return out
    return [
        Claim(p.baseline, p.treatment, p.measure, p.queries, p.difference, p.t_interval[0], p.t_interval[1],
              p.p_adjusted, p.significant, p.noise, power=p.power)
        for p in comparison.pairs
    ]  # fmt: skip


def _signed(x: float) -> str:
    if x != 0 and abs(x) < 0.0005:
        return f"{x:+.2g}"
    return f"{x:+.3f}"


def _p(x: float) -> str:
    return f"{x:.4f}" if x >= 1e-4 else f"{x:.1e}"


def _level(alpha: float) -> str:
    return f"{(1.0 - alpha) * 100:g}%"


def _evidence(c: Claim, alpha: float) -> str:
    """The parenthesis after a difference: the interval and the adjusted p-value (and the estimator)."""
    parts = []
    if c.estimator is not None:
        parts.append(f"{c.estimator} from {c.human_queries} people-judged queries")
    if math.isnan(c.low) or math.isnan(c.high):
        parts.append(f"no interval on {c.queries} {'query' if c.queries == 1 else 'queries'}")
    else:
        parts.append(f"{_level(alpha)} interval [{c.low:.3f}, {c.high:.3f}]")
    parts.append(f"adjusted p {_p(c.p_adjusted)}")
    return "(" + ", ".join(parts) + ")"


def _noise_clause(c: Claim) -> str:
    n = c.noise
    if n is None:
        return ""
    floor = n.empirical_floor
    if not math.isnan(floor) and abs(c.difference) <= floor:
        return f", but by less than the labeller-noise floor ({floor:.3f})"
    if not math.isnan(n.simulated_low) and n.simulated_low <= 0.0 <= n.simulated_high:
        return (
            f", but within labeller noise: relabelled copies put the difference between "
            f"{_signed(n.simulated_low)} and {_signed(n.simulated_high)}"
        )
    if math.isnan(floor):
        return ", the labeller-noise floor could not be measured"
    return f", more than the labeller-noise floor ({floor:.3f})"


def _too_few(c: Claim) -> str | None:
    """The clause of a pair not told apart whose power analysis needs more queries than it has, else None."""
    w = c.power
    if w is None or c.significant:
        return None
    what = "people-judged queries" if c.estimator is not None else "queries"
    if w.queries_needed is not None and w.queries_needed <= w.queries_now:
        return None
    target = f"too few to detect a difference of {abs(w.delta):.3f} at power {w.power:g}"
    total = getattr(w, "total", None)  # a HumanPower: the queries a sample can be drawn from
    unreachable = f"not reachable with all {total} queries judged" if total else "not reachable"
    needed = f"{w.queries_needed} needed" if w.queries_needed is not None else unreachable
    return (
        f"{c.treatment} is not distinguishable from {c.baseline} ({w.queries_now} {what}: {target}; {needed})"
    )


def _names(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _sentence(measure: str, group: list[Claim], alpha: float, noise_measured: bool) -> str:
    clauses: list[str] = []
    estimated = "an estimated " if group[0].estimator is not None else ""
    decided = [c for c in group if c.significant and not math.isnan(c.difference)]
    decided.sort(key=lambda c: -c.difference)
    for c in decided:
        verb = "beats" if c.difference > 0 else "is worse than"
        clauses.append(
            f"{c.treatment} {verb} {c.baseline} on {measure} by {estimated}{_signed(c.difference)} "
            f"{_evidence(c, alpha)}{_noise_clause(c)}"
        )
    undecided: dict[str, list[str]] = {}
    apart: list[Claim] = []
    short: list[str] = []
    for c in group:
        if c.reason is not None:
            clauses.append(f"{c.treatment} against {c.baseline}: not measurable ({c.reason})")
        elif math.isnan(c.difference):
            apart.append(c)
        elif (few := _too_few(c)) is not None:
            short.append(few)
        elif not c.significant:
            undecided.setdefault(c.baseline, []).append(c.treatment)
    clauses += short
    for baseline, treatments in undecided.items():
        verb = "is" if len(treatments) == 1 else "are"
        clauses.append(f"{_names(treatments)} {verb} not distinguishable from {baseline}")
    for c in apart:
        clauses.append(f"{c.treatment} and {c.baseline} have no query scored by both")
    if decided and not noise_measured:
        clauses.append("no labeller-noise floor was measured")
    if not decided:
        clauses[0] = f"On {measure}, {clauses[0]}"
    return "; ".join(clauses) + "."


def bottom_line(comparison: Any) -> list[str]:
    """One sentence per measure of ``comparison`` (a :class:`~qrelkit.compare.Comparison`), in the order
    of its measures, e.g. "rerank beats bm25 on nDCG@10 by +0.156 (95% interval [0.085, 0.228], adjusted p
    0.0004), more than the labeller-noise floor (0.077); dense is not distinguishable from bm25." See the
    module docstring for every wording."""
    by_measure: dict[str, list[Claim]] = {}
    for c in claims(comparison):
        by_measure.setdefault(c.measure, []).append(c)
    alpha = comparison.options.alpha
    noise_measured = comparison.noise is not None
    return [_sentence(m, group, alpha, noise_measured) for m, group in by_measure.items()]
