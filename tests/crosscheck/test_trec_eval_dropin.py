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


def _files(tmp_path, qrels: str, run: str):
    (tmp_path / "q").write_text(qrels)
    (tmp_path / "r").write_text(run)
    return str(tmp_path / "q"), str(tmp_path / "r")


def test_q_prints_the_queries_before_the_one_trec_eval_stops_at(tmp_path):
    """Queries 1 and 3 judged, only 1 in the run: trec_eval prints query 1 under -q, then exits 4
    (trec_eval.c line 392) with no summary. Query 1: one relevant document at rank 1, num_ret 1."""
    q, r = _files(tmp_path, "1 0 a 1\n3 0 b 1\n", "1 Q0 a 1 2.0 t\n")
    result = _run("-q", "-m", "num_ret", "-m", "P.5", q, r)
    assert result.exit_code == 4
    assert result.stdout == "num_ret               \t1\t1\nP_5                   \t1\t0.2000\n"
    assert "judged query '3' is not in the run" in result.stderr


def test_a_document_ranked_twice_stops_at_its_query_unless_below_m(tmp_path):
    q, r = _files(tmp_path, "1 0 a 1\n2 0 a 1\n", "1 Q0 a 1 2 t\n2 Q0 a 1 3 t\n2 Q0 b 2 2 t\n2 Q0 a 3 1 t\n")
    result = _run("-q", "-m", "num_ret", q, r)
    assert (result.exit_code, result.stdout) == (4, "num_ret               \t1\t1\n")
    assert "query '2' ranks a document twice" in result.stderr
    # -M 2 keeps a (score 3) and b: the second a, ranked third, is never seen (form_res_rels.c)
    result = _run("-M", "2", "-m", "num_ret", q, r)
    assert (result.exit_code, result.stdout) == (0, "num_ret               \tall\t3\n")


def test_nothing_returned_under_j_gives_nan_as_trec_eval_prints_it(tmp_path):
    """-J drops the only document (not judged): num_rel_ret / num_ret is 0 / 0 (m_iprec_at_recall.c line
    80); the cutoff lround(0.5 * 1) = 1 is above num_rel_ret, so that level stays 0."""
    q, r = _files(tmp_path, "1 0 a 1\n", "1 Q0 b 1 1 t\n")
    result = _run("-q", "-J", "-m", "iprec_at_recall.0,0.5", q, r)
    assert result.exit_code == 0
    assert result.stdout == (
        "iprec_at_recall_0.00  \t1\t  -nan\niprec_at_recall_0.50  \t1\t0.0000\n"
        "iprec_at_recall_0.00  \tall\t  -nan\niprec_at_recall_0.50  \tall\t0.0000\n"
    )


def test_c_summary_of_num_rel_counts_grades_above_zero_whatever_l(tmp_path):
    """Grades 1, 2, 2 and 0: per query -l 2 counts 2; the -c summary counts the three above 0
    (m_num_rel.c lines 63-71)."""
    q, r = _files(tmp_path, "1 0 a 1\n1 0 b 2\n1 0 c 2\n1 0 d 0\n", "1 Q0 a 1 1 t\n")
    result = _run("-q", "-c", "-l", "2", "-m", "num_rel", q, r)
    assert result.stdout == "num_rel               \t1\t2\nnum_rel               \tall\t3\n"


def test_a_run_of_two_tags_is_named_by_its_last_line(tmp_path):
    q, r = _files(tmp_path, "1 0 a 1\n", "1 Q0 a 1 2 first\n1 Q0 b 2 1 second\n1 Q0 c 3 0 first\n")
    result = _run("-m", "runid", q, r)
    assert (result.exit_code, result.stdout) == (0, "runid                 \tall\tfirst\n")


@pytest.mark.parametrize(
    ("qrels", "run", "what"),
    [
        ("1 0 a 1\n", "1 Q0 a 1 nan t\n", "score is nan"),
        ("1 0 a 1\n", "1 Q0 a 1 inf t\n", "score is inf"),
        ("1 0 a 1\n", "1 Q0 a 1 0x1p3 t\n", "score '0x1p3' is not a number"),
        ("1 0 a 1\n", "1 Q0 a 1 abc t\n", "score 'abc' is not a number"),
        ("1 0 a 1.5\n", "1 Q0 a 1 1 t\n", "grade '1.5' is not an integer"),
    ],
)
def test_what_atof_reads_and_qrelkit_refuses_exits_2_naming_the_line(tmp_path, qrels, run, what):
    """trec_eval's atof reads these (nan, inf, a hexadecimal float, 0 for text, a grade truncated to 1);
    qrelkit refuses them (docs/trec_eval.md), with trec_eval's exit code for a file it cannot read."""
    q, r = _files(tmp_path, qrels, run)
    result = _run(q, r)
    assert result.exit_code == 2 and result.stdout == ""
    assert what in result.stderr and ":1:" in result.stderr
