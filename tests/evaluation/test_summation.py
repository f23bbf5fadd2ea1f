"""The ``summation`` axis: how a mean adds its per-query values (evaluation/results.py).

By hand: P@10 is 0.1, 0.2 and 0.3 on queries ``9``, ``10`` and ``100`` (one, two and three relevant
documents in the top ten). In binary floating point 0.1 + 0.2 is 0.30000000000000004, and adding 0.3 gives
0.6000000000000001, whose third is 0.20000000000000004; the exact sum of the three doubles rounds to 0.6,
whose third is 0.19999999999999998. Adding them in the order of the ids as text (``10``, ``100``, ``9``):
0.2 + 0.3 = 0.5, + 0.1 = 0.6.
"""

from __future__ import annotations

import json

import pytest

from qrelkit import Conventions, Qrels, Run, evaluate
from qrelkit.errors import ConventionError
from qrelkit.evaluation.results import numeric_order, summed

from ..conftest import CLI


def _inputs() -> tuple[Qrels, Run]:
    relevant = {"9": 1, "10": 2, "100": 3}
    qrels = Qrels.from_dict({q: {f"r{i}": 1 for i in range(n)} for q, n in relevant.items()})
    run = Run.from_dict({q: {f"r{i}": 10.0 - i for i in range(n)} for q, n in relevant.items()})
    return qrels, run


def test_numeric_order_adds_left_to_right_by_query_number():
    qrels, run = _inputs()
    exact = evaluate(qrels, run, ["P@10"], Conventions())
    ordered = evaluate(qrels, run, ["P@10"], Conventions(summation="numeric_order"))
    assert exact.values("P@10") == ordered.values("P@10") == {"9": 0.1, "10": 0.2, "100": 0.3}
    assert exact.mean("P@10") == 0.19999999999999998
    assert ordered.mean("P@10") == 0.20000000000000004


def test_numeric_order_puts_ids_that_are_not_numbers_after_the_numbers():
    ids = ["10", "b", "9", "a", "100", "09"]
    assert [ids[i] for i in numeric_order(ids)] == ["09", "9", "10", "100", "a", "b"]
    # ids that are not numbers by text; 0.1 + 0.2 first, or 0.2 + 0.3 = 0.5 exactly and then 0.1
    assert summed(["a", "b", "c"], [0.1, 0.2, 0.3], "numeric_order") == 0.6000000000000001
    assert summed(["c", "a", "b"], [0.1, 0.2, 0.3], "numeric_order") == 0.6  # a, b, c: 0.2, 0.3, 0.1
    assert summed(["9", "10", "x"], [0.1, float("nan"), 0.2], "numeric_order") == 0.30000000000000004


def test_summation_per_measure_and_on_the_command_line(tmp_path):
    qrels, run = _inputs()
    conv = Conventions(by_measure="P@k(summation=numeric_order)")
    res = evaluate(qrels, run, ["P@10", "Judged@10"], conv)
    assert res.values("Judged@10") == res.values("P@10")  # every document returned is judged
    assert res.mean("P@10") == 0.20000000000000004  # the family's entry
    assert res.mean("Judged@10") == 0.19999999999999998  # another family: exact
    qp, rp = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qp.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels.frame.select("query_id", "doc_id", "grade").rows())
    )
    rp.write_text(
        "".join(
            f"{q} Q0 {d} 1 {s!r} t\n" for q, d, s in run.frame.select("query_id", "doc_id", "score").rows()
        )
    )
    for flag, mean in (("exact", 0.19999999999999998), ("numeric_order", 0.20000000000000004)):
        out = CLI("eval", qp, rp, "-m", "P@10", "--summation", flag, "-f", "json")
        assert out.exit_code == 0, out.output
        payload = json.loads(out.stdout)
        assert payload["results"]["means"]["t"]["P(rel=1)@10"]["mean"] == mean, payload["results"]
        assert payload["conventions"]["summation"] == flag


