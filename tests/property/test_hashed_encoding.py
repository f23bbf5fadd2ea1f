"""The encoding by hashed ids (engine/encoding/hashed.py) makes exactly the arrays of the columnar encoding
(engine/encoding/encode.py with ``by_hash=False``, its steps written in polars), under every convention that moves
an encoding, with and without the depth cut, on runs in file order and shuffled (rows out of line order),
with heavy ties, ids that sort differently by bytes than by length, negative grades and queries on one
side only; and where it steps aside the columnar path gives the answer."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from qrelkit.data.values import Run
from qrelkit.engine.encoding import hashed
from qrelkit.engine.encoding.encode import Judgments, Stretches, encode, select_queries
from qrelkit.errors import QrelkitError
from qrelkit.formats import qrels_from_frame, run_from_frame
from qrelkit.measures.conventions import Conventions

QUERIES = ["q1", "q2", "q10", "Q2", "é"]
DOCS = ["d1", "d10", "d2", "D2", "d", "ü", "z9", "a0", "日本"]
SCORES = [0.5, 1.0, 1.0, 2.0, 2.0, 0.3, 0.30000001, 3.0, 1e-9, 2e-9, -1.0, 1e300, -1e-300, 0.0, 3.0e38]


@st.composite
def inputs(draw):
    qrels_rows = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), max_size=7, unique=True)):
            qrels_rows.append((q, d, draw(st.integers(-2, 3))))
    if not qrels_rows:
        qrels_rows.append(("q1", "d1", 1))
    run_rows = []
    for q in draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True)):
        for d in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=9, unique=True)):
            run_rows.append((q, d, draw(st.sampled_from(SCORES))))
    return qrels_rows, run_rows


@st.composite
def conventions(draw):
    return Conventions(
        ties=draw(
            st.sampled_from(["docid_desc", "docid_asc", "optimistic", "pessimistic", "average", "file_order"])
        ),
        precision=draw(st.sampled_from(["single", "double"])),
        negative=draw(st.sampled_from(["unjudged", "zero", "gain"])),
        unjudged=draw(st.sampled_from(["zero", "drop"])),
        missing_queries=draw(st.sampled_from(["zero", "skip"])),
        extra_queries="skip",
    )


def _arrays(enc):
    return {
        "query_ids": enc.queries.query_ids,
        "in_run": enc.queries.in_run.tolist(),
        "offsets": enc.offsets.tolist(),
        "grade": enc.grade.tolist(),
        "grade_dtype": str(enc.grade.dtype),
        "judged": enc.judged.tolist(),
        "score": enc.score.tobytes(),
        "score_dtype": str(enc.score.dtype),
        "blocks": None if enc.block_starts is None else enc.block_starts.tolist(),
        "judged_offsets": enc.judged_offsets.tolist(),
        "judged_grade": enc.judged_grade.tolist(),
        "pooled": None if enc.pooled is None else enc.pooled.tolist(),
    }


def _both(qrels, run, conv, depth):
    """(hashed arrays or None where it stepped aside, columnar arrays), or the columnar error."""
    judgments = Judgments(qrels)
    try:
        queries = select_queries(qrels, run, conv, judgments)
        columnar = encode(
            qrels, run, conv, queries, ranking=False, depth=depth, judgments=judgments, by_hash=False
        )
    except QrelkitError as exc:
        return None, (type(exc).__name__, str(exc))
    side = judgments.hashed(conv, queries)
    plain = judgments.side(conv, queries)
    found = None
    if side is not None:
        found = hashed.encode_hashed(
            run, conv, queries, side, plain.judged_offsets, plain.judged_grade, depth
        )
        # numbered by the stretches of the run's query ids instead of their hashes: the same arrays
        stretches = Stretches.of(run.frame.get_column("query_id"))
        by_stretch = hashed.encode_hashed(
            run, conv, queries, side, plain.judged_offsets, plain.judged_grade, depth, stretches
        )
        if by_stretch is not None:
            assert _arrays(by_stretch) == _arrays(columnar)
    return (None if found is None else _arrays(found)), _arrays(columnar)


def _frames(qrels_rows, run_rows, shuffle=None):
    qrels = qrels_from_frame(pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "grade"], orient="row"))
    run = run_from_frame(pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score"], orient="row"))
    if shuffle is not None:  # the same rows (lines kept) in another frame order
        order = list(range(run.frame.height))
        shuffle.shuffle(order)
        run = Run(run.frame[order], run.fingerprint, run.name, run.meta)
    return qrels, run


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=inputs(),
    conv=conventions(),
    depth=st.sampled_from([None, 1, 2, 3, 5]),
    shuffle=st.none() | st.randoms(use_true_random=False),
)
def test_the_hashed_encoding_makes_the_columnar_arrays(data, conv, depth, shuffle):
    qrels, run = _frames(*data, shuffle=shuffle)
    if conv.unjudged == "drop":
        depth = None  # never cut: dropping unjudged rows changes which rows reach the top
    found, columnar = _both(qrels, run, conv, depth)
    event("hashed" if found is not None else "stepped aside")
    if found is not None:
        assert found == columnar


def test_it_encodes_the_usual_runs_itself():
    """The path is taken, not stepped aside from, on a run with ties, negative grades and an unjudged query."""
    qrels, run = _frames(
        [("q1", "d1", 2), ("q1", "d2", -1), ("q1", "d3", 0), ("q2", "d1", 1)],
        [("q1", "d3", 1.0), ("q1", "d2", 1.0), ("q1", "d1", 2.0), ("q1", "d9", 1.0), ("q3", "d1", 5.0)],
    )
    for ties in ("docid_desc", "optimistic", "average"):
        conv = Conventions(ties=ties, negative="unjudged", missing_queries="zero")
        found, columnar = _both(qrels, run, conv, None)
        assert found == columnar


def test_the_stretches_of_a_run_grouped_by_query_number_its_rows():
    """A run grouped by query (q2's rows, then q1's, then q3's) has three stretches; its rows are
    numbered by them (q1 0, q2 1; q3 is not judged: skipped) and the arrays are the columnar ones."""
    qrels, run = _frames(
        [("q1", "d1", 2), ("q1", "d2", 1), ("q2", "d1", 1)],
        [("q2", "d1", 1.0), ("q2", "d4", 0.5), ("q1", "d2", 3.0), ("q1", "d1", 2.0), ("q3", "d1", 5.0)],
    )
    stretches = Stretches.of(run.frame.get_column("query_id"))
    assert stretches.starts.tolist() == [0, 2, 4] and stretches.values == ["q2", "q1", "q3"]
    conv = Conventions(ties="docid_desc")
    judgments = Judgments(qrels)
    queries = select_queries(qrels, run, conv, judgments, stretches)
    plain = judgments.side(conv, queries)
    side = judgments.hashed(conv, queries)
    found = hashed.encode_hashed(
        run, conv, queries, side, plain.judged_offsets, plain.judged_grade, None, stretches
    )
    columnar = encode(qrels, run, conv, queries, ranking=False, judgments=judgments, by_hash=False)
    assert found is not None and _arrays(found) == _arrays(columnar)
    assert found.offsets.tolist() == [0, 2, 4] and found.grade.tolist() == [1, 2, 1, 0]


def test_hand_ranking_by_document_id_descending():
    """Hand ranking of one query: d1 scores 2; d3, d2 and d9 tie at 1 and go by id descending: d9, d3, d2.
    Grades: d1 2, d3 0, d2 in the pool only (grade -1, negative=unjudged), d9 unjudged."""
    qrels, run = _frames(
        [("q1", "d1", 2), ("q1", "d2", -1), ("q1", "d3", 0)],
        [("q1", "d3", 1.0), ("q1", "d2", 1.0), ("q1", "d1", 2.0), ("q1", "d9", 1.0)],
    )
    conv = Conventions(ties="docid_desc", negative="unjudged")
    judgments = Judgments(qrels)
    queries = select_queries(qrels, run, conv, judgments)
    plain = judgments.side(conv, queries)
    side = judgments.hashed(conv, queries)
    enc = hashed.encode_hashed(run, conv, queries, side, plain.judged_offsets, plain.judged_grade, None)
    assert enc.score.tolist() == [2.0, 1.0, 1.0, 1.0]
    assert enc.grade.tolist() == [2, 0, 0, 0]
    assert enc.judged.tolist() == [True, False, True, False]
    assert enc.pooled.tolist() == [False, False, False, True]


def _setup(qrels, run, conv):
    judgments = Judgments(qrels)
    queries = select_queries(qrels, run, conv, judgments)
    plain = judgments.side(conv, queries)
    return queries, judgments.hashed(conv, queries), plain


def test_query_ids_are_numbered_only_where_their_hashes_tell_them_apart():
    """Scored queries q1 and q2 and an unjudged query q9. By hashes: the rows of q2, q1, q9 get the numbers
    1, 0 and -1; a row whose hash is no query's (the query set does not account for it, with no unjudged
    query) or an unjudged query whose hash is a scored query's makes the numbering step aside."""
    qrels, run = _frames(
        [("q1", "d1", 1), ("q2", "d1", 1)], [("q2", "d1", 1.0), ("q1", "d1", 2.0), ("q9", "d1", 3.0)]
    )
    queries, side, _ = _setup(qrels, run, Conventions())
    assert queries.extra_skipped == ["q9"]
    hashes = run.frame.get_column("query_id").hash(hashed._SEED).to_numpy()
    assert hashed._query_numbers(hashes, queries, side).tolist() == [1, 0, -1]
    only_scored = type(queries)(queries.query_ids, queries.in_run, [], [], [])
    assert hashed._query_numbers(hashes, only_scored, side) is None  # q9's hash is unaccounted for
    q1 = hashes[1]
    colliding = hashed.HashedSide(**{**side.__dict__, "query_hash": np.sort(np.array([q1, hashes[2]]))})
    assert hashed._query_numbers(hashes, queries, colliding) is None  # q9 hashes as a scored query


