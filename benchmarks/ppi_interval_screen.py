"""Screening of candidate intervals for ppi++ at small |H|, by simulation (not a timed test).

The data, judges, runs, designs and target are those of ``benchmarks/ppi_validity.py`` (read its docstring):
TREC DL 2019 and 2020 passage judgments, the ``lenient`` and ``query-correlated`` simulated judges regrading
every pair afresh in every repetition, the five generated runs (the same seed, so the same runs), the
``population`` and ``finite`` designs, |H| = 10, 20 and 30, nDCG@10. What differs is speed: nDCG@10 under
each repetition's model grades is computed here in numpy for a block of repetitions at once (the run's top
ten are fixed, the ideal DCG comes from each query's count of each grade), checked against
``qrelkit.evaluate`` on the people's grades and on one draw of each judge before the simulation starts, and
every candidate interval is computed for all repetitions at once.

Candidates (each a 95% interval of the people's mean; ``human`` is the people-only t interval, the width to
beat):

- ``t``: ppi++'s current default (lambda fitted on H and U, variances ddof 1, t with n - 1 degrees of
  freedom; equal to :func:`qrelkit.estimation.ppi.interval`, checked on the first repetitions);
- ``loo t(n-1)``, ``loo t(n-2)``: lambda cross-fitted leave-one-out (query i's residual weighted by the
  lambda fitted without i), t with n - 1 or n - 2 degrees of freedom;
- ``2fold t(n-2)``: lambda cross-fitted on two halves of H (each half's residuals weighted by the lambda of
  the other half and all of U);
- ``delta t``: the t interval with the variance of the estimated lambda added (the delta method:
  ``(mean_U yhat - mean_H yhat)^2 var(lam)``, ``var(lam)`` from lambda's influence function);
- ``shrink c``: lambda times n / (n + c), t with n - 1 degrees of freedom;
- ``hall``: Hall's (1992) skewness-removing transformation of the t statistic of the rectifier
  (``y - lam yhat``), inverted at the t quantiles;
- ``boot-t``: the studentized bootstrap over H (U fixed, lambda refitted in each resample), B resamples;
- ``loo hall``: leave-one-out lambda and Hall's transformation together;
- ``shift``: the first-order term of Hall's transformation alone (``b``): the t interval moved by
  ``gamma / (6 sqrt n)`` standard errors towards the skewed side, its width unchanged;
- ``human hall``: Hall's transformation of the people-only t statistic (a reference: what removing the
  skewness costs without the model).

    nice -n 19 python benchmarks/ppi_interval_screen.py --reps 300      # screen
    nice -n 19 python benchmarks/ppi_interval_screen.py --reps 2000 --only t,hall   # confirm

prints, per candidate, judge, design and |H|, the lowest and highest coverage over the 15 rows (three
collections, five runs), how many rows are in 93-97% (population) or at least 93% (finite), in how many the
candidate's mean width is below ``human``'s, and the row of lowest coverage; then the population rows where a
candidate (``human hall`` aside, a reference) is not narrower than ``human``; then the rows where ppi++'s t interval would have to be widened
(about its estimate) by more than human's width allows to reach 93%; then every candidate's coverage and width
on the saturated run.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppi_validity import (
    DESIGNS,
    DL21,
    FILES,
    JUDGES,
    LENIENCY,
    LENIENT,
    MEASURE,
    POOLED,
    SIZES,
    SYSTEMS,
    generated_runs,
    judgments,
    per_query,
)

import qrelkit
from qrelkit.estimation.ppi import interval

CANDIDATES = (
    "human",
    "t",
    "loo t(n-1)",
    "loo t(n-2)",
    "2fold t(n-2)",
    "delta t",
    "shrink 2",
    "shrink 5",
    "hall",
    "loo hall",
    "boot-t",
    "human hall",
    "shift",
)
CUT = 10
GAIN = 2.0 ** np.arange(4) - 1.0


class Ndcg:
    """nDCG@10 (qrelkit's default conventions: gain 2^grade - 1, log2 discount, ideal from every judged
    passage of the query, 0 where nothing is relevant) of each run on each query for a block of grade
    vectors at once."""

    def __init__(self, frame: pl.DataFrame, scores: list[np.ndarray]) -> None:
        self.queries = sorted(set(frame["query_id"].to_list()))
        self.position = np.searchsorted(self.queries, frame["query_id"].to_numpy())
        docs = frame["doc_id"].to_numpy()
        self.discount = 1.0 / np.log2(np.arange(CUT) + 2.0)
        tops = []
        for score in scores:
            top = np.full((len(self.queries), CUT), -1)
            # trec_eval's order: score descending, then document id descending
            order = np.lexsort((docs, score, self.position))[::-1]
            for q in range(len(self.queries)):
                pairs = order[self.position[order] == q][:CUT]
                top[q, : len(pairs)] = pairs
            tops.append(top)
        self.top = np.stack(tops)  # (runs, queries, CUT), -1 where the query has fewer passages

    def __call__(self, grades: np.ndarray) -> np.ndarray:
        """(block, runs, queries) nDCG@10 for grades of shape (block, pairs)."""
        block, queries = len(grades), len(self.queries)
        padded = np.concatenate([grades, np.zeros((block, 1), grades.dtype)], axis=1)
        gains = GAIN[
            padded[:, np.where(self.top < 0, grades.shape[1], self.top)]
        ]  # (block, runs, queries, CUT)
        dcg = (gains * self.discount).sum(axis=-1)
        key = (np.arange(block)[:, None] * queries + self.position[None, :]) * 4 + grades
        counts = np.bincount(key.ravel(), minlength=block * queries * 4).reshape(block, queries, 4)
        above = np.cumsum(counts[:, :, ::-1], axis=-1)  # passages of grade >= 3, >= 2, >= 1, >= 0
        ideal_grade = (np.arange(CUT)[None, None, :, None] < above[:, :, None, :3]).sum(axis=-1)
        ideal_gain = GAIN[ideal_grade]
        ideal = (ideal_gain * self.discount).sum(axis=-1)  # (block, queries)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(ideal[:, None, :] > 0, dcg / ideal[:, None, :], 0.0)


def judge_block(
    judge: str, grades: np.ndarray, position: np.ndarray, queries: int, block: int, rng
) -> np.ndarray:
    """``block`` repetitions of ppi_validity.judge_grades, at once."""
    matrix = LENIENT if judge == "lenient" else DL21
    cum = matrix.cumsum(axis=1)[grades]  # (pairs, 4)
    drawn = (rng.random((block, len(grades)))[:, :, None] > cum[None]).sum(axis=-1)
    if judge == "lenient":
        return drawn
    leniency = rng.normal(*LENIENCY, (block, queries))[:, position]
    whole = np.floor(leniency)
    shift = whole + (rng.random((block, len(grades))) < leniency - whole)
    return np.clip(drawn + shift, 0, 3).astype(np.int64)


# ---- the candidates, each over arrays of shape (reps, n) and (reps, N) -------------------------------


def var1(a: np.ndarray) -> np.ndarray:
    return a.var(axis=-1, ddof=1)


def lam_fit(y, yhat, yu):
    """power_lambda over the last axis (clipped to [0, 1], 0 when the model's values do not vary)."""
    n, big_n = y.shape[-1], yu.shape[-1]
    cov = ((y - y.mean(-1, keepdims=True)) * (yhat - yhat.mean(-1, keepdims=True))).sum(-1) / n
    var = np.concatenate([yhat, np.broadcast_to(yu, yhat.shape[:-1] + yu.shape[-1:])], axis=-1).var(
        -1, ddof=1
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(var > 0, cov / ((1.0 + n / big_n) * var), 0.0)
    return np.clip(np.nan_to_num(lam), 0.0, 1.0)


def loo_lams(y, yhat, yu):
    """(reps, n): lambda fitted without query i (and all of U), from sums less query i."""
    n, big_n = y.shape[1], yu.shape[1]
    m = n - 1
    sy, sx, sxy = y.sum(1, keepdims=True), yhat.sum(1, keepdims=True), (y * yhat).sum(1, keepdims=True)
    sy_i, sx_i, sxy_i = sy - y, sx - yhat, sxy - y * yhat
    cov = (sxy_i - sy_i * sx_i / m) / m
    su, suu = yu.sum(1, keepdims=True), (yu**2).sum(1, keepdims=True)
    sxx = (yhat**2).sum(1, keepdims=True)
    tot, tot2 = sx_i + su, sxx - yhat**2 + suu
    k = m + big_n
    var = (tot2 - tot**2 / k) / (k - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(var > 1e-15, cov / ((1.0 + m / big_n) * var), 0.0)
    return np.clip(np.nan_to_num(lam), 0.0, 1.0)


def t_from(value, se, df, alpha=0.05):
    half = stats.t.ppf(1 - alpha / 2, df) * se
    return value - half, value + half


def ppi_t(y, yhat, yu, lam, df):
    n, big_n = y.shape[1], yu.shape[1]
    rect = y - lam[:, None] * yhat
    value = lam * yu.mean(1) + rect.mean(1)
    se = np.sqrt(lam**2 * var1(yu) / big_n + var1(rect) / n)
    return value, *t_from(value, se, df)


def cross_t(y, yhat, yu, lams, df):
    """Residual of query i weighted by its own lambda (lams, (reps, n)); U weighted by their mean."""
    n, big_n = y.shape[1], yu.shape[1]
    lam = lams.mean(1)
    rect = y - lams * yhat
    value = lam * yu.mean(1) + rect.mean(1)
    se = np.sqrt(lam**2 * var1(yu) / big_n + var1(rect) / n)
    return value, *t_from(value, se, df)


def twofold(y, yhat, yu):
    n = y.shape[1]
    half = n // 2
    lams = np.empty_like(y)
    a, b = slice(0, half), slice(half, n)
    lams[:, a] = lam_fit(y[:, b], yhat[:, b], yu)[:, None]
    lams[:, b] = lam_fit(y[:, a], yhat[:, a], yu)[:, None]
    return cross_t(y, yhat, yu, lams, n - 2)


def delta_t(y, yhat, yu):
    """t interval with var(lam) (mean_U yhat - mean_H yhat)^2 added, var(lam) from lambda's influence
    function on H (lam = cov / (c var), c = 1 + n/N; the clipping ignored)."""
    n, big_n = y.shape[1], yu.shape[1]
    lam = lam_fit(y, yhat, yu)
    yc, xc = y - y.mean(1, keepdims=True), yhat - yhat.mean(1, keepdims=True)
    cov = (yc * xc).mean(1)
    var = np.concatenate([yhat, yu], 1).var(1, ddof=1)
    c = 1.0 + n / big_n
    with np.errstate(invalid="ignore", divide="ignore"):
        infl = (yc * xc - cov[:, None] - lam[:, None] * c * (xc**2 - var[:, None])) / (c * var[:, None])
    var_lam = np.nan_to_num(infl.var(1, ddof=1) / n)
    rect = y - lam[:, None] * yhat
    value = lam * yu.mean(1) + rect.mean(1)
    se2 = lam**2 * var1(yu) / big_n + var1(rect) / n + (yu.mean(1) - yhat.mean(1)) ** 2 * var_lam
    return value, *t_from(value, np.sqrt(se2), n - 1)


def hall(y, yhat, yu, lams, order=3):
    """Hall's (1992) transformation of the t statistic, g(T) = T + a T^2 + a^2 T^3 / 3 + b with
    a = gamma / (3 sqrt n), b = gamma / (6 sqrt n), gamma the rectifier's skewness; the interval
    {mu: t_(a/2) <= g(T(mu)) <= t_(1-a/2)}. lams: (reps, n) per-query lambdas (all equal unless
    cross-fitted)."""
    n, big_n = y.shape[1], yu.shape[1]
    lam = lams.mean(1)
    rect = y - lams * yhat
    value = lam * yu.mean(1) + rect.mean(1)
    var_r = var1(rect)
    se = np.sqrt(lam**2 * var1(yu) / big_n + var_r / n)
    rc = rect - rect.mean(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        gamma = np.nan_to_num((rc**3).mean(1) / rc.var(1) ** 1.5)
        # the rectifier's share of the variance carries its skewness into the estimate
        gamma = gamma * (var_r / n / se**2) ** 1.5
    a = gamma / (3.0 * math.sqrt(n))
    b = gamma / (6.0 * math.sqrt(n))
    q = stats.t.ppf(0.975, n - 1)

    if order == 1:  # the first-order term alone: the interval moved by b se, its width the t interval's
        return value, value - (q - b) * se, value + (q + b) * se

    def inverse(x):
        # g(T) = ((1 + a T)^3 - 1) / (3 a) + b  =>  T = ((1 + 3 a (x - b))^(1/3) - 1) / a
        with np.errstate(invalid="ignore", divide="ignore"):
            small = np.abs(a) < 1e-12
            t = (np.cbrt(1.0 + 3.0 * a * (x - b)) - 1.0) / np.where(small, 1.0, a)
            return np.where(small, x - b, t)

    # T = (value - mu) / se: mu = value - T se; g increasing
    low = value - inverse(q) * se
    high = value - inverse(-q) * se
    return value, low, high


def boot_t(y, yhat, yu, boots, rng):
    n, big_n = y.shape[1], yu.shape[1]
    lam = lam_fit(y, yhat, yu)
    value, _, _ = ppi_t(y, yhat, yu, lam, n - 1)
    rect = y - lam[:, None] * yhat
    se = np.sqrt(lam**2 * var1(yu) / big_n + var1(rect) / n)
    reps = len(y)
    idx = rng.integers(0, n, (reps, boots, n))
    yb = np.take_along_axis(y[:, None, :], idx, 2)
    xb = np.take_along_axis(yhat[:, None, :], idx, 2)
    ub = np.broadcast_to(yu[:, None, :], (reps, boots, big_n))
    lb = lam_fit(yb, xb, ub)
    rb = yb - lb[..., None] * xb
    vb = lb * yu.mean(1)[:, None] + rb.mean(2)
    seb = np.sqrt(lb**2 * var1(yu)[:, None] / big_n + rb.var(2, ddof=1) / n)
    with np.errstate(invalid="ignore", divide="ignore"):
        tb = (vb - value[:, None]) / seb
    tb = np.where(np.isfinite(tb), tb, np.nan)
    with warnings.catch_warnings():  # a draw whose every resample has constant values: no interval (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        lo_q, hi_q = np.nanquantile(tb, [0.025, 0.975], axis=1)
    return value, value - hi_q * se, value - lo_q * se


def candidates(y, yhat, yu, only, rng, boots) -> dict[str, tuple]:
    n = y.shape[1]
    out = {}
    lam = lam_fit(y, yhat, yu)
    for name in only:
        if name == "human":
            m, se = y.mean(1), np.sqrt(var1(y) / n)
            out[name] = (m, *t_from(m, se, n - 1))
        elif name == "t":
            out[name] = ppi_t(y, yhat, yu, lam, n - 1)
        elif name.startswith("loo t"):
            out[name] = cross_t(y, yhat, yu, loo_lams(y, yhat, yu), n - (1 if "n-1" in name else 2))
        elif name == "2fold t(n-2)":
            out[name] = twofold(y, yhat, yu)
        elif name == "delta t":
            out[name] = delta_t(y, yhat, yu)
        elif name.startswith("shrink"):
            c = float(name.split()[1])
            out[name] = ppi_t(y, yhat, yu, lam * n / (n + c), n - 1)
        elif name == "hall":
            out[name] = hall(y, yhat, yu, np.repeat(lam[:, None], n, 1))
        elif name == "loo hall":
            out[name] = hall(y, yhat, yu, loo_lams(y, yhat, yu))
        elif name == "boot-t":
            parts = [boot_t(y[s : s + 250], yhat[s : s + 250], yu[s : s + 250], boots, rng)
                     for s in range(0, len(y), 250)]  # fmt: skip
            out[name] = tuple(np.concatenate([p[j] for p in parts]) for j in range(3))
        elif name == "shift":
            out[name] = hall(y, yhat, yu, np.repeat(lam[:, None], n, 1), order=1)
        elif name == "human hall":
            zero = np.zeros_like(y)
            out[name] = hall(y, zero, yu, zero)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--boots", type=int, default=400)
    parser.add_argument("--only", default=",".join(CANDIDATES))
    args = parser.parse_args()
    if not 1 <= args.reps <= 100_000 or not 1 <= args.block <= 1000 or not 10 <= args.boots <= 10_000:
        parser.error("--reps 1..100000, --block 1..1000, --boots 10..10000")
    only = tuple(s.strip() for s in args.only.split(","))
    unknown = [s for s in only if s not in CANDIDATES]
    if unknown:
        parser.error(f"--only {','.join(unknown)}: one of {', '.join(CANDIDATES)}")
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    frame = judgments()
    # the runs of ppi_validity.py (same seed, same draws), and their scores for the numpy nDCG
    runs = generated_runs(frame, np.random.default_rng(args.seed))
    replay = np.random.default_rng(args.seed)
    grades = frame["grade"].to_numpy()
    queries_all, position = np.unique(frame["query_id"].to_numpy(), return_inverse=True)
    scores = []
    for _name, weight, spread in SYSTEMS:
        skill = weight * np.exp(replay.normal(0.0, spread, len(queries_all)))
        scores.append(skill[position] * grades + replay.normal(0.0, 1.0, len(grades)))
    ndcg = Ndcg(frame, scores)
    queries = ndcg.queries
    nist = qrelkit.qrels_from_frame(frame.drop("collection"), name="nist")
    people_d = per_query(qrelkit.evaluate(nist, runs, [MEASURE]), queries)
    names = [s[0] for s in SYSTEMS]
    people = np.stack([people_d[r] for r in names])  # (runs, queries)
    assert np.allclose(ndcg(grades[None])[0], people, atol=1e-12), "numpy nDCG@10 differs from qrelkit's"
    for judge in JUDGES:
        draw = judge_block(judge, grades, ndcg.position, len(queries), 1, rng)
        mq = qrelkit.qrels_from_frame(
            frame.drop("collection").with_columns(pl.Series("grade", draw[0])), name="m"
        )
        ref = per_query(qrelkit.evaluate(mq, runs, [MEASURE]), queries)
        assert np.allclose(ndcg(draw)[0], np.stack([ref[r] for r in names]), atol=1e-12), judge
    owner = dict(zip(frame["query_id"].to_list(), frame["collection"].to_list(), strict=True))
    members = {POOLED: np.arange(len(queries))}
    for collection in FILES:
        members[collection] = np.array([i for i, q in enumerate(queries) if owner[q] == collection])
    found: dict = {}
    width: dict = {}
    need: dict = {}
    checked = False
    for judge in JUDGES:
        model = np.concatenate(
            [
                ndcg(
                    judge_block(
                        judge, grades, ndcg.position, len(queries), min(args.block, args.reps - s), rng
                    )
                )
                for s in range(0, args.reps, args.block)
            ]
        )  # (reps, runs, queries)
        for collection, idx in members.items():
            sample = idx[rng.integers(0, len(idx), (args.reps, len(idx)))]
            order = np.stack([rng.permutation(idx) for _ in range(args.reps)])
            for size in SIZES:
                for design, drawn in (("population", sample), ("finite", order)):
                    h, u = drawn[:, :size], drawn[:, size:]
                    for r, run in enumerate(names):
                        mr = model[:, r, :]
                        y = people[r][h]
                        yhat = np.take_along_axis(mr, h, 1)
                        yu = np.take_along_axis(mr, u, 1)
                        target = people[r][idx].mean()
                        got = candidates(y, yhat, yu, only, rng, args.boots)
                        if not checked and "t" in got:
                            for k in range(5):
                                ref_i = interval("ppi++", y[k], yhat[k], yu[k])
                                assert np.allclose((ref_i.value, ref_i.low, ref_i.high),
                                                   [got["t"][j][k] for j in range(3)]), "t differs"  # fmt: skip
                            checked = True
                        if "t" in got:
                            v, lo, hi = got["t"]
                            with np.errstate(divide="ignore", invalid="ignore"):
                                ratio = np.where(hi > lo, np.abs(v - target) / ((hi - lo) / 2), np.inf)
                            need[judge, design, size, collection, run] = float(np.quantile(ratio, 0.93))
                        for name, (_v, lo, hi) in got.items():
                            key = (name, judge, design, size, collection, run)
                            found[key] = float(np.mean((lo <= target) & (target <= hi)))
                            width[key] = float(np.nanmean(hi - lo))
    elapsed = time.perf_counter() - start
    print(f"{args.reps} repetitions, seed {args.seed}, {MEASURE}, bootstrap {args.boots}; Monte Carlo SE of a 95% "
          f"coverage {math.sqrt(0.95 * 0.05 / args.reps):.1%}; {elapsed:.0f} s\n")  # fmt: skip
    print(
        "| candidate | judge | design | \\|H\\| | coverage range | rows in band | narrower than human | worst row |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in only:
        for judge in JUDGES:
            for design in DESIGNS:
                for size in SIZES:
                    keys = [k for k in found if k[:4] == (name, judge, design, size)]
                    cov = [found[k] for k in keys]
                    ok = [0.93 <= c <= 0.97 if design == "population" else c >= 0.93 for c in cov]
                    narrower = sum(
                        width[k] < width[("human", *k[1:])] for k in keys if ("human", *k[1:]) in width
                    )
                    worst = keys[int(np.argmin(cov))]
                    print(f"| {name} | {judge} | {design} | {size} | {min(cov):.1%}-{max(cov):.1%} | "
                          f"{sum(ok)} of {len(ok)} | {narrower} of {len(keys)} | "
                          f"{worst[4]} {worst[5]} ({width[worst]:.3f} vs human "
                          f"{width.get(('human', *worst[1:]), math.nan):.3f}) |")  # fmt: skip
    if "human" in only:
        print(
            "\nRows of the population design where a candidate is not narrower than human (coverage, mean "
            "width against human's):\n"
        )
        print("| candidate | judge | \\|H\\| | collection | run | coverage | width | human's width |")
        print("|---|---|---|---|---|---|---|---|")
        for (name, judge, design, size, collection, run), w in width.items():
            h = width[("human", judge, design, size, collection, run)]
            if name not in ("human", "human hall") and design == "population" and not w < h:
                c = found[(name, judge, design, size, collection, run)]
                print(f"| {name} | {judge} | {size} | {collection} | {run} | {c:.1%} | {w:.3f} | {h:.3f} |")
    print("\nThe saturated run, population design: coverage (mean width) of each candidate:\n")
    print("| judge | \\|H\\| | collection | " + " | ".join(only) + " |")
    print("|---|---|---|" + "---|" * len(only))
    for judge in JUDGES:
        for size in SIZES:
            for collection in (POOLED, *FILES):
                key = (judge, "population", size, collection, "saturated")
                cells = [f"{found[(name, *key)]:.1%} ({width[(name, *key)]:.3f})" for name in only]
                print(f"| {judge} | {size} | {collection} | " + " | ".join(cells) + " |")
    if need and "human" in only:
        print(
            "\nThe factor by which ppi++'s t interval (``t``) must be widened, about its estimate, for 93% "
            "coverage, against the room it has under human's width (human's mean width / t's); rows of the "
            "population design where the factor exceeds the room:\n"
        )
        print(
            "| judge | \\|H\\| | collection | run | coverage of t | factor needed for 93% | room (human / t width) |"
        )
        print("|---|---|---|---|---|---|---|")
        for (judge, design, size, collection, run), k in need.items():
            room = (
                width[("human", judge, design, size, collection, run)]
                / width[("t", judge, design, size, collection, run)]
            )
            if design == "population" and k > room:
                c = found[("t", judge, design, size, collection, run)]
                print(f"| {judge} | {size} | {collection} | {run} | {c:.1%} | {k:.3f} | {room:.3f} |")


if __name__ == "__main__":
    main()
