"""``eval`` and ``compare`` with the judgment bounds: on by default for the table of small runs, asked for
with --bounds in the other formats, refused where they cannot be computed. The numbers are the hand
arithmetic of tests/evaluation/test_bounds.py (two queries, unjudged documents at ranks 1 and 3)."""

from __future__ import annotations

import json
import re

import pytest

from ..conftest import CLI, on_a_terminal
from ..evaluation.test_bounds import AP_TOP, AP_ZERO, NDCG_TOP, NDCG_ZERO, P_TOP, P_ZERO, R_TOP, R_ZERO

MEASURES = ["-m", "nDCG@3", "-m", "P@3", "-m", "R@3", "-m", "AP"]
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d5 1\nq2 0 e1 1\nq2 0 e2 0\n"
SYS = "q1 Q0 u1 1 10 sys\nq1 Q0 d1 2 9 sys\nq1 Q0 u3 3 8 sys\nq1 Q0 d2 4 7 sys\n" + (
    "q2 Q0 e1 1 3 sys\nq2 Q0 e2 2 2 sys\nq2 Q0 e3 3 1 sys\n"
)
# every document judged: both bounds are the mean itself
BASE = "q1 Q0 d1 1 3 base\nq1 Q0 d2 2 2 base\nq1 Q0 d5 3 1 base\nq2 Q0 e1 1 2 base\nq2 Q0 e2 2 1 base\n"


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, text in (("qrels", QRELS), ("sys", SYS), ("base", BASE)):
        out[name] = tmp_path / f"{name}.txt"
        out[name].write_text(text)
    return {k: str(v) for k, v in out.items()}


def _f(x: float) -> str:
    return f"{x:.4f}"


def test_eval_table_shows_the_bounds_by_default(files):
    result = CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "table")
    assert result.exit_code == 0, result.output
    out = result.output
    flat = " ".join(out.split())  # the title as rich wraps it, on one line
    assert "judgment bounds (not a confidence interval)" in flat
    assert "as 0 and as grade 2 (the judgments' highest;" in flat
    # run, measure, mean, as 0, as 2, judged, where, raised (the means table's row holds numbers only)
    rows = [line.replace("│", " ").split() for line in out.splitlines() if line.startswith("│ sys")]
    bounded = {row[1]: row for row in rows if not row[1][0].isdigit()}
    expected = {
        "nDCG@3": (NDCG_ZERO, NDCG_TOP, "0.5000", "@3"),
        "P(rel=1)@3": (P_ZERO, P_TOP, "0.5000", "@3"),
        "R(rel=1)@3": (R_ZERO, R_TOP, "0.5000", "@3"),
        "AP(rel=1)": (AP_ZERO, AP_TOP, _f((2 / 4 + 2 / 3) / 2), "of"),
    }
    assert list(bounded) == list(expected), out
    for measure, (zero, top, judged, where) in expected.items():
        row = bounded[measure]
        assert row[2:7] == [_f(zero), _f(zero), _f(top), judged, where], (measure, row)
        assert row[-1] == "3"


def test_eval_json_carries_the_bounds_with_their_conventions(files):
    result = CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "json", "--bounds")
    assert result.exit_code == 0, result.output
    bounds = json.loads(result.stdout)["judgment_bounds"]
    assert bounds["top_grade"] == 2 and bounds["top_grade_from"] == "qrels"
    assert "not a confidence interval" in bounds["convention"]
    ndcg = bounds["runs"]["sys"]["nDCG@3"]
    assert ndcg["zero"] == pytest.approx(NDCG_ZERO) and ndcg["top"] == pytest.approx(NDCG_TOP)
    assert (ndcg["low"], ndcg["high"]) == (ndcg["zero"], ndcg["top"])
    assert ndcg["raised_within"] == 3 and ndcg["unjudged_raised"] == 3
    ap = bounds["runs"]["sys"]["AP(rel=1)"]
    assert ap["top"] == pytest.approx(AP_TOP) and ap["raised_within"] == "every retrieved document"


def test_machine_formats_carry_no_bounds_unless_asked(files):
    plain = CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "json")
    assert "judgment_bounds" not in json.loads(plain.stdout)
    tsv = CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "tsv", "--bounds")
    assert tsv.exit_code == 0, tsv.output
    (line,) = [x for x in tsv.stdout.splitlines() if x.startswith("# judgment_bounds: ")]
    p = json.loads(line.removeprefix("# judgment_bounds: "))["runs"]["sys"]["P(rel=1)@3"]
    assert (p["zero"], p["top"]) == (pytest.approx(P_ZERO), pytest.approx(P_TOP))
    # the rows of numbers are eval's as before
    assert [x for x in tsv.stdout.splitlines() if not x.startswith("#")] == [
        x
        for x in CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "tsv").stdout.splitlines()
        if not x.startswith("#")
    ]


def test_no_bounds_turns_the_default_off(files):
    result = CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "table", "--no-bounds")
    assert result.exit_code == 0, result.output
    assert "judgment bounds" not in result.output


@pytest.mark.parametrize(
    ("extra", "named"),
    [(["--memory-limit", "2GB"], "--memory-limit"), (["--engine", "spark"], "--engine spark")],
)
def test_bounds_refused_where_they_cannot_be_computed(files, extra, named):
    result = CLI("eval", files["qrels"], files["sys"], "--bounds", *extra)
    assert result.exit_code == 2
    assert (
        f"--bounds reads each run whole and bounds the means of judgments in this process, which {named}"
        in (result.stderr)
    )
    assert "Traceback" not in result.output


