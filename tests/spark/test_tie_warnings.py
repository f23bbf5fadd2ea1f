"""On Spark, the torchmetrics profile's warnings where its value follows torch's order of tied scores are
the local paths' own, word for word (the files and the expected text: tests/evaluation/test_tie_warnings.py):
each partition finds its queries, the driver gathers them."""

from __future__ import annotations

from ..conftest import CLI
from ..evaluation.test_tie_warnings import CONV, EXPECTED, MEASURES, QRELS, RUN


def test_spark_says_what_the_local_paths_say(spark, tmp_path):
    from qrelkit.evaluation import spark as on_spark

    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text(QRELS)
    run.write_text("".join(f"{q} Q0 {d} {i} {s} sys\n" for i, (q, d, s) in enumerate(RUN, 1)))
    got = on_spark.evaluate(spark, str(qrels), [str(run)], MEASURES, CONV, partitions=3)
    assert list(got.warnings) == EXPECTED
    assert got.values("R@2") == {"1": 0.75, "2": 1.0, "3": 1.0}
    out = CLI("eval", qrels, run, "--profile", "torchmetrics", "--engine", "spark",
              *(a for m in MEASURES for a in ("-m", m)), "-f", "tsv")  # fmt: skip
    assert out.exit_code == 0, out.output
    assert [line for line in out.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: {w}" for w in EXPECTED
    ]
