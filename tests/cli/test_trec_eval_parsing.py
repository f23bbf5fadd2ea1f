"""``--trec-eval-parsing`` belongs to the drop-in: ``qrelkit eval`` refuses it, saying why."""

from __future__ import annotations


def test_eval_refuses_the_option_naming_why(cli, tmp_path):
    qrels = tmp_path / "qrels"
    run = tmp_path / "run"
    qrels.write_text("q 0 d1 1\n")
    run.write_text("q Q0 d1 1 nan t\n")
    result = cli("eval", "--trec-eval-parsing", qrels, run)
    assert result.exit_code == 2
    assert "qrelkit trec_eval --trec-eval-parsing" in result.stderr
    assert "a NaN score has no rank" in result.stderr


def test_eval_without_it_still_refuses_the_nan_score_naming_the_line(cli, tmp_path):
    qrels = tmp_path / "qrels"
    run = tmp_path / "run"
    qrels.write_text("q 0 d1 1\n")
    run.write_text("q Q0 d1 1 nan t\n")
    result = cli("eval", qrels, run)
    assert result.exit_code != 0
    assert f"{run}:1" in result.stderr


def test_a_grade_too_large_to_count_levels_is_one_line_exit_2(cli, tmp_path):
    """trec_eval keeps max_rel + 1 counts per query: 10^11 of them would be 745 GiB (trec_eval 10 itself
    fails to allocate and stops with exit 4); qrelkit names the line, with and without the option."""
    qrels = tmp_path / "qrels"
    run = tmp_path / "run"
    run.write_text("q Q0 d1 1 1 t\n")
    for grade, flags in (("99999999999", ()), ("99999999999abc", ("--trec-eval-parsing",))):
        qrels.write_text(f"q 0 d0 1\nq 0 d1 {grade}\n")
        result = cli("trec_eval", *flags, qrels, run)
        assert result.exit_code == 2 and result.stdout == ""
        assert f"{qrels}:2: grade 99999999999 is too large" in result.stderr
        assert "Traceback" not in result.stderr