def test_compare_table_shows_each_runs_bounds(files):
    result = CLI("compare", files["qrels"], files["base"], files["sys"], "-m", "nDCG@3", "--permutations", "50",
                 "--bootstrap", "50", "-f", "table")  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "judgment bounds (not a confidence interval)" in out
    rows = [
        line.split()
        for line in out.split("judgment bounds")[1].splitlines()
        if line.startswith(("base ", "sys "))
    ]
    assert rows[0][:2] == ["base", "nDCG@3"] and rows[0][2] == rows[0][3] == rows[0][4]  # all judged
    assert rows[0][5:] == ["1.0000", "@3", "0"]
    assert rows[1][:5] == ["sys", "nDCG@3", _f(NDCG_ZERO), _f(NDCG_ZERO), _f(NDCG_TOP)]


def test_compare_json_with_bounds(files):
    result = CLI("compare", files["qrels"], files["base"], files["sys"], "-m", "P@3", "-f", "json", "--bounds",
                 "--permutations", "50", "--bootstrap", "50")  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    p = data["judgment_bounds"]["runs"]["sys"]["P(rel=1)@3"]
    assert (p["zero"], p["top"]) == (pytest.approx(P_ZERO), pytest.approx(P_TOP))
    plain = CLI("compare", files["qrels"], files["base"], files["sys"], "-m", "P@3", "-f", "json",
                "--permutations", "50", "--bootstrap", "50")  # fmt: skip
    assert "judgment_bounds" not in json.loads(plain.stdout)


def test_report_names_each_bound_beside_each_mean(files, tmp_path):
    out = tmp_path / "report.html"
    result = CLI("report", files["qrels"], files["base"], files["sys"], *MEASURES, "-o", str(out),
                 "--permutations", "50")  # fmt: skip
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "beside a mean, its judgment bounds (not a confidence interval)" in page
    # each value named, so that a mean and its bounds never read as a confidence interval; on a line of
    # their own under the mean (a table of several measures fits its page), with the mean's decimals
    assert (
        f"{NDCG_ZERO:.4f}<span class='bounds'> (unjudged as 0: {NDCG_ZERO:.4f}, as 2: {NDCG_TOP:.4f})</span>"
        in page
    )
    assert (
        f"{R_ZERO:.4f}<span class='bounds'> (unjudged as 0: {R_ZERO:.4f}, as 2: {R_TOP:.4f})</span>" in page
    )
    assert not re.search(r"\d \[\d\.\d{3}, \d\.\d{3}\]", page)


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_bounds_refused_with_human_estimates(files, command):
    result = CLI(command, files["qrels"], files["base"], files["sys"], "--bounds", "--human", files["qrels"])
    assert result.exit_code == 2, result.output
    assert "bounds the means of judgments in this process, which --human does not" in result.stderr


def test_eval_html_and_markdown_with_bounds(files):
    html = CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "html", "--bounds")
    assert html.exit_code == 0, html.output
    assert (
        f"{NDCG_ZERO:.4f}<span class='bounds'> (unjudged as 0: {NDCG_ZERO:.4f}, as 2: {NDCG_TOP:.4f})</span>"
        in html.stdout
    )
    assert "beside a mean, its judgment bounds (not a confidence interval)" in html.stdout
    md = CLI("eval", files["qrels"], files["sys"], *MEASURES, "-f", "markdown", "--bounds")
    assert md.exit_code == 0, md.output
    row = f"| sys | P(rel=1)@3 | {P_ZERO:.4f} | {P_ZERO:.4f} | {P_TOP:.4f} | 0.5000 @3 | 3 |"
    assert row in md.stdout


def _on_a_terminal(*args: object) -> tuple[int, str]:
    """``qrelkit ARGS`` as a real process whose stdout is a real terminal (a pty): (exit, what it showed)."""
    import os
    import sys

    command = [sys.executable, "-m", "qrelkit", *map(str, args)]
    return on_a_terminal(command, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.parametrize("asked", [False, True])
def test_eval_output_file_holds_the_bounds_only_when_asked(files, tmp_path, asked):
    """On a terminal, ``eval -o FILE`` shows the table with its bounds by default; the file holds them only
    with --bounds."""
    out = tmp_path / "results.json"
    code, shown = _on_a_terminal("eval", files["qrels"], files["sys"], *MEASURES, "-o", out,
                                 *(["--bounds"] if asked else []))  # fmt: skip
    assert code == 0, shown
    assert "judgment bounds (not a confidence interval)" in " ".join(shown.split())
    data = json.loads(out.read_text())
    if asked:
        ndcg = data["judgment_bounds"]["runs"]["sys"]["nDCG@3"]
        assert (ndcg["zero"], ndcg["top"]) == (pytest.approx(NDCG_ZERO), pytest.approx(NDCG_TOP))
    else:
        assert "judgment_bounds" not in data


def test_compare_output_file_holds_the_bounds_only_when_asked(files, tmp_path):
    """``compare -o FILE.txt`` writes the table to a file: no bounds there unless --bounds."""
    args = ("compare", files["qrels"], files["base"], files["sys"], "-m", "nDCG@3", "--permutations", "50",
            "--bootstrap", "50")  # fmt: skip
    plain, asked = tmp_path / "plain.txt", tmp_path / "asked.txt"
    assert CLI(*args, "-o", plain).exit_code == 0
    assert "judgment bounds" not in plain.read_text()
    assert CLI(*args, "-o", asked, "--bounds").exit_code == 0
    text = asked.read_text()
    assert "judgment bounds (not a confidence interval)" in text
    assert f"sys nDCG@3 {_f(NDCG_ZERO)} {_f(NDCG_ZERO)} {_f(NDCG_TOP)}" in " ".join(text.split())