def test_an_unknown_summation_is_refused():
    with pytest.raises(ConventionError, match="unknown summation 'sequential'"):
        Conventions(summation="sequential")


# ``run_order``: by hand, P@10 is 0.1, 0.2 and 0.3 on queries 9, 10 and 100 (above). A run giving 100, then
# 10, then 9 adds 0.3 + 0.2 = 0.5, + 0.1 = 0.6: the mean 0.19999999999999998; a run giving 9, 10, 100 adds
# 0.1 + 0.2 = 0.30000000000000004, + 0.3 = 0.6000000000000001: the mean 0.20000000000000004.
RUN_ORDER_MEANS = {("100", "10", "9"): 0.19999999999999998, ("9", "10", "100"): 0.20000000000000004}


def _run_text(order: tuple[str, ...], grouped: bool) -> str:
    relevant = {"9": 1, "10": 2, "100": 3}
    rows = [(q, i) for q in order for i in range(relevant[q])]
    if not grouped:  # each query's documents interleaved with the others', the first line of each in order
        rows = sorted(rows, key=lambda row: (row[1], order.index(row[0])))
    return "".join(f"{q} Q0 r{i} {i + 1} {10.0 - i!r} run\n" for q, i in rows)


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("order", list(RUN_ORDER_MEANS))
def test_run_order_adds_in_the_order_the_run_first_gives_its_queries(order, grouped, tmp_path, monkeypatch):
    """On every path: in memory, the small path, streamed, encoded in batches, sorted on disk by DuckDB."""
    from qrelkit import read_qrels, read_run
    from qrelkit.evaluation import core, plan
    from qrelkit.evaluation.files import evaluate_files
    from qrelkit.formats import external
    from qrelkit.formats.trec import small

    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    judged = {"9": 1, "10": 2, "100": 3}
    qrels_path.write_text("".join(f"{q} 0 r{i} 1\n" for q, n in judged.items() for i in range(n)))
    run_path.write_text(_run_text(order, grouped))
    conv = Conventions(summation="run_order")
    want = RUN_ORDER_MEANS[order]
    assert summed(["9", "10", "100"], [0.1, 0.2, 0.3], "run_order", order) == want * 3
    assert evaluate(read_qrels(qrels_path), read_run(run_path), ["P@10"], conv).mean("P@10") == want
    readers = set()
    for measures in (["P@10"], ["P@10", "P"]):  # with cutoffs only, and a measure that reads every document
        got = evaluate_files(qrels_path, [run_path], measures, conv)
        assert got.mean("P@10") == want, measures
        readers.add(got.runs[0].meta["reader"])
        with monkeypatch.context() as patch:
            patch.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path
            got = evaluate_files(qrels_path, [run_path], measures, conv)
            assert got.mean("P@10") == want, measures
            readers.add(got.runs[0].meta["reader"])
            patch.setattr(core, "ENCODE_BATCH_ROWS", 2)  # encoded in batches of whole queries
            assert evaluate_files(qrels_path, [run_path], measures, conv).mean("P@10") == want, measures
        with monkeypatch.context() as patch:
            patch.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # every file too big to hold: DuckDB
            patch.setattr(external, "BATCH_ROWS", 2)  # in batches of whole queries, by query id
            got = evaluate_files(qrels_path, [run_path], measures, conv, memory_limit="500MB")
            assert got.mean("P@10") == want, measures
            readers.add(got.runs[0].meta["reader"])
    assert {"small", "duckdb"} <= readers, readers


def test_numpy_summation_is_numpys_sum_in_the_order_of_the_ids():
    import numpy as np

    values = [0.1, 0.2, 0.3, 0.7, 1e-17, 0.9, 0.4, 0.6, 0.5, 0.8]  # ten: numpy's pairwise blocks of eight
    ids = [f"q{i}" for i in range(10)]  # as text: q0, q1, q2, ..., q9
    assert summed(ids, values, "numpy") == float(np.sum(np.array(values)))
    assert summed(ids[::-1], values[::-1], "numpy") == float(np.sum(np.array(values)))
