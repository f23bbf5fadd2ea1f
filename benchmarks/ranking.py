"""The rank correlations of ``qrelkit agree --runs`` beside their peers, and the whole decision-level agreement
at TREC Deep Learning's size.

    python benchmarks/ranking.py --runs 63 --queries 53 --resamples 2000 --repeat 3

1. The query bootstrap of Kendall's tau-b and tau_AP over ``--resamples`` resamples of ``--runs`` runs: qrelkit's
   batched kernels (``qrelkit.agreement.ranking.rank_agreement``, three statistics with the same draws) against
   ``scipy.stats.kendalltau`` called once per resample (tau-b alone) and a plain-Python tau_AP with the paper's
   double loop, called once per resample (as libraries that assume no ties compute it). The same resampled
   means go to each; the values are checked to agree.
2. ``qrelkit.compare.decisions.decision_agreement`` end to end (both evaluations, the rank correlations with their
   intervals, every pair's paired test under both sets of grades), with the t test and with compare's default
   randomisation test, and its peak memory (``tracemalloc``: Python's and numpy's allocations).

The data are synthetic (seeded): per-query values of each run under A drawn around a run effect, and B's values
A's plus a lenient shift that varies by query and noise, so that B orders the runs much as A does (as a model
judge orders TREC runs much as the assessors: tau about 0.9) without being A. Prints ``uptime`` before and after:
other work on the machine distorts the times; the ratios come from one invocation.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import time
import tracemalloc
import warnings


def _tau_ap_loop(truth, other) -> float:
    """tau_AP by the paper's definition, no ties: walk ``other``'s order; C(i) counts the items above that
    ``truth`` also puts above."""
    n = len(truth)
    order = sorted(range(n), key=lambda i: -other[i])
    total = 0.0
    for pos in range(1, n):
        item = order[pos]
        total += sum(1 for u in order[:pos] if truth[u] > truth[item]) / pos
    return 2.0 * total / (n - 1) - 1.0


def _best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    import numpy as np
    import scipy.stats

    from qrelkit.agreement.ranking import rank_agreement, tau_ap_batch, tau_b_batch
    from qrelkit.agreement.resample import resample_counts

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=63)
    parser.add_argument("--queries", type=int, default=53)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rng = np.random.default_rng(0)
    effect = rng.normal(0.45, 0.08, args.runs)
    a = np.clip(effect[None, :] + rng.normal(0, 0.15, (args.queries, args.runs)), 0, 1)
    lenient = rng.normal(0.12, 0.08, (args.queries, 1))
    b = np.clip(a + lenient + rng.normal(0, 0.04, a.shape), 0, 1)
    counts = resample_counts(args.queries, args.resamples, 0).astype(np.float64)
    sums_a, sums_b = counts @ a, counts @ b

    all_time, found = _best(lambda: rank_agreement(a, b, n_resamples=args.resamples, seed=0), args.repeat)
    tb_time, _ = _best(lambda: tau_b_batch(sums_a, sums_b), args.repeat)
    ap_qk_time, _ = _best(lambda: tau_ap_batch(sums_a, sums_b), args.repeat)

    def scipy_taus() -> list[float]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [scipy.stats.kendalltau(x, y).statistic for x, y in zip(sums_a, sums_b, strict=True)]

    def loop_taps() -> list[float]:
        return [_tau_ap_loop(x.tolist(), y.tolist()) for x, y in zip(sums_a, sums_b, strict=True)]

    sp_time, taus = _best(scipy_taus, args.repeat)
    ap_time, taps = _best(loop_taps, args.repeat)
    low, high = np.quantile(taus, [0.025, 0.975])
    kt = found.kendall_tau.interval
    assert math.isclose(kt.low, low, abs_tol=1e-12) and math.isclose(kt.high, high, abs_tol=1e-12)
    low, high = np.quantile(taps, [0.025, 0.975])
    ap = found.tau_ap.interval
    assert math.isclose(ap.low, low, abs_tol=1e-9) and math.isclose(ap.high, high, abs_tol=1e-9)
    print(f"\n{args.runs} runs, {args.queries} queries, {args.resamples} resamples; best of {args.repeat}")
    print(f"tau-b {found.kendall_tau.value:.4f} [{kt.low:.4f}, {kt.high:.4f}], tau_AP {found.tau_ap.value:.4f} "
          f"[{ap.low:.4f}, {ap.high:.4f}] (the same interval from the peers)")  # fmt: skip
    print("| computation over every resample | wall | time / qrelkit's |")
    print("|---|---|---|")
    print(f"| tau-b: qrelkit tau_b_batch | {tb_time:.3f} s | 1.0x |")
    print(
        f"| tau-b: scipy.stats.kendalltau, once per resample | {sp_time:.3f} s | {sp_time / tb_time:.1f}x |"
    )
    print(f"| tau_AP: qrelkit tau_ap_batch | {ap_qk_time:.3f} s | 1.0x |")
    print(f"| tau_AP: the paper's loop in plain Python, once per resample | {ap_time:.3f} s | "
          f"{ap_time / ap_qk_time:.1f}x |")  # fmt: skip
    print(f"| all four with their draws: qrelkit rank_agreement | {all_time:.3f} s | |")

    _end_to_end(a, b, args)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


def _end_to_end(a, b, args) -> None:
    """decision_agreement on qrels and runs whose per-query nDCG@10 is close to ``a`` and ``b``: each query
    holds ten documents a run retrieves in its own order, graded so that run's nDCG follows its effect."""
    import numpy as np
    import polars as pl

    from qrelkit.compare import Options
    from qrelkit.compare.decisions import decision_agreement
    from qrelkit.data.values import Qrels, run_from_frame

    rng = np.random.default_rng(1)
    docs = 40
    grades_a = rng.choice(4, size=(args.queries, docs), p=[0.55, 0.2, 0.15, 0.1])
    grades_b = np.clip(grades_a + (rng.random(grades_a.shape) < 0.3), 0, 3)  # lenient on a third
    qa = Qrels.from_grades({(f"q{q}", f"d{d}"): int(grades_a[q, d]) for q in range(args.queries)
                            for d in range(docs)})  # fmt: skip
    qb = Qrels.from_grades({(f"q{q}", f"d{d}"): int(grades_b[q, d]) for q in range(args.queries)
                            for d in range(docs)})  # fmt: skip
    runs = []
    skill = np.sort(rng.random(args.runs))
    for r in range(args.runs):
        rows = []
        for q in range(args.queries):
            score = skill[r] * grades_a[q] + rng.normal(0, 1, docs)
            rows += [(f"q{q}", f"d{d}", float(score[d])) for d in range(docs)]
        frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
        runs.append(run_from_frame(frame, name=f"run{r:02d}"))
    print(f"\ndecision_agreement: {args.runs} runs, {args.queries} queries, {docs} documents a query")
    print("| paired test | wall | peak traced memory | tau-b | significant under A: kept / reversed / lost |")
    print("|---|---|---|---|---|")
    for test in ("t", "randomization"):
        tracemalloc.start()
        start = time.perf_counter()
        found = decision_agreement(qa, qb, runs, options=Options(test=test), n_resamples=args.resamples)
        wall = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        s = found.significance
        print(f"| {test} | {wall:.2f} s | {peak:.0f} MB | {found.ranking.kendall_tau.value:.3f} | "
              f"{s.significant_a}: {s.count('kept')} / {s.count('reversed')} / {s.count('lost')} |")  # fmt: skip


if __name__ == "__main__":
    main()
