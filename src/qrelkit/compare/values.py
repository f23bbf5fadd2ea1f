"""The values of a comparison's parts and its choices: :class:`Options` (every choice :func:`qrelkit.compare.compare`
makes, checked once), :class:`PairComparison` (one pair under one measure) and :class:`MultiComparison` (ANOVA
and Tukey's HSD over three or more runs), with the closed sets of tests, families and procedures. Re-exported by
:mod:`qrelkit.compare`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..agreement.resample import (
    COMPARE_SEED,
    MAX_PAIRED_BOOTSTRAP_RESAMPLES,
    MAX_PERMUTATIONS,
    MONTE_CARLO_PERMUTATIONS,
    PAIRED_BOOTSTRAP_RESAMPLES,
    check_count,
)
from ..errors import ValidationError, did_you_mean
from ..provenance import json_number
from . import stats
from .power import Power

Test = Literal["randomization", "t", "wilcoxon", "bootstrap"]
Family = Literal["pairs", "pairs-x-measures"]
Multi = Literal["tukey", "randomized-tukey"]
TESTS: tuple[str, ...] = get_args(Test)
FAMILIES: tuple[str, ...] = get_args(Family)
MULTI: tuple[str, ...] = get_args(Multi)

#: With ``permutations="auto"``: enumerate every sign vector when at most this many queries have a
#: non-zero difference, else draw :data:`MONTE_CARLO_PERMUTATIONS` random ones.
EXACT_AUTO_LIMIT = 24
#: Columns (pairs x measures) whose paired bootstrap means are held at once: 10,000 resamples of 256
#: columns are 20 MB.
BOOTSTRAP_COLUMNS = 256
#: The counts and the seed of every random draw, from the one resampling module.
BOOTSTRAP_RESAMPLES = PAIRED_BOOTSTRAP_RESAMPLES

VERDICT_EXCEEDS = "exceeds the noise floor and significant"
VERDICT_WITHIN = "significant but within labeller noise"
VERDICT_NOT = "not significant"


def _num(x: Any) -> Any:
    """Whole numbers and text as they are; other numbers by :func:`qrelkit.provenance.json_number`."""
    if isinstance(x, bool | int | str):
        return x
    return json_number(x)


def _choice(value: Any, choices: Sequence[str], what: str) -> Any:
    if value not in choices:
        raise ValidationError(
            f"unknown {what} {value!r}{did_you_mean(str(value), choices)}",
            expected="one of " + ", ".join(choices),
        )
    return value


@dataclass(frozen=True)
class Options:
    """Every choice behind a comparison; written into every output beside the Results' provenance."""

    test: Test = "randomization"
    permutations: int | Literal["auto", "exact"] = "auto"
    seed: int = COMPARE_SEED
    correction: stats.Correction = "holm"
    family: Family = "pairs-x-measures"
    alpha: float = 0.05
    multi: Multi | None = None
    bootstrap: int = BOOTSTRAP_RESAMPLES
    power: bool = False
    power_delta: float | None = None
    power_target: float = 0.8

    def __post_init__(self) -> None:
        _choice(self.test, TESTS, "test")
        _choice(self.correction, stats.CORRECTIONS, "correction")
        _choice(self.family, FAMILIES, "family")
        if self.multi is not None:
            _choice(self.multi, MULTI, "multiple-comparison procedure")
        if isinstance(self.permutations, str):
            _choice(self.permutations, ("auto", "exact"), "permutations")
        else:
            check_count(
                self.permutations,
                "permutations (when not 'exact' or 'auto')",
                MAX_PERMUTATIONS,
                "drawn in constant memory, bounded by time: a p-value is resolved to 1e-8 at the bound",
                "e.g. --permutations 100000",
            )
        if not 0.0 < self.alpha < 1.0:
            raise ValidationError("alpha must be strictly between 0 and 1", got=self.alpha, fix="e.g. 0.05")
        check_count(
            self.bootstrap,
            "bootstrap resamples",
            MAX_PAIRED_BOOTSTRAP_RESAMPLES,
            "one mean a resample is held for each compared column",
            f"e.g. --bootstrap {BOOTSTRAP_RESAMPLES}",
        )
        if self.power_delta is not None and not math.isfinite(self.power_delta):
            raise ValidationError(
                "the power analysis' difference to detect must be a finite number",
                got=self.power_delta,
                fix="e.g. --power-delta 0.02, or leave it out to use the observed difference",
            )

    @property
    def level(self) -> float:
        """The confidence level of every interval: 1 - alpha."""
        return 1.0 - self.alpha

    @property
    def monte_carlo_permutations(self) -> int:
        return self.permutations if isinstance(self.permutations, int) else MONTE_CARLO_PERMUTATIONS

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "permutations": self.permutations,
            "monte_carlo_permutations": self.monte_carlo_permutations,
            "exact_when_nonzero_at_most": EXACT_AUTO_LIMIT if self.permutations == "auto" else None,
            "seed": self.seed,
            "correction": self.correction,
            "family": self.family,
            "alpha": self.alpha,
            "interval_level": self.level,
            "multi": self.multi,
            "bootstrap_resamples": self.bootstrap,
            "power": self.power,
            "power_delta": self.power_delta,
            "power_target": self.power_target,
            "tie_rule": (
                "|T_perm| >= |T_obs| - tol, tol from float error bounds "
                f"(values accurate to {stats.VALUE_ACCURACY:.3g} relative); see docs/compare.md"
            ),
            "wilcoxon": {
                "zero_method": "wilcox",
                "correction": False,
                "method": "exact if n<=50 and no ties",
            },
        }


