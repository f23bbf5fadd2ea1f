"""The block helpers every encoder shares (engine/encoding/encoded.py), by hand."""

from __future__ import annotations

import numpy as np

from qrelkit.engine.encoding.encoded import block_heads, in_tied_blocks, tied_blocks


def test_blocks_of_rows_equal_on_every_key_by_hand():
    """Rows (query, score): (0, 3) (0, 2) (0, 2) (1, 2) (1, 1) (1, 1) (1, 1): blocks begin at rows 0, 1, 3
    and 4; rows 1-2 and 4-6 are in blocks of more than one row."""
    q = np.array([0, 0, 0, 1, 1, 1, 1])
    score = np.array([3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0])
    heads = block_heads(q, score)
    assert heads.tolist() == [True, True, False, True, True, False, False]
    assert in_tied_blocks(heads).tolist() == [1, 2, 4, 5, 6]
    assert tied_blocks(q, score).tolist() == [0, 1, 3, 4]
    assert block_heads(q).tolist() == [True, False, False, True, False, False, False]
    assert in_tied_blocks(block_heads(np.array([1.0, 2.0]))).tolist() == []
    assert block_heads(np.array([], dtype=np.int64)).tolist() == []
    assert tied_blocks(np.array([0, 1]), np.array([1.0, 1.0])) is None


def test_the_distinct_ids_are_the_heads_of_stretches():
    """Every value has a first row, which begins a stretch: the set of the heads is the set of values,
    grouped or not, a null included."""
    import polars as pl

    from qrelkit.engine.encoding.hashed import Stretches

    for values in (
        ["q1", "q1", "q2", "q2", "q2"],
        ["q1", "q2", "q1", "q3", "q3", "q1"],
        [None, None, "q1", None],
        ["q1"],
        [],
    ):
        assert set(Stretches.of(pl.Series(values, dtype=pl.String)).values) == set(values), values
