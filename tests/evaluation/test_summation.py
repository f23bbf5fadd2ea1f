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
