"""A labeller's order of pairs: one query's pairs together, queries and documents shuffled per labeller.

On the bundled example project (examples/docsearch: four runs pooled at depth 10, 30 queries) every
labeller's list is read straight from SQLite and its transitions counted here: within each segment
(the calibration pairs, then the rest, then each later round's new pairs) the query changes exactly
once per query after the first.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from itertools import groupby, pairwise
from pathlib import Path

import pytest

from qrelkit.app.phases import labeller_order, revise, seeded_rng
from qrelkit.app.project import init_project
from qrelkit.app.store import Store
from qrelkit.formats import read_run
from qrelkit.pool import build_pool

from .helpers import FIXTURES, finish_calibration, make_project

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "docsearch"


def example_project(tmp: Path, *, labellers: str, calibration: int, seed: int, name: str = "p") -> Path:
    runs = [read_run(p) for p in sorted((EXAMPLE / "runs").glob("*.run"))]
    pool = build_pool(runs, depth=10, calibration=calibration, seed=seed, labellers=labellers.split(","))
    pool_path = tmp / f"{name}.jsonl"
    pool.write(pool_path)
    db = tmp / f"{name}.db"
    init_project(db, rubric=EXAMPLE / "rubric.toml", pool=pool_path, docs=EXAMPLE / "docs.jsonl",
                 queries=EXAMPLE / "queries.tsv", seed=seed)  # fmt: skip
    return db


def lists(db: Path) -> dict[str, list[tuple[int, str, bool]]]:
    """Each labeller's list in position order: (pair id, query id, calibration)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT u.name, a.pair_id, p.query_id, p.calibration FROM assignments a JOIN users u "
            "USING (user_id) JOIN pairs p USING (pair_id) ORDER BY u.name, a.position"
        ).fetchall()
    out: dict[str, list[tuple[int, str, bool]]] = {}
    for name, pair_id, query_id, cal in rows:
        out.setdefault(name, []).append((pair_id, query_id, bool(cal)))
    return out


def switches(queries: list[str]) -> int:
    return sum(a != b for a, b in pairwise(queries))


@pytest.mark.parametrize(("labellers", "calibration"), [("alice,bob", 30), ("alice,bob,carol", 10)])
def test_each_query_is_served_in_one_run_of_pairs(tmp_path: Path, labellers: str, calibration: int) -> None:
    db = example_project(tmp_path, labellers=labellers, calibration=calibration, seed=0)
    for name, items in lists(db).items():
        cal = [q for _, q, c in items if c]
        rest = [q for _, q, c in items if not c]
        assert [q for _, q, _ in items] == cal + rest, f"{name}: calibration pairs come first"
        for segment in (cal, rest):
            assert switches(segment) == max(len(set(segment)) - 1, 0), name
        # the two segments share no query, so the whole list switches once fewer than it has queries
        assert switches(cal + rest) == len(set(cal + rest)) - 1
        # queries are not in id order for every labeller, and documents are shuffled within a query
        pair_ids = [[p for p, _, _ in run] for _, run in groupby(items, key=lambda x: x[1])]
        assert any(ids != sorted(ids) for ids in pair_ids), name


def test_the_order_comes_from_the_project_seed_and_differs_between_labellers(tmp_path: Path) -> None:
    one = lists(example_project(tmp_path, labellers="alice,bob", calibration=30, seed=3, name="one"))
    two = lists(example_project(tmp_path, labellers="alice,bob", calibration=30, seed=3, name="two"))
    other = lists(example_project(tmp_path, labellers="alice,bob", calibration=30, seed=4, name="other"))
    assert one == two
    assert one != other
    # both labellers grade every query here (all calibration), each in their own order: nothing in one
    # labeller's list follows the other's
    alice = [p for p, _, _ in one["alice"]]
    bob = [p for p, _, _ in one["bob"]]
    assert sorted(alice) == sorted(bob) and alice != bob
    first = [q for q, _ in groupby(q for _, q, _ in one["alice"])]
    assert first != [q for q, _ in groupby(q for _, q, _ in one["bob"])]


def test_a_revision_round_appends_its_pairs_grouped_by_query(tmp_path: Path) -> None:
    db = make_project(tmp_path, labellers="alice,bob")
    before = lists(db)
    finish_calibration(db, agree=False)
    with Store(db) as store:
        revise(store, FIXTURES / "rubric-v2.toml", by="admin")
    after = lists(db)
    for name, items in after.items():
        assert items[: len(before[name])] == before[name], "positions already given never move"
        new = [q for _, q, _ in items[len(before[name]) :]]
        assert switches(new) == max(len(set(new)) - 1, 0)


def test_seeded_rng_draws_pinned_orders():
    # random.Random seeded with SHA-256 of "{seed}:{name}", replicated here by hand and pinned
    by_hand = random.Random(hashlib.sha256(b"7:alice").digest())
    items = list(range(10))
    by_hand.shuffle(items)
    assert items == [9, 3, 6, 7, 4, 0, 1, 8, 2, 5]
    items = list(range(10))
    seeded_rng(7, "alice").shuffle(items)
    assert items == [9, 3, 6, 7, 4, 0, 1, 8, 2, 5]
    # the probes' generator: the seed as read from the meta table (text), two shuffles in a row
    rng = seeded_rng("42", "probes:gpt")
    letters, numbers = list("abcdefgh"), list(range(6))
    rng.shuffle(letters)
    rng.shuffle(numbers)
    assert letters == ["e", "b", "h", "a", "g", "d", "c", "f"]
    assert numbers == [0, 1, 2, 4, 5, 3]
    queries = {1: "q1", 2: "q1", 3: "q2", 4: "q2", 5: "q3", 6: "q3", 7: "q1"}
    assert labeller_order(queries, {1, 3, 5}, 7, "alice") == [5, 1, 3, 4, 6, 7, 2]
