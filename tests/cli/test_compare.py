"""``qrelkit compare`` from the command line: output, formats, exit codes, the noise floor from qrels files
and from a judging project's database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from qrelkit.cli import main

from ..app.helpers import FIXTURES, grade_directly
from ..conftest import CLI, EXAMPLE

RUNS = [str(EXAMPLE / "runs" / f"{n}.run") for n in ("bm25", "dense", "hybrid", "rerank")]
QRELS = str(EXAMPLE / "qrels.txt")
FAST = ["--permutations", "500", "--bootstrap", "300"]


invoke = CLI.under("compare")
TABLE = ["-f", "table"]  # the tests' stdout is not a terminal: the table is asked for


def test_table_output_names_every_choice_and_the_conventions():
    result = invoke(QRELS, *RUNS[:2], "-m", "nDCG@10", "--seed", "5", *FAST, *TABLE)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "bm25      dense      nDCG@10" in out
    head = next(line for line in out.splitlines() if line.startswith("baseline"))
    assert head.split()[-3:] == ["p", "adj", "sig"]  # the significance column is named, as in markdown
    assert (
        "test: randomization (500 permutations); correction: holm over pairs-x-measures; alpha: 0.05; seed: 5"
        in out
    )
    assert "B=300" in out
    assert "conventions: gain=exponential, discount=log2" in out
    assert "qrels: qrels.txt sha256:c6ae9794de682f94" in out


def test_table_output_starts_with_the_bottom_line():
    """One sentence per measure before the tables: the library's (compare.bottom_line), the numbers those of
    the example's comparison: rerank minus bm25 under nDCG@10 is +0.1560 with p 4.0e-05, Holm over six
    tests multiplies the smallest by 6 (0.0002) and the next, dense's R@100 p 0.0015, by 5 (0.0077)."""
    result = invoke(QRELS, *RUNS, "-m", "nDCG@10", "-m", "R@100", *TABLE)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[2:6] == [
        "bottom line:",
        "  rerank beats bm25 on nDCG@10 by +0.156 (95% interval [0.084, 0.228], adjusted p 0.0002); dense and "
        "hybrid are not distinguishable from bm25; no labeller-noise floor was measured.",
        "  dense is worse than bm25 on R(rel=1)@100 by -0.172 (95% interval [-0.278, -0.066], adjusted p "
        "0.0077); hybrid and rerank are not distinguishable from bm25; no labeller-noise floor was measured.",
        "",
    ]


def test_json_output_and_file(tmp_path):
    target = tmp_path / "cmp.json"
    result = invoke(QRELS, *RUNS, "--baseline", "dense", "--test", "t", "-o", str(target))
    assert result.exit_code == 0, result.output
    data = json.loads(target.read_text())
    assert data["comparison"]["options"]["test"] == "t"
    assert {p["baseline"] for p in data["comparison"]["pairs"]} == {"dense"}
    assert len(data["comparison"]["multi"]) == 3  # four runs: ANOVA and Tukey per measure
    assert data["tool"]["name"] == "qrelkit" and data["conventions"]["ties"] == "average"


def test_format_named_writes_a_file_of_any_suffix(tmp_path):
    target = tmp_path / "cmp.out"
    result = invoke(QRELS, *RUNS, "--baseline", "dense", "--test", "t", "-f", "json", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())["comparison"]["options"]["test"] == "t"


@pytest.mark.parametrize(
    ("fmt", "marker"),
    [("markdown", "| baseline |"), ("latex", "\\toprule"), ("html", "<table class='stack'>")],
)
def test_formats(fmt, marker):
    result = invoke(QRELS, *RUNS[:2], "-m", "nDCG@10", "--test", "t", "-f", fmt)
    assert result.exit_code == 0 and marker in result.output


