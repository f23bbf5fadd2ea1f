"""Comment lines (``--comments``): trec_eval 10 skips lines beginning with ``#`` in qrels and runs.

trec_eval's own source says so (get_qrels.c, get_trec_results.c: ``#`` in the first column skips the line).
With ``comments`` every reading path gives the numbers of the same files without their comment lines;
without it, a comment line is an ordinary line (an error when its field count is wrong).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from click.testing import CliRunner

from qrelkit.cli import main
from qrelkit.errors import InputFormatError
from qrelkit.evaluation import evaluate_files
from qrelkit.formats import read_qrels, read_run
from qrelkit.profiles import PROFILES

QRELS = "1 0 a 2\n1 0 b 0\n1 0 c 1\n2 0 d 1\n2 0 e 3\n"
RUN = "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 c 3 2.0 r\n2 Q0 e 1 1.5 r\n2 Q0 x 2 1.0 r\n"
MEASURES = ["nDCG@10", "P@2", "AP", "RR", "NumRet"]


def commented(text: str) -> str:
    """The same rows with comment lines first, between queries, with six fields, and last."""
    lines = text.splitlines(keepends=True)
    return "# written by a script\n" + "".join(lines[:2]) + "# a b c d e\n#\n" + "".join(lines[2:]) + "# end"


def files(tmp_path: Path, *, gz: bool = False) -> dict[str, Path]:
    out = {}
    for name, text in [
        ("qrels", QRELS),
        ("run", RUN),
        ("qrels#", commented(QRELS)),
        ("run#", commented(RUN)),
    ]:
        path = tmp_path / (name.replace("#", "_c") + (".txt.gz" if gz else ".txt"))
        path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
        out[name] = path
    return out


def test_trec_eval_10_skips_comment_lines():
    source = Path("/work/trec_eval-src")
    if not source.exists():
        pytest.skip("trec_eval's source is not present")
    for name in ("get_qrels.c", "get_trec_results.c"):
        assert "current_column == 0 && *ptr == '#'" in (source / name).read_text()


@pytest.mark.parametrize("gz", [False, True])
def test_every_path_gives_the_numbers_without_the_comments(tmp_path, gz):
    f = files(tmp_path, gz=gz)
    conv = PROFILES["trec_eval"].conventions
    expected = evaluate_files(f["qrels"], [f["run"]], MEASURES, conv).to_dict()["results"]
    for kwargs in ({}, {"memory_limit": "256MB"}):
        got = evaluate_files(f["qrels#"], [f["run#"]], MEASURES, conv, comments=True, **kwargs)
        assert got.to_dict()["results"]["means"] == {"r": expected["means"]["r"]}
        assert got.to_dict()["runs"][0]["reader"] == "robust"  # routed to the reader that skips them
    for reader in ("auto", "robust"):
        qrels = read_qrels(f["qrels#"], comments=True, reader=reader)
        run = read_run(f["run#"], comments=True, reader=reader, keep_top=10)
        assert qrels.frame.height == 5 and run.frame.height == 5
        assert qrels.frame.get_column("line").to_list() == [2, 3, 6, 7, 8]  # lines as in the file


def test_without_comments_a_comment_line_is_an_ordinary_line(tmp_path):
    f = files(tmp_path)
    with pytest.raises(InputFormatError, match=r":1: line has 5 fields"):
        read_qrels(f["qrels#"])
    with pytest.raises(InputFormatError):
        evaluate_files(f["qrels#"], [f["run#"]], MEASURES)


def test_errors_after_comment_lines_name_the_file_line(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("# header\n1 Q0 a 1 3.0 r\n1 Q0 b 2 x r\n")
    with pytest.raises(InputFormatError) as info:
        read_run(path, comments=True)
    assert info.value.line == 3


def test_cli_trec_eval_profile_takes_comments_others_do_not(tmp_path):
    f = files(tmp_path)
    args = ["eval", "-m", "P@2", "--format", "json", str(f["qrels#"]), str(f["run#"])]
    assert PROFILES["trec_eval"].comments and not PROFILES["pytrec_eval"].comments
    ok = CliRunner().invoke(main, [*args[:1], "--profile", "trec_eval", *args[1:]])
    assert ok.exit_code == 0, ok.output
    assert CliRunner().invoke(main, [*args[:1], "--profile", "pytrec_eval", *args[1:]]).exit_code == 1
    assert (
        CliRunner().invoke(main, [*args[:1], "--profile", "trec_eval", "--no-comments", *args[1:]]).exit_code
        == 1
    )
    assert CliRunner().invoke(main, [*args[:1], "--comments", *args[1:]]).exit_code == 0
