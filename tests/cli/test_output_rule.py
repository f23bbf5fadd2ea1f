"""One rule for what every command prints when stdout is not a terminal (qrelkit.cli.output): TSV after a
two-line header, the full provenance in --format json or --provenance FILE, the same formats for eval and
compare; progress as one line per tenth off a terminal."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import click

from qrelkit import __version__
from qrelkit.cli.output import TenthLines

from ..conftest import CLI, EXAMPLE

QRELS = EXAMPLE / "qrels.txt"
BM25 = EXAMPLE / "runs" / "bm25.run"
DENSE = EXAMPLE / "runs" / "dense.run"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def _header() -> list[str]:
    return [
        f"# qrelkit {__version__} · profile none (default conventions) · qrels={_sha(QRELS)} · runs "
        f"bm25={_sha(BM25)} dense={_sha(DENSE)}",
        "# full provenance (conventions, measures, fingerprints, reader counts): --format json or --provenance FILE",
    ]


def test_piped_eval_is_tsv_after_a_two_line_header(tmp_path: Path) -> None:
    piped = CLI("eval", QRELS, BM25, DENSE, "-m", "nDCG@10", "--provenance", tmp_path / "prov.json")
    assert piped.exit_code == 0, piped.output
    means = json.loads(CLI("eval", QRELS, BM25, DENSE, "-m", "nDCG@10", "-f", "json").stdout)["results"][
        "means"
    ]
    assert piped.stdout.splitlines() == [
        *_header(),
        "run\tquery_id\tmeasure\tvalue",
        f"bm25\tall\tnDCG@10\t{means['bm25']['nDCG@10']['mean']!r}",
        f"dense\tall\tnDCG@10\t{means['dense']['nDCG@10']['mean']!r}",
    ]
    provenance = json.loads((tmp_path / "prov.json").read_text())
    assert provenance["conventions"]["gain"] == "exponential"
    assert [run["name"] for run in provenance["runs"]] == ["bm25", "dense"]
    assert provenance["qrels"]["fingerprint"]["sha256"] == hashlib.sha256(QRELS.read_bytes()).hexdigest()


def test_a_file_written_with_o_keeps_the_whole_provenance(tmp_path: Path) -> None:
    assert CLI("eval", QRELS, BM25, "-o", tmp_path / "r.tsv").exit_code == 0
    header = [line for line in (tmp_path / "r.tsv").read_text().splitlines() if line.startswith("#")]
    assert header[1].startswith("# conventions: {") and any(line.startswith("# run: {") for line in header)


def test_piped_compare_is_tsv_of_the_pairs(tmp_path: Path) -> None:
    piped = CLI("compare", QRELS, BM25, DENSE, "-m", "nDCG@10", "--provenance", tmp_path / "prov.json")
    assert piped.exit_code == 0, piped.output
    lines = piped.stdout.splitlines()
    assert lines[:2] == _header()
    assert lines[2].split("\t") == [
        "baseline", "treatment", "measure", "queries", "mean_baseline", "mean_treatment", "difference", "wins",
        "ties", "losses", "t_low", "t_high", "bootstrap_low", "bootstrap_high", "effect_size", "test", "p_value",
        "p_adjusted", "significant",
    ]  # fmt: skip
    (row,) = [line.split("\t") for line in lines[3:]]
    # bm25 and dense over the example's 30 queries (dense lacks q27, scored 0)
    assert row[:4] == ["bm25", "dense", "nDCG@10", "30"] and row[15] == "randomization"
    assert int(row[7]) + int(row[8]) + int(row[9]) == 30
    provenance = json.loads((tmp_path / "prov.json").read_text())
    assert provenance["comparison"]["options"]["test"] == "randomization"


def test_compare_writes_tsv_and_csv_files_by_suffix(tmp_path: Path) -> None:
    assert CLI("compare", QRELS, BM25, DENSE, "-m", "nDCG@10", "-o", tmp_path / "c.csv").exit_code == 0
    text = (tmp_path / "c.csv").read_text().splitlines()
    assert text[0].startswith("# qrelkit ") and any(line.startswith("# comparison: {") for line in text)
    assert [line for line in text if not line.startswith("#")][1].startswith("bm25,dense,nDCG@10,30,")


def test_eval_and_compare_offer_the_same_formats() -> None:
    from qrelkit.cli.compare import command as compare
    from qrelkit.cli.evaluate import eval_command

    def formats(command: click.Command) -> set[str]:
        (option,) = [p for p in command.params if p.name == "out_format"]
        assert isinstance(option.type, click.Choice)
        return set(option.type.choices)

    shared = {"table", "tsv", "csv", "json", "markdown", "latex", "html"}
    assert formats(compare) == shared and formats(eval_command) == shared | {"trec"}


def test_eval_writes_latex() -> None:
    out = CLI("eval", QRELS, BM25, "-m", "nDCG@10", "-f", "latex")
    assert out.exit_code == 0
    body = [line for line in out.stdout.splitlines() if not line.startswith("%")]
    assert body[:4] == ["\\begin{tabular}{lr}", "\\toprule", "run & nDCG@10 \\\\", "\\midrule"]
    assert body[-2:] == ["\\bottomrule", "\\end{tabular}"]


def test_progress_off_a_terminal_is_one_line_per_tenth() -> None:
    stream = io.StringIO()
    bar = TenthLines("reading", 10, stream=stream)
    for done in range(11):
        bar.update(done)
    assert stream.getvalue().splitlines() == [f"qrelkit: reading: {10 * k}% ({k}/10)" for k in range(1, 11)]


def test_a_jump_over_several_tenths_writes_the_last_once() -> None:
    stream = io.StringIO()
    bar = TenthLines("trials", 2000, stream=stream, unit="trials")
    for done in (150, 199, 650, 650, 1999, 2000):
        bar.update(done)
    assert stream.getvalue().splitlines() == [
        "qrelkit: trials: 30% (650/2,000 trials)",
        "qrelkit: trials: 90% (1,999/2,000 trials)",
        "qrelkit: trials: 100% (2,000/2,000 trials)",
    ]


def test_leverage_and_conventions_follow_the_rule(tmp_path: Path) -> None:
    alice = EXAMPLE / "judgments" / "alice.qrels"
    piped = CLI("leverage", alice, BM25, "--top", "2")
    assert piped.exit_code == 0, piped.output
    lines = piped.stdout.splitlines()
    assert lines[0] == (
        f"# qrelkit {__version__} · profile none (default conventions) · qrels={_sha(alice)} · runs bm25={_sha(BM25)}"
    )
    assert lines[1].startswith("# full provenance") and lines[2].split("\t")[:2] == ["query_id", "doc_id"]
    # -o chooses the format by its suffix, as eval does
    assert CLI("leverage", alice, BM25, "--top", "2", "-o", tmp_path / "lev.json").exit_code == 0
    written = json.loads((tmp_path / "lev.json").read_text())
    assert written["tool"]["version"] == __version__ and len(written["rows"]) == 2
    assert written["runs"][0]["fingerprint"]["sha256"] == hashlib.sha256(BM25.read_bytes()).hexdigest()
    assert CLI("leverage", alice, BM25, "--top", "2", "-o", tmp_path / "lev.tsv").exit_code == 0
    assert (tmp_path / "lev.tsv").read_text().splitlines()[2].startswith("query_id\tdoc_id")
    swept = CLI("conventions", QRELS, BM25).stdout.splitlines()
    assert swept[0] == (
        f"# qrelkit {__version__} · profile none (default conventions) · qrels={_sha(QRELS)} · runs bm25={_sha(BM25)}"
    )
    assert swept[1].startswith("# full provenance") and swept[2].split("\t")[:3] == [
        "kind",
        "conventions",
        "mean",
    ]
    diff = CLI("conventions", QRELS, BM25, "--profile", "trec_eval", "--diff", "trec_eval", "sklearn").stdout
    assert diff.splitlines()[0].startswith(f"# qrelkit {__version__} · profile trec_eval · qrels=")
    assert diff.splitlines()[2].startswith("query\ttrec_eval\tsklearn\tdiff")


def test_conventions_list_piped_starts_with_the_version() -> None:
    listed = CLI("conventions", "--list").stdout.splitlines()
    assert listed[0] == f"# qrelkit {__version__} · the profiles' conventions"
    assert listed[1].startswith("# ") and listed[2].startswith("profile\tgain\t")
    assert listed[3].startswith("trec_eval\t")


def test_conventions_hide_unmoved_lists_what_it_hides_in_tsv_and_json() -> None:
    every = CLI("conventions", QRELS, BM25, "-f", "json").stdout
    unmoved = [r["label"] for r in json.loads(every)["rows"] if r["kind"] != "default" and not r.get("refused")
               and r["queries_moved"] == 0]  # fmt: skip
    assert unmoved  # discount=ln, for one: nDCG's ratio does not move with the log's base
    hidden = json.loads(CLI("conventions", QRELS, BM25, "--hide-unmoved", "-f", "json").stdout)
    assert hidden["hidden_unmoved"] == unmoved and not {r["label"] for r in hidden["rows"]} & set(unmoved)
    tsv = CLI("conventions", QRELS, BM25, "--hide-unmoved", "-f", "tsv").stdout.splitlines()
    assert tsv[-1] == f"# {len(unmoved)} profiles and axes that move no query left out: {', '.join(unmoved)}"
    assert len([line for line in tsv if not line.startswith("#")]) == 1 + len(
        json.loads(every)["rows"]
    ) - len(unmoved)


def test_piped_estimates_take_the_same_header(tmp_path: Path) -> None:
    model, human = EXAMPLE / "estimate" / "model.qrels", EXAMPLE / "estimate" / "human.qrels"
    piped = CLI("eval", model, BM25, "--human", human, "-m", "nDCG@10", "--provenance", tmp_path / "p.json")
    assert piped.exit_code == 0, piped.output
    lines = piped.stdout.splitlines()
    assert lines[0] == (
        f"# qrelkit {__version__} · profile none (default conventions) · qrels={_sha(model)} · runs bm25={_sha(BM25)}"
    )
    assert lines[1] == _header()[1] and lines[2].startswith("run\tmeasure\testimator\t")
    provenance = json.loads((tmp_path / "p.json").read_text())
    assert provenance["estimation"]["estimator"] == "ppi++"
    assert (
        provenance["estimation"]["human_qrels"]["fingerprint"]["sha256"]
        == hashlib.sha256(human.read_bytes()).hexdigest()
    )


def test_a_warning_is_said_once_in_a_log_of_stdout_and_stderr(tmp_path: Path) -> None:
    """Piped into one log (``2>&1``), the TSV's ``# warning:`` line is the only one; with stderr apart, the
    warning is on stderr too (a person reading the terminal sees it). The warning: under the torchmetrics
    profile, a tied block of a relevant and a non-relevant document straddling rank 2 (tests/evaluation/
    test_tie_warnings.py has its words and arithmetic)."""
    import subprocess
    import sys

    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n1 0 c 1\n")
    run.write_text("1 Q0 a 1 3.0 sys\n1 Q0 b 2 2.0 sys\n1 Q0 c 3 2.0 sys\n")
    command = [
        sys.executable,
        "-m",
        "qrelkit",
        "eval",
        str(qrels),
        str(run),
        "-m",
        "P@2",
        "--profile",
        "torchmetrics",
    ]
    for args in ([], ["-f", "json"]):
        log = subprocess.run(
            [*command, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False
        )
        assert log.returncode == 0, log.stdout
        said = [line for line in log.stdout.splitlines() if "straddles rank 2" in line]
        assert len(said) == 1, log.stdout
    apart = subprocess.run(command, capture_output=True, text=True, check=False)
    assert next(line for line in apart.stdout.splitlines() if "straddles rank 2" in line).startswith(
        "# warning: "
    )
    assert next(line for line in apart.stderr.splitlines() if "straddles rank 2" in line).startswith(
        "warning: "
    )


def test_the_profile_note_comes_after_the_result() -> None:
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "qrelkit",
        "eval",
        str(QRELS),
        str(BM25),
        "-m",
        "nDCG@10",
        "--profile",
        "trec_eval",
    ]
    log = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert log.returncode == 0, log.stdout
    lines = log.stdout.splitlines()
    assert lines[-1].startswith(
        "profile: trec_eval (trec_eval 10 (usnistgov/trec_eval, without -c)); on_duplicate="
    )
    assert lines[0].startswith(f"# qrelkit {__version__} ") and lines[3].startswith(
        "bm25\t"
    )  # the result first
