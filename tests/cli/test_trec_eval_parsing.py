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
