"""qrelkit.naming's labeller-naming rule (the run and id rules are tested with the readers)."""

from __future__ import annotations

from pathlib import Path

from qrelkit.naming import labeller_names


def test_labeller_names_are_file_names_up_to_the_first_dot_positions_only_when_shared():
    assert labeller_names(["x/alice.qrels", "bob.qrels.gz", "carol"]) == ["alice", "bob", "carol"]
    assert labeller_names(["x/alice.qrels", "y/alice.txt", "bob.qrels"]) == ["alice (1)", "alice (2)", "bob"]
    assert labeller_names([Path("a/b.v2.qrels"), Path("c.qrels")]) == ["b", "c"]


def test_agree_and_compare_name_labellers_alike(tmp_path):
    """Both commands call the one rule: the names agree writes are the names compare's noise floor writes."""
    import json

    from click.testing import CliRunner

    from qrelkit.cli import main

    from .conftest import EXAMPLE

    a = tmp_path / "alice.v2.qrels"
    b = tmp_path / "bob.qrels"
    a.write_text((EXAMPLE / "judgments" / "alice.qrels").read_text())
    b.write_text((EXAMPLE / "judgments" / "bob.qrels").read_text())
    agree = CliRunner().invoke(main, ["agree", str(a), str(b), "-f", "json"])
    assert agree.exit_code == 0, agree.output
    names = [json.loads(agree.stdout)["labellers"][w]["name"] for w in ("a", "b")]
    runs = [str(EXAMPLE / "runs" / f"{n}.run") for n in ("bm25", "dense")]
    out = CliRunner().invoke(main, ["compare", str(EXAMPLE / "qrels.txt"), *runs, "-m", "nDCG@10", "--test", "t",
                                    "--replicates", "2", "--bootstrap", "50", "-f", "json", "--noise-floor", str(a), str(b)])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["comparison"]["noise_floor"]["labellers"] == names == ["alice", "bob"]
