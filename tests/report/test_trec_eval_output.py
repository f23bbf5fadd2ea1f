"""trec_eval's layout printed a block of queries at a time: the pieces join to trec_eval's own expected
output byte for byte, and no piece holds more than its block's lines (so -q streams)."""

from __future__ import annotations

from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
from qrelkit.report.trec_eval import iter_trec_eval

from ..conftest import data_path


def test_blocks_join_to_trec_eval_expected_output():
    qrels, run = data_path("trec_eval-tests", "qrels.test"), data_path("trec_eval-tests", "results.test")
    output = trec_eval_files(qrels, run, TrecOptions(per_query=True, measures=("all_trec",)))
    expected = data_path("trec_eval-tests", "out.test.aq").read_text()
    pieces = list(iter_trec_eval(output, block=2))
    assert "".join(pieces) == expected
    per_query = [line for line in expected.splitlines() if "\tall\t" not in line]
    per_query_count = len(per_query) // len(output.query_ids)
    # ceil(queries / 2) blocks of per-query lines, then the summary
    assert len(pieces) == -(-len(output.query_ids) // 2) + 1
    assert all(piece.count("\n") <= 2 * per_query_count for piece in pieces[:-1])
