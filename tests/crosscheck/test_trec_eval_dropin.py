"""``qrelkit trec_eval`` against trec_eval 10's own expected outputs, byte for byte.

Each case is the command line the suite's README gives for the expected file; the output must be
identical to the file trec_eval produced (measure names, order, padding, 4 decimals, sums, relstring)."""

from __future__ import annotations

import pytest

from ..conftest import CLI, data_path

PARAMS = [
    "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
    "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
    "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20",
]  # fmt: skip

CASES = {
    "out.test": ([], "qrels.test", "results.test"),
    "out.test.a": (["-m", "all_trec"], "qrels.test", "results.test"),
    "out.test.aq": (["-m", "all_trec", "-q"], "qrels.test", "results.test"),
    "out.test.aqc": (["-m", "all_trec", "-q", "-c"], "qrels.test", "results.trunc"),
    "out.test.aql": (["-m", "all_trec", "-mrelstring.20", "-q", "-l2"], "qrels.rel_level", "results.test"),
    "out.test.meas_params": (["-q", *PARAMS], "qrels.test", "results.test"),
}


_run = CLI.under("trec_eval")


@pytest.mark.parametrize("expected", list(CASES))
def test_output_is_byte_identical_to_trec_eval(expected):
    options, qrels, run = CASES[expected]
    result = _run(*options, str(data_path("trec_eval-tests", qrels)), str(data_path("trec_eval-tests", run)))
    assert result.exit_code == 0, result.output
    assert result.output == data_path("trec_eval-tests", expected).read_text()


def test_a_judged_query_missing_from_the_run_stops_without_c():
    """trec_eval 10 exits 4 when a judged query has no results unless -c (trec_eval.c line 392), the
    summary unprinted."""
    result = _run(
        str(data_path("trec_eval-tests", "qrels.test")),
        str(data_path("trec_eval-tests", "results.trunc")),
    )
    assert result.exit_code == 4
    assert result.stdout == ""
    assert "judged query '302' is not in the run" in result.stderr and "-c" in result.stderr


def test_a_misspelled_measure_is_a_usage_error_naming_the_nearest():
    result = _run("-m", "ndcg_cutt.10", str(data_path("trec_eval-tests", "qrels.test")), "x")
    assert result.exit_code == 2
    assert "did you mean 'ndcg_cut'?" in result.output


def test_summary_off_and_cut_at_m(tmp_path):
    """-n prints per-query lines only; -M 1 keeps the top document: P_5 is 1/5 or 0 per query, and the
    counts in the summary are sums (hand arithmetic over the three queries of results.test)."""
    qrels, run = data_path("trec_eval-tests", "qrels.test"), data_path("trec_eval-tests", "results.test")
    out = _run("-q", "-n", "-M", "1", "-m", "num_ret", "-m", "P.5", str(qrels), str(run)).output
    assert "\tall\t" not in out
    assert [line.split("\t")[2] for line in out.splitlines() if line.startswith("num_ret")] == ["1", "1", "1"]
    summary = _run("-M", "1", "-m", "num_ret", str(qrels), str(run)).output
    assert summary == "num_ret               \tall\t3\n"
