"""What naming the queries whose torchmetrics value follows torch's order of tied scores costs: an
evaluation under ``--profile torchmetrics`` with the finding (``qrelkit.engine.tie_order``) and without it,
as a ratio, on a tie-heavy run held in memory (scores on a 0.1 grid, a fifth of the documents judged).

    python benchmarks/tie_order.py --queries 2000 --docs 500 --repeat 3

Prints the best of ``--repeat`` wall times of each and their ratio, with the machine's ``uptime`` before and
after: other work on the machine distorts the times. No peer computes this; the ratio is to qrelkit itself.
"""

from __future__ import annotations

import argparse
import subprocess
import time


def main() -> None:
    import numpy as np
    import polars as pl

    from qrelkit import evaluate
    from qrelkit.data.values import qrels_from_frame, run_from_frame
    from qrelkit.evaluation import core
    from qrelkit.measures.profiles import PROFILES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rng = np.random.default_rng(0)
    n = args.queries * args.docs
    q = np.repeat([f"q{i}" for i in range(args.queries)], args.docs)
    d = np.tile([f"d{j}" for j in range(args.docs)], args.queries)
    run = run_from_frame(
        pl.DataFrame({"query_id": q, "doc_id": d, "score": np.round(rng.normal(1, 1, n), 1)})
    )
    judged = rng.random(n) < 0.2
    grades = rng.integers(0, 3, int(judged.sum()))
    qrels = qrels_from_frame(pl.DataFrame({"query_id": q[judged], "doc_id": d[judged], "grade": grades}))
    conv = PROFILES["torchmetrics"].conventions
    measures = ["nDCG@10", "R@100", "P@10", "AP", "RR", "Success@10", "Rprec", "FallOut@10"]

    def best() -> float:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            evaluate(qrels, run, measures, conv)
            times.append(time.perf_counter() - start)
        return min(times)

    found = best()
    kept = core.tie_order_for
    core.tie_order_for = lambda conv: None  # the same evaluation, finding nothing
    try:
        plain = best()
    finally:
        core.tie_order_for = kept
    warnings = len(evaluate(qrels, run, measures, conv).tie_warnings)
    print(f"{n} rows, {len(measures)} measures ({warnings} warned): with the finding {found:.3f} s, "
          f"without {plain:.3f} s, ratio {found / plain:.3f}")  # fmt: skip
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