def test_a_key_matching_another_document_steps_aside():
    """A judgment whose key is the run row's key but whose document differs (a collision): the strings
    are compared, and the path steps aside instead of joining them."""
    qrels, run = _frames([("q1", "d1", 1)], [("q1", "d2", 1.0)])
    conv = Conventions()
    queries, side, plain = _setup(qrels, run, conv)
    d2 = run.frame.get_column("doc_id").hash(hashed._SEED).to_numpy()
    forged = hashed.HashedSide(
        keys=hashed._keys(np.array([0]), d2), q=np.array([0]), grade=np.array([1]),
        judged=np.array([True]), pooled=None, doc_id=pl.Series("doc_id", ["d1"]),
        query_hash=side.query_hash, query_number=side.query_number,
    )  # fmt: skip
    assert hashed.encode_hashed(run, conv, queries, side, plain.judged_offsets, plain.judged_grade, None)
    assert (
        hashed.encode_hashed(run, conv, queries, forged, plain.judged_offsets, plain.judged_grade, None)
        is None
    )


@pytest.mark.parametrize("score", [float("nan"), -0.0])
def test_a_score_it_cannot_order_as_the_columnar_sort_steps_aside(score):
    qrels, run = _frames([("q1", "d1", 1)], [("q1", "d1", 1.0), ("q1", "d2", 0.0)])
    frame = run.frame.with_columns(pl.Series("score", [score, 0.0]))
    odd = Run(frame, run.fingerprint, run.name, run.meta)
    conv = Conventions()
    queries, side, plain = _setup(qrels, odd, conv)
    assert (
        hashed.encode_hashed(odd, conv, queries, side, plain.judged_offsets, plain.judged_grade, None) is None
    )


