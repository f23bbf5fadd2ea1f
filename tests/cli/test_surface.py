"""The command line is a thin skin: usage errors exit 2 everywhere, bad input 1, and -o picks the format by
suffix (CSV included) with the provenance in the file."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ..conftest import CLI, EXAMPLE

QRELS = EXAMPLE / "qrels.txt"
RUN = EXAMPLE / "runs" / "bm25.run"


invoke = CLI


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert invoke("conventions").exit_code == 2
    out = invoke("eval", QRELS, RUN, "-o", tmp_path / "r.xyz")
    assert out.exit_code == 2 and "name it with --format" in out.output
    assert not (tmp_path / "r.xyz").exists()
    assert invoke("eval", QRELS).exit_code == 2
    assert invoke("agree", QRELS).exit_code == 2


def test_bad_input_exits_1_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.run"
    bad.write_text("q01 Q0 d1 1 high bm25\n")
    out = invoke("eval", QRELS, bad)
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert f"{bad}:1" in out.output


def test_csv_output_holds_the_numbers_of_the_json_and_the_provenance(tmp_path: Path) -> None:
    assert invoke("eval", QRELS, RUN, "-o", tmp_path / "r.csv").exit_code == 0
    assert invoke("eval", QRELS, RUN, "-o", tmp_path / "r.json").exit_code == 0
    text = (tmp_path / "r.csv").read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0].startswith("# qrelkit ") and any(line.startswith("# conventions: ") for line in header)
    rows = list(
        csv.DictReader(io.StringIO("\n".join(ln for ln in text.splitlines() if not ln.startswith("#"))))
    )
    data = json.loads((tmp_path / "r.json").read_text())
    means = data["results"]["means"]["bm25"]
    per_query = data["results"]["per_query"]["bm25"]
    for row in rows:
        expected = (
            means[row["measure"]]["mean"]
            if row["query_id"] == "all"
            else per_query[row["query_id"]][row["measure"]]
        )
        assert float(row["value"]) == expected  # repr floats read back to the same double
    assert {r["measure"] for r in rows} == {"nDCG@10", "R(rel=1)@100", "Judged@10"}


def test_explain_names_the_nearest_query_for_a_typo() -> None:
    out = invoke("explain", QRELS, RUN, "--query", "q1")
    assert out.exit_code == 1 and "(did you mean 'q" in out.output and "Traceback" not in out.output


def test_eval_of_small_clean_files_loads_no_dataframe_library(tmp_path: Path) -> None:
    """The command line, not only the library, stays on the numpy-only path for small files (a manifest
    check that imported polars cost 0.27 s of every `qrelkit eval`)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from qrelkit.cli import main\n"
        f"main(['eval', {str(QRELS)!r}, {str(RUN)!r}, '-f', 'tsv'], standalone_mode=False)\n"
        "print(sorted(m for m in ('polars', 'pyarrow', 'pandas', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_option_lists_are_the_members_of_the_literals_that_own_them() -> None:
    """Each closed option set is typed once, as a Literal; the command line lists its members."""
    import click

    from qrelkit.cli.agree import adjudicate_command
    from qrelkit.cli.agree import command as agree
    from qrelkit.cli.compare import command as compare
    from qrelkit.cli.judge import init_command
    from qrelkit.cli.pool import command as pool
    from qrelkit.cli.report import command as report

    def choices(command: click.Command, name: str) -> list[str]:
        param = next(p for p in command.params if p.name == name)
        assert isinstance(param.type, click.Choice)
        return list(param.type.choices)

    weights = ["linear", "quadratic", "unweighted"]  # agreement.kappa.Weighting
    assert choices(agree, "weights") == choices(init_command, "weights") == weights
    assert choices(init_command, "gate_on") == ["ci_low", "bootstrap_low"]  # GateUse without the point value
    assert choices(adjudicate_command, "default") == ["a", "b", "max", "min"]
    tests = ["randomization", "t", "wilcoxon", "bootstrap"]  # compare.Test
    assert choices(compare, "test") == choices(report, "test") == tests
    assert choices(compare, "correction") == ["holm", "bonferroni", "bh", "none"]
    assert choices(compare, "family") == ["pairs", "pairs-x-measures"]
    assert choices(compare, "multi") == ["tukey", "randomized-tukey"]
    assert choices(pool, "input_format") == ["auto", "trec", "jsonl", "csv", "tsv", "parquet"]


def test_the_commands_stay_short() -> None:
    """A command parses, calls one library function and renders: no function of cli/ is longer than 60
    lines (decorators excluded), and one over 40 says why in a comment starting ``# long:``."""
    import ast

    import qrelkit

    cli = Path(qrelkit.__file__).parent / "cli"
    for path in sorted(cli.glob("*.py")):
        name, text = path.name, path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                assert length <= 60, f"{name}: {node.name} has {length} lines"
                body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                assert length <= 40 or "# long:" in body, (
                    f"{name}: {node.name} has {length} lines and no comment why"
                )


def test_eval_without_a_rubric_loads_no_rubric_module() -> None:
    """A small evaluation imports what it uses: without --rubric, neither the rubric module nor its TOML
    reader (about 15 ms of imports)."""
    import subprocess
    import sys

    code = (
        "import contextlib, io, runpy, sys\n"
        f"sys.argv = ['qrelkit', 'eval', {str(QRELS)!r}, {str(RUN)!r}, '-f', 'tsv']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        runpy.run_module('qrelkit', run_name='__main__')\n"
        "    except SystemExit as exit:\n"
        "        assert not exit.code, exit.code\n"
        "print(sorted(m for m in sys.modules if m in ('tomllib', 'qrelkit.rubric')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
