"""Hypothesis: trec_eval's kernels give the same floats on the sparse form of ranked relevance lists (only
the documents in the judgments, at their ranks) as on the dense form (every returned document).

The dense form is the definition (each kernel follows its ``m_*.c`` rank by rank); the sparse form is what
the fast path of ``qrelkit trec_eval`` builds, so that a 1000-document ranking with 100 judged documents
costs 100 rows. Bitwise equality, NaN included, for every measure of ``-m all_trec`` and the
parameterised ones (gain tables with fractions, other persistences, cutoffs beyond the rankings)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit.engine.trec import kernels as tk
from qrelkit.evaluation.trec_eval import measure_values
from qrelkit.measures.trec_names import select

SPECS = [
    "all_trec", "P.1,2,3,7,40", "recall.1,4,50", "ndcg.0=0.5,1=2.5,3=7", "ndcg_rel.1=0.5,2=1.5", "Rndcg.2=3.5",
    "G.1=0.5,2=2.25", "G.1=1,2=3", "rbp.p=0.5", "rbp.p=0.95,1=0.4,3=5", "rbp_resid.p=0.5", "map_cut.1,3,100",
    "ndcg_cut.1,2,9", "success.1,2,10", "unj.1,3,20", "relstring.3", "relstring.30", "iprec_at_recall.0,0.33,1",
    "Rprec_mult.0.5,1.5,3", "utility.2,-1,0.5,0.25", "set_F.0.5", "relative_P.2,7", "11pt_avg.0.1,0.5",
]  # fmt: skip
MEASURES = select(SPECS)


@st.composite
def lists(draw) -> tk.RelLists:
    n = draw(st.integers(1, 6))
    top = draw(st.integers(1, 5))  # grades 0 .. top - 1
    codes = st.sampled_from([tk.NONPOOL, tk.NONPOOL, tk.UNJUDGED, *range(top)])
    rankings = [draw(st.lists(codes, max_size=12)) for _ in range(n)]
    levels = np.zeros((n, top), dtype=np.int64)
    for q, ranking in enumerate(rankings):
        for code in ranking:
            if code >= 0:
                levels[q, code] += 1
        levels[q] += np.array(draw(st.lists(st.integers(0, 3), min_size=top, max_size=top)))
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in rankings]))).astype(np.int64)
    rel = np.array([c for r in rankings for c in r], dtype=np.int64)
    return tk.RelLists(offsets, rel, levels, draw(st.integers(-2, 3)))


def _bits(values) -> list:
    if isinstance(values, list):
        return values
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rl=lists(), num_docs=st.integers(0, 50))
def test_every_kernel_gives_the_same_floats_on_the_sparse_form(rl, num_docs):
    sparse = rl.sparsified()
    if rl.rel_level <= tk.NONPOOL:  # every returned document is relevant: dense only
        assert sparse is rl
        return
    assert sparse.sparse and len(sparse.rel) == int((rl.rel != tk.NONPOOL).sum())
    assert np.array_equal(sparse.dense().rel, rl.rel)
    for m in MEASURES:
        if m.kind in ("runid", "num_q"):
            continue
        dense_values = measure_values(rl, m, num_docs)
        sparse_values = measure_values(sparse, m, num_docs)
        for (name, a), (_, b) in zip(dense_values, sparse_values, strict=True):
            assert _bits(a) == _bits(b), (name, a, b)


def test_residuals_summed_in_stretches_of_queries_equal_the_dense_sums():
    """rbp_resid's grid is filled a stretch of queries at a time: enough queries for several stretches."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 700, size=3000)
    rel = rng.choice([tk.NONPOOL] * 6 + [tk.UNJUDGED, 0, 1, 2], size=int(lengths.sum()))
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    levels = rng.integers(0, 5, size=(3000, 3))
    rl = tk.RelLists(offsets, rel.astype(np.int64), levels, 1)
    for p in (0.5, 0.8, 0.95):
        assert _bits(tk.rbp_resid(rl, p)) == _bits(tk.rbp_resid(rl.sparsified(), p))
    assert tk.relstring(rl, 25) == tk.relstring(rl.sparsified(), 25)


def _c_loop(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Running sums as trec_eval's C loops form them: ``s += x`` from 0 at each query's start."""
    want = np.empty_like(values)
    for start, stop in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
        s = 0.0
        for i in range(start, stop):
            s += float(values[i])
            want[i] = s
    return want


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=30),
    many=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_running_sums_are_the_c_loops_on_the_grid_and_query_by_query(lengths, many, seed):
    """``_segment_cumsum`` (trec_eval's running sums: ``ndcg_rel``, ``Rndcg``, ``G``, the ideal's prefix)
    gives the doubles of the C loop on its grid and on its query-by-query path (``many``: 400 short
    queries beside one of 3,000 documents, where the grid would be much larger than the data)."""
    rng = np.random.default_rng(seed)
    sizes = [*lengths, *([1] * 400 + [3000] if many else [])]
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    values = rng.random(int(offsets[-1])) * 10.0 ** rng.integers(-3, 4, int(offsets[-1]))
    grid = len(sizes) * max(sizes) <= 4 * len(values) + 1_000_000  # the path this draw takes
    assert grid != many
    assert tk._segment_cumsum(values, offsets).tobytes() == _c_loop(values, offsets).tobytes()