@pytest.mark.parametrize(
    "ties", ["docid_desc", "docid_asc", "optimistic", "pessimistic", "average", "file_order"]
)
def test_many_queries_out_of_order(ties):
    """More queries out of score order than are sorted one by one (the two-sort branch), rows shuffled."""
    rng = np.random.default_rng(3)
    run_rows = [(f"q{i}", f"d{j}", float(rng.integers(0, 4))) for i in range(150) for j in range(6)]
    qrels_rows = [
        (f"q{i}", f"d{j}", int(rng.integers(-1, 3))) for i in range(0, 150, 2) for j in range(0, 6, 2)
    ]
    order = rng.permutation(len(run_rows))
    qrels, run = _frames(qrels_rows, [run_rows[i] for i in order])
    for depth in (None, 2):
        found, columnar = _both(qrels, run, Conventions(ties=ties, missing_queries="zero"), depth)
        assert found is not None
        assert found == columnar


def test_values_built_around_the_readers_step_aside():
    """A null document id on both sides (polars' join matches no null; a comparison of strings would say
    nothing), a null line, and two rows on one line (no order of the columnar sort to match): each makes
    the path step aside, and the columnar steps encode the run."""
    qrels, run = _frames(
        [("q1", "d1", 2), ("q1", "d2", 1)], [("q1", "d1", 1.0), ("q1", "d2", 1.0), ("q1", "d3", 0.5)]
    )
    conv = Conventions(ties="file_order")
    queries, side, plain = _setup(qrels, run, conv)
    assert hashed.encode_hashed(run, conv, queries, side, plain.judged_offsets, plain.judged_grade, None)
    null_doc = run.frame.with_columns(pl.Series("doc_id", ["d1", None, "d3"], dtype=pl.String))
    null_line = run.frame.with_columns(pl.Series("line", [1, None, 3], dtype=pl.Int64))
    one_line = run.frame.with_columns(pl.Series("line", [2, 2, 1], dtype=pl.Int64))
    for frame in (null_doc, null_line, one_line):
        odd = Run(frame, run.fingerprint, run.name, run.meta)
        assert (
            hashed.encode_hashed(odd, conv, queries, side, plain.judged_offsets, plain.judged_grade, None)
            is None
        )
    judged_null = qrels.frame.with_columns(pl.Series("doc_id", ["d1", None], dtype=pl.String))
    qmap = pl.DataFrame({"query_id": ["q1"], "q": [0]})
    assert hashed.hashed_side(qmap, judged_null.select("query_id", "doc_id", "grade"), None) is None