def test_profile_and_convention_flags_reach_the_evaluation():
    result = invoke(QRELS, *RUNS[:2], "-m", "nDCG@10", "--test", "t", "--gain", "linear", "-f", "json")
    assert json.loads(result.stdout)["conventions"]["gain"] == "linear"
    result = invoke(QRELS, *RUNS[:2], "-m", "nDCG@10", "--test", "t", "--profile", "trec_eval", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["conventions"]["profile"] == "trec_eval"


def test_one_run_is_a_usage_error():
    result = invoke(QRELS, RUNS[0])
    assert result.exit_code == 2 and "at least two runs" in result.output


def test_unknown_baseline_is_one_line_exit_1():
    result = invoke(QRELS, *RUNS[:2], "--baseline", "bm52", "--test", "t")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == ["qrelkit: error: no run named 'bm52' (did you mean 'bm25'?); expected one of bm25, dense. "
                     "Fix: name the baseline as eval prints the run"]  # fmt: skip


def test_bad_permutations_is_a_usage_error():
    assert invoke(QRELS, *RUNS[:2], "--permutations", "many").exit_code == 2
    assert invoke(QRELS, *RUNS[:2], "--test", "anova").exit_code == 2


def test_noise_floor_from_two_qrels_files():
    a, b = EXAMPLE / "judgments" / "alice.qrels", EXAMPLE / "judgments" / "bob.qrels"
    result = invoke(
        QRELS,
        *RUNS[::3],
        "-m",
        "nDCG@10",
        "--noise-floor",
        str(a),
        str(b),
        "--replicates",
        "10",
        *FAST,
        *TABLE,
    )
    assert result.exit_code == 0, result.output
    assert "labeller-noise floor (alice vs bob, 10 calibration queries, 10 relabelled copies" in result.output
    assert "exceeds the noise floor and significant" in result.output
    # piped (TSV), the verdict is a column of its own, beside each pair's row
    piped = invoke(
        QRELS, *RUNS[::3], "-m", "nDCG@10", "--noise-floor", str(a), str(b), "--replicates", "10", *FAST
    )
    head, row = piped.output.splitlines()[2:4]
    assert head.split("\t")[-1] == "verdict"
    assert row.split("\t")[:3] == ["bm25", "rerank", "nDCG@10"]
    assert row.split("\t")[-1] == "exceeds the noise floor and significant"


def test_noise_floor_refuses_qrels_without_the_calibration_queries(tmp_path):
    later = tmp_path / "later.qrels"
    later.write_text(
        "".join(line + "\n" for line in (EXAMPLE / "qrels.txt").read_text().splitlines() if line > "q11")
    )
    a, b = EXAMPLE / "judgments" / "alice.qrels", EXAMPLE / "judgments" / "bob.qrels"
    result = invoke(str(later), *RUNS[:2], "--noise-floor", str(a), str(b), "--test", "t")
    assert result.exit_code == 1
    assert (
        len(result.output.strip().splitlines()) == 1
        and "lack 10 of the 10 calibration queries" in result.output
    )


def _project(tmp_path: Path) -> Path:
    db = tmp_path / "project.db"
    result = CliRunner().invoke(main, [
        "judge", "init", str(db), "--rubric", str(FIXTURES / "rubric.toml"), "--pool", str(FIXTURES / "pool.jsonl"),
        "--docs", str(FIXTURES / "docs.jsonl"), "--queries", str(FIXTURES / "queries.tsv"),
        "--labellers", "alice,bob", "--seed", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return db


CALIBRATION = {
    ("q1", "keys/rotate"): 3, ("q1", "keys/policy"): 1, ("q1", "security/advisory-4"): 0, ("q1", "changelog/2026"): 1,
    ("q2", "sdk/retries"): 3, ("q2", "limits/rate"): 2, ("q2", "sdk/timeouts"): 1, ("q2", "security/advisory-4"): 0,
}  # fmt: skip


def test_noise_floor_from_a_project_database_equals_the_qrels_files(tmp_path):
    db = _project(tmp_path)
    bob = {**CALIBRATION, ("q1", "keys/policy"): 3, ("q2", "limits/rate"): 3}
    grade_directly(db, "alice", CALIBRATION)
    grade_directly(db, "bob", bob)
    final = tmp_path / "final.qrels"
    pool = [json.loads(line) for line in (FIXTURES / "pool.jsonl").read_text().splitlines() if line.strip()]
    final.write_text("".join(f"{p['query_id']} 0 {p['doc_id']} {CALIBRATION.get((p['query_id'], p['doc_id']), 1)}\n"
                             for p in pool))  # fmt: skip
    files = []
    for name, grades in (("alice", CALIBRATION), ("bob", bob)):
        path = tmp_path / f"{name}.qrels"
        path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(grades.items())))
        files.append(str(path))
    runs = [str(FIXTURES / "sysalpha.run"), str(FIXTURES / "sysbeta.run")]
    common = [str(final), *runs, "-m", "nDCG@10", "--replicates", "5", "--test", "t", "-f", "json"]
    from_db = invoke(*common, "--noise-floor", str(db))
    from_files = invoke(*common, "--noise-floor", *files)
    assert from_db.exit_code == 0, from_db.output
    assert from_files.exit_code == 0, from_files.output
    db_floor = json.loads(from_db.stdout)["comparison"]["noise_floor"]
    file_floor = json.loads(from_files.stdout)["comparison"]["noise_floor"]
    assert db_floor["calibration_queries"] == ["q1", "q2"]
    assert db_floor["confusion"] == file_floor["confusion"]
    assert db_floor["pairs"] == file_floor["pairs"]
    assert invoke(*common, "--noise-floor", str(db), "--labellers", "alice,carol").exit_code == 1


def test_the_noise_floors_files_are_read_with_the_profiles_reader_options(tmp_path: Path) -> None:
    """Under --profile trec_eval the labellers' files skip '#' lines as the main judgments do: the same
    floor as from the files without them."""
    alice, bob = EXAMPLE / "judgments" / "alice.qrels", EXAMPLE / "judgments" / "bob.qrels"
    commented = []
    for path in (alice, bob):
        copy = tmp_path / path.name
        copy.write_text("# exported by the judging app\n" + path.read_text())
        commented.append(copy)
    common = [
        QRELS,
        *RUNS[::3],
        "-m",
        "nDCG@10",
        "--profile",
        "trec_eval",
        "--replicates",
        "10",
        "-f",
        "json",
    ]
    plain = invoke(*common, "--noise-floor", str(alice), str(bob), *FAST)
    skipped = invoke(*common, "--noise-floor", *map(str, commented), *FAST)
    assert plain.exit_code == 0, plain.output
    assert skipped.exit_code == 0, skipped.output

    def floor(result) -> dict:
        value = json.loads(result.stdout)["comparison"]["noise_floor"]
        value.pop("labeller_fingerprints")  # the files differ by their comment lines
        return value

    assert floor(skipped) == floor(plain)


def test_the_tukey_table_has_no_column_of_dashes():
    """Without --multi randomized-tukey there is no randomised p-value: no column for it."""
    result = invoke(QRELS, *RUNS[:3], "-m", "nDCG@10", *FAST, *TABLE)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if line.startswith("baseline  treatment  diff "))
    assert header.split() == [
        "baseline",
        "treatment",
        "diff",
        "q",
        "p",
        "(Tukey)",
        "simultaneous",
        "interval",
        "ES_E",
    ]


def test_the_run_means_beside_a_pair_are_eval_s_to_the_bit():
    """rerank's nDCG@10 on the example: eval prints 0.8995396066077865 (its exact summation); compare's
    mean_treatment is that same number, not a float sum in another order that differs in the last digit."""
    evaluated = CLI("eval", QRELS, RUNS[0], RUNS[3], "-m", "nDCG@10", "-f", "json")
    means = json.loads(evaluated.stdout)["results"]["means"]
    assert means["rerank"]["nDCG@10"]["mean"] == 0.8995396066077865
    compared = invoke(QRELS, RUNS[0], RUNS[3], "-m", "nDCG@10", *FAST, "-f", "json")
    (pair,) = json.loads(compared.stdout)["comparison"]["pairs"]
    assert pair["mean_treatment"] == means["rerank"]["nDCG@10"]["mean"]
    assert pair["mean_baseline"] == means["bm25"]["nDCG@10"]["mean"]
