"""Help that starts short (qrelkit.cli.help): eval, compare and report open with their purpose, the five
options most people use and one example, under 25 lines at 80 columns; the other options follow, grouped."""

from __future__ import annotations

import pytest

from qrelkit.cli.help import USAGE_BLOCK_LINES

from ..conftest import CLI


def _help(command: str) -> list[str]:
    from click.testing import CliRunner

    from qrelkit.cli import main

    result = CliRunner().invoke(main, [command, "--help"], prog_name="qrelkit", terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


@pytest.mark.parametrize(
    ("command", "common"),
    [
        ("eval", ["-m, --measure TEXT", "--profile NAME", "-q, --per-query", "-f, --format NAME", "-o, --output FILE"]),
        ("compare", ["-m, --measure TEXT", "--baseline TEXT", "--noise-floor A.qrels B.qrels | project.db",
                     "--profile NAME", "-f, --format NAME"]),
        ("report", ["-o, --output FILE", "-m, --measure TEXT", "--baseline TEXT",
                    "--noise-floor A.qrels B.qrels | project.db", "--profile NAME"]),
    ],
)  # fmt: skip
def test_help_opens_with_five_options_and_an_example_under_25_lines(command: str, common: list[str]) -> None:
    lines = _help(command)
    assert lines[0].startswith(f"Usage: qrelkit {command} [OPTIONS] QRELS RUNS")
    end = next(i for i, line in enumerate(lines) if line in ("Details:", "Measures and statistics:"))
    block = lines[:end]
    assert len(block) < USAGE_BLOCK_LINES == 25, "\n".join(block)
    most = block[block.index("Most used:") + 1 : block.index("Example:") - 1]
    assert [line.strip().split("  ")[0] for line in most if not line.startswith("    ")] == common
    example = block[block.index("Example:") + 1]
    assert example.startswith(f"  qrelkit {command} qrels.txt runs/")


EXAMPLES = {
    "eval": "qrelkit eval qrels.txt runs/*.run -m nDCG@10 -m AP --profile trec_eval -o results.json",
    "compare": "qrelkit compare qrels.txt runs/bm25.run runs/rerank.run --noise-floor alice.qrels bob.qrels",
    "report": "qrelkit report qrels.txt runs/*.run --noise-floor alice.qrels bob.qrels -o report.html",
}


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("command", ["eval", "compare", "report"])
def test_the_example_is_written_verbatim_under_80_columns(command: str, width: int) -> None:
    """Never wrapped mid-command by the terminal's width: each line under 80 columns, every line but the
    last ending in a shell line continuation, so that the lines pasted run the command."""
    from click.testing import CliRunner

    from qrelkit.cli import main

    lines = CliRunner().invoke(main, [command, "--help"], terminal_width=width).output.splitlines()
    start = lines.index("Example:") + 1
    example = lines[start : lines.index("", start)]
    assert all(len(line) < 80 for line in example), example
    assert all(line.endswith(" \\") for line in example[:-1]) and not example[-1].endswith("\\")
    assert " ".join(line.removesuffix("\\").strip() for line in example) == EXAMPLES[command]


@pytest.mark.parametrize("command", ["eval", "compare", "report"])
def test_the_other_options_follow_grouped(command: str) -> None:
    lines = _help(command)
    sections = [line for line in lines if line and not line.startswith(" ") and line.endswith(":")]
    assert sections[:2] == ["Most used:", "Example:"]
    groups = [s for s in sections[2:] if s != "Details:"]
    order = ["Measures and statistics:", "Conventions (--profile, then one flag per axis):", "Inputs:", "Outputs:",
             "Scale:", "Other options:"]  # fmt: skip
    assert (
        groups == [g for g in order if g in groups]
        and "Conventions (--profile, then one flag per axis):" in groups
    )
    conventions = lines[lines.index("Conventions (--profile, then one flag per axis):") + 1]
    assert conventions.strip().startswith("--profile")


def test_the_old_adjudicate_names_still_run_with_a_note() -> None:
    for old, new in ((["adjudicate"], "adjudicate-files"), (["judge", "adjudicate"], "judge decide")):
        result = CLI(*old, "--help")
        assert result.exit_code == 0
        assert CLI(*new.split(), "--help").stdout.replace(new, " ".join(old)) == result.stdout.replace(
            new, " ".join(old)
        )
    listing = CLI("--help").stdout
    assert "adjudicate-files" in listing and "  adjudicate " not in listing
    judge = CLI("judge", "--help").stdout
    assert "  decide " in judge and "  adjudicate " not in judge


def test_the_old_name_runs_the_new_command_after_a_note(tmp_path) -> None:
    from ..conftest import EXAMPLE

    judgments = EXAMPLE / "judgments"
    args = [judgments / "alice.qrels", judgments / "bob.qrels", "--runs", EXAMPLE / "runs" / "bm25.run"]
    old = CLI("adjudicate", *args, "-o", tmp_path / "old.tsv")
    new = CLI("adjudicate-files", *args, "-o", tmp_path / "new.tsv")
    assert old.exit_code == new.exit_code == 0, old.output
    assert old.stderr.splitlines()[0] == (
        "note: `qrelkit adjudicate` is now `qrelkit adjudicate-files`; the old name works for one more release"
    )
    assert "note:" not in new.stderr
    assert (tmp_path / "old.tsv").read_text() == (tmp_path / "new.tsv").read_text()


@pytest.mark.parametrize(
    ("command", "old"),
    [(["adjudicate-files"], "`qrelkit adjudicate`"), (["judge", "decide"], "`qrelkit judge adjudicate`")],
)
def test_a_renamed_command_s_help_names_its_old_name(command: list[str], old: str) -> None:
    shown = " ".join(CLI(*command, "--help").stdout.split())
    assert f"{old}, its old name, works for one more release" in shown


def test_eval_help_names_every_measure_the_grammar_reads():
    from click.testing import CliRunner

    from qrelkit._typing import MEASURE_NAMES
    from qrelkit.cli import main
    from qrelkit.measures.grammar import INFO

    assert tuple(sorted(INFO)) == MEASURE_NAMES
    text = " ".join(CliRunner().invoke(main, ["eval", "--help"], terminal_width=200).output.split())
    assert all(f" {name}," in text or f" {name} (" in text for name in MEASURE_NAMES)
