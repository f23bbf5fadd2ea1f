"""The judgments' side of an encoding is computed once per qrels value and reused: never a stale number.

``evaluate`` keeps what it encoded of a qrels value (the judged query ids; per negative-grade convention
and scored query set the judged rows, each query's grades, the pool-only documents) for every run of the
call and for later calls given the same value. These tests change what that side depends on between calls
on one value and check the numbers against hand arithmetic, and check many runs in one call against each
run evaluated alone with a freshly read copy of the judgments, bit for bit.
"""

from __future__ import annotations

import random

import numpy as np

from qrelkit import Conventions, evaluate, read_qrels
from qrelkit.data.values import Qrels, Run
from qrelkit.engine.encoding.encode import judgments_of

from ..conftest import data_path

SKIP = Conventions(missing_queries="skip")


def small() -> tuple[Qrels, Run, Run]:
    """q1 judges d1 (2), d2 (-1) and d3 (1); q2 judges d4 (1). Run a ranks d2, d1, d5 for q1 and d4 for
    q2; run b has q2 alone."""
    qrels = Qrels.from_dict({"q1": {"d1": 2, "d2": -1, "d3": 1}, "q2": {"d4": 1}})
    a = Run.from_dict({"q1": {"d2": 3.0, "d1": 2.0, "d5": 1.0}, "q2": {"d4": 1.0}}, name="a")
    b = Run.from_dict({"q2": {"d4": 1.0, "d9": 0.5}}, name="b")
    return qrels, a, b


def test_a_change_of_negative_convention_on_the_same_value_is_not_served_stale() -> None:
    qrels, a, _ = small()
    # unjudged: d2 is not judged, so of q1's top 2 (d2, d1) one is judged: 1/2; q2's top 2 holds d4: 1/2
    first = evaluate(qrels, [a], ["Judged@2"], SKIP.with_(negative="unjudged")).values("Judged@2", "a")
    assert first == {"q1": 0.5, "q2": 0.5}
    # zero: d2 is judged with grade 0, so both of q1's top 2 are judged: 2/2
    second = evaluate(qrels, [a], ["Judged@2"], SKIP.with_(negative="zero")).values("Judged@2", "a")
    assert second == {"q1": 1.0, "q2": 0.5}
    again = evaluate(qrels, [a], ["Judged@2"], SKIP.with_(negative="unjudged")).values("Judged@2", "a")
    assert again == first


def test_a_run_with_other_queries_gets_its_own_query_set() -> None:
    qrels, a, b = small()
    both = evaluate(qrels, [a, b], ["R@100", "P@2"], SKIP)
    # q1's relevant documents are d1 and d3 (d2's -1 is unjudged): run a finds d1, 1/2; q2's d4 is found
    assert both.values("R@100", "a") == {"q1": 0.5, "q2": 1.0}
    assert both.values("R@100", "b") == {"q2": 1.0}
    assert both.values("P@2", "b") == {"q2": 0.5}  # d4 relevant, d9 not
    alone = evaluate(qrels, [b], ["R@100"], SKIP).values("R@100", "b")
    assert alone == {"q2": 1.0}
    assert evaluate(qrels, [a], ["R@100"], SKIP).values("R@100", "a") == {"q1": 0.5, "q2": 1.0}


def test_the_same_value_is_recognised_and_a_copy_is_not() -> None:
    path = data_path("trec", "qrels.dl19-passage.txt")
    qrels = read_qrels(path)
    assert judgments_of(qrels) is judgments_of(qrels)
    assert judgments_of(read_qrels(path)) is not judgments_of(qrels)


def _runs(qrels: Qrels, n: int) -> list[Run]:
    """``n`` runs over the judged documents of DL19's queries (and some nobody judged), each leaving out
    a different few queries, with tied scores."""
    rng = random.Random(29)
    judged = qrels.to_dict()
    queries = sorted(judged)
    runs = []
    for i in range(n):
        kept = [q for q in queries if rng.random() > 0.1]
        scores = {}
        for q in kept:
            docs = list(judged[q])[:80] + [f"x{i}-{k}" for k in range(20)]
            scores[q] = {d: float(rng.randint(0, 30)) for d in docs}
        runs.append(Run.from_dict(scores, name=f"r{i:02d}"))
    return runs


def test_many_runs_in_one_call_give_the_bits_of_each_run_alone() -> None:
    path = data_path("trec", "qrels.dl19-passage.txt")
    qrels = read_qrels(path)
    runs = _runs(qrels, 6)
    measures = ["nDCG@10", "R@100", "P@5", "AP", "Judged@10"]
    for conv in (Conventions(), SKIP.with_(ties="docid_desc", precision="single")):
        together = evaluate(qrels, runs, measures, conv)
        for run in runs:
            alone = evaluate(read_qrels(path), [run], measures, conv)
            for m in measures:
                ours, theirs = together.values(m, run.name), alone.values(m, run.name)
                assert list(ours) == list(theirs)
                assert np.array_equal(np.array(list(ours.values())), np.array(list(theirs.values())))


def test_threads_asking_for_more_query_sets_than_are_kept_each_get_their_side() -> None:
    """Four threads ask one Judgments for the side by key of 30 query sets (more than Judgments.KEPT, so
    sides are dropped while others are asked for), with the interpreter switching threads as often as it
    can: every answer is the side of the set asked for (its query numbers are that set's), and none fails."""
    import sys
    import threading

    from qrelkit.engine.encoding.encode import Judgments
    from qrelkit.engine.encoding.encoded import query_set

    qs = [f"q{i:02d}" for i in range(40)]
    qrels = Qrels.from_dict({q: {"d": 1} for q in qs})
    sets = [query_set(qs, {qs[i], qs[i + 1]}, [], SKIP, "r", "r") for i in range(30)]
    problems: list[str] = []

    def ask(judgments: Judgments, k: int) -> None:
        try:
            for _ in range(10):
                for s in sets[k::4]:
                    side = judgments.hashed(SKIP, s)
                    assert side is not None and sorted(side.query_number.tolist()) == [0, 1]
        except Exception as exc:  # any failure is the finding
            problems.append(repr(exc))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(3):
            judgments = Judgments(qrels)
            threads = [threading.Thread(target=ask, args=(judgments, k)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(interval)
    assert problems == []
