"""ERR@k's value of a query does not depend on the queries evaluated beside it (a batch of DuckDB's,
a chunk of Spark's or the whole run): the same bits alone and among hundreds."""

from __future__ import annotations

import random
import struct

import polars as pl

from qrelkit import evaluate
from qrelkit.data.values import qrels_from_frame, run_from_frame


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _values(rows_q, rows_r, measure="ERR@10"):
    qrels = qrels_from_frame(pl.DataFrame(rows_q, schema=["query_id", "doc_id", "grade"], orient="row"))
    run = run_from_frame(pl.DataFrame(rows_r, schema=["query_id", "doc_id", "score"], orient="row"), name="r")
    results = evaluate(qrels, run, [measure])
    return {q: value for _, q, _, value in results.rows()}


def test_err_by_hand_on_three_ranks():
    """Grades 2, 1, 3 at ranks 1-3, max_grade 4: R = 3/16, 1/16, 7/16 (gdeval's (2^g - 1) / 2^max);
    ERR = R1 + (1 - R1) R2 / 2 + (1 - R1)(1 - R2) R3 / 3, each product exact in binary."""
    got = _values(
        [("q", "a", 2), ("q", "b", 1), ("q", "c", 3)], [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]
    )
    r1, r2, r3 = 3 / 16, 1 / 16, 7 / 16
    assert got["q"] == r1 + (1 - r1) * r2 / 2 + (1 - r1) * (1 - r2) * r3 / 3


def test_a_querys_err_is_the_same_bits_alone_and_among_others():
    rng = random.Random(3)
    rows_q, rows_r = [], []
    for q in range(300):
        for i, d in enumerate(rng.sample(range(60), 30)):
            rows_q.append((f"q{q:03d}", f"d{d}", rng.choice([0, 0, 1, 2, 3])))
            rows_r.append((f"q{q:03d}", f"d{d}", 100.0 - i - rng.random() * 0.5))
    together = _values(rows_q, rows_r)
    for q in ("q000", "q150", "q299"):
        alone = _values([r for r in rows_q if r[0] == q], [r for r in rows_r if r[0] == q])
        assert _bits(alone[q]) == _bits(together[q]), q