@dataclass(frozen=True)
class PairComparison:
    """One (baseline, treatment) pair under one measure, over the queries both runs scored."""

    baseline: str
    treatment: str
    measure: str
    queries: int
    mean_baseline: float
    mean_treatment: float
    difference: float  # treatment - baseline
    wins: int  # queries where the treatment is higher
    ties: int
    losses: int
    sd: float  # of the per-query differences
    t_interval: tuple[float, float]
    bootstrap_interval: tuple[float, float]
    effect_size: float  # difference / sd
    test: str
    method: str  # "exact" or "monte carlo" (randomisation), "exact"/"asymptotic" (Wilcoxon), ...
    permutations: int | None  # sign vectors enumerated or drawn (randomisation), resamples (bootstrap)
    statistic: float
    p_value: float
    p_adjusted: float = math.nan
    significant: bool = False
    power: Power | None = None
    noise: Any = None  # qrelkit.compare.noise.PairNoise
    verdict: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "baseline": self.baseline,
            "treatment": self.treatment,
            "measure": self.measure,
            "queries": self.queries,
            "mean_baseline": _num(self.mean_baseline),
            "mean_treatment": _num(self.mean_treatment),
            "difference": _num(self.difference),
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "sd_of_differences": _num(self.sd),
            "t_interval": [_num(v) for v in self.t_interval],
            "bootstrap_interval": [_num(v) for v in self.bootstrap_interval],
            "effect_size": _num(self.effect_size),
            "test": self.test,
            "method": self.method,
            "permutations": self.permutations,
            "statistic": _num(self.statistic),
            "p_value": _num(self.p_value),
            "p_adjusted": _num(self.p_adjusted),
            "significant": self.significant,
        }
        if self.power is not None:
            out["power"] = self.power.to_dict()
        if self.noise is not None:
            out["noise"] = self.noise.to_dict()
            out["verdict"] = self.verdict
        return out


@dataclass(frozen=True)
class MultiComparison:
    """Three or more runs under one measure, over the queries every run scored: the two-way ANOVA without
    replication and every pair by Tukey's HSD with its residual variance (and, asked for, the randomised
    Tukey HSD p-values)."""

    measure: str
    runs: tuple[str, ...]
    queries: int
    means: tuple[float, ...]
    anova: stats.Anova
    pairs: tuple[stats.TukeyPair, ...]
    randomized_p: tuple[float, ...] | None = None  # one per pair, in the order of ``pairs``
    permutations: int | None = None

    def to_dict(self) -> dict[str, Any]:
        a = self.anova
        pairs = []
        for i, p in enumerate(self.pairs):
            row = {
                "baseline": self.runs[p.first],
                "treatment": self.runs[p.second],
                "difference": _num(p.difference),
                "q": _num(p.q),
                "p_value": _num(p.p_value),
                "simultaneous_interval": [_num(p.ci_low), _num(p.ci_high)],
                "effect_size": _num(p.effect_size),
            }
            if self.randomized_p is not None:
                row["p_randomized"] = _num(self.randomized_p[i])
            pairs.append(row)
        return {
            "measure": self.measure,
            "runs": list(self.runs),
            "queries": self.queries,
            "means": [_num(m) for m in self.means],
            "anova": {
                "model": "value ~ C(system) + C(query), one value per cell",
                "systems": {
                    "ss": _num(a.ss_systems),
                    "df": a.df_systems,
                    "f": _num(a.f_systems),
                    "p_value": _num(a.p_systems),
                },
                "queries": {
                    "ss": _num(a.ss_queries),
                    "df": a.df_queries,
                    "f": _num(a.f_queries),
                    "p_value": _num(a.p_queries),
                },
                "residual": {"ss": _num(a.ss_error), "df": a.df_error, "ms": _num(a.ms_error)},
            },
            "tukey_hsd": pairs,
            "randomized_tukey_permutations": self.permutations,
        }
