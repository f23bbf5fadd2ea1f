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
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats import read_qrels, read_run
from qrelkit.measures.profiles import PROFILES

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
    """In trec_eval 10's own readers (the vendored source archive): a line whose first column begins with
    ``#`` is skipped."""
    import tarfile

    archive = Path(__file__).resolve().parents[1] / "data" / "trec_eval-src" / "trec_eval-10.0.tar.gz"
    with tarfile.open(archive) as tar:
        sources = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
        for name in ("get_qrels.c", "get_trec_results.c"):
            text = tar.extractfile(sources[name]).read().decode()
            assert "current_column == 0 && *ptr == '#'" in text


def _paths(monkeypatch, qrels: Path, run: Path, conv) -> dict[str, object]:
    """Every reading path's results (or error text) for one pair of files, comments skipped."""
    from qrelkit import _native, evaluate
    from qrelkit.errors import QrelkitError
    from qrelkit.evaluation import plan
    from qrelkit.formats.trec import blocks, small

    def outcome(call):
        try:
            return call().to_dict()["results"]
        except QrelkitError as err:
            return str(err)

    def files(**options):
        return evaluate_files(qrels, [run], MEASURES, conv, comments=True, **options)

    got = {"files": outcome(files)}
    got["robust"] = outcome(
        lambda: evaluate(
            read_qrels(qrels, comments=True, reader="robust"),
            [read_run(run, comments=True, reader="robust")],
            MEASURES,
            conv,
        )
    )
    for name, native in (("native", _native.lib), ("arrow", None)):
        with monkeypatch.context() as m:
            m.setattr(_native, "lib", native)
            m.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path
            m.setattr(blocks, "NATIVE_BLOCK_BYTES", 24)  # many blocks, comment lines at their edges
            m.setattr(blocks, "CHUNK_BYTES", 24)
            got[name] = outcome(files)
            m.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # too big for memory: stream or DuckDB
            got[name + "-limited"] = outcome(lambda: files(memory_limit="500MB"))
            m.setattr(plan, "required_depth", lambda *args: None)  # every document: DuckDB
            got[name + "-duckdb"] = outcome(lambda: files(memory_limit="500MB"))
    return got


@pytest.mark.parametrize("gz", [False, True])
def test_every_path_gives_the_numbers_without_the_comments(tmp_path, monkeypatch, gz):
    """The small path, the native scanner, Arrow's parse (which steps aside), the robust reader and DuckDB
    (fed from the scanner; its own reader refuses comment lines), with and without a memory limit."""
    from qrelkit import _native

    f = files(tmp_path, gz=gz)
    conv = PROFILES["trec_eval"].conventions
    expected = evaluate_files(f["qrels"], [f["run"]], MEASURES, conv).to_dict()["results"]
    for name, got in _paths(monkeypatch, f["qrels#"], f["run#"], conv).items():
        if name in ("arrow-limited", "arrow-duckdb"):  # without the scanner, DuckDB's own reader: it takes
            assert isinstance(got, str) and "grep -v '^#'" in got, got  # no comment line, and says so
            continue
        assert got == expected, name
    reader = evaluate_files(f["qrels#"], [f["run#"]], MEASURES, conv, comments=True).runs[0].meta["reader"]
    assert reader == ("robust" if _native.lib is None else "small" if not gz else "fast")
    for reader in ("auto", "robust"):
        qrels = read_qrels(f["qrels#"], comments=True, reader=reader)
        run = read_run(f["run#"], comments=True, reader=reader, keep_top=10)
        assert qrels.frame.height == 5 and run.frame.height == 5
        assert qrels.frame.get_column("line").to_list() == [2, 3, 6, 7, 8]  # lines as in the file
        assert run.frame.get_column("line").to_list() == [2, 3, 6, 7, 8]


@pytest.mark.parametrize(
    "run_text",
    [
        "#\n" + RUN,  # an empty comment
        " # not a comment: a leading space\n" + RUN,  # so a line of 5 fields: the error of every path
        "# é, U+00A0 \u00a0, a tab\t and CRLF\r\n" + RUN,  # characters no id may hold, in a comment
        "# a carriage return\r1 Q0 z 9 9.0 r\n" + RUN,  # ends the comment (the robust reader's lines)
        RUN.replace("\n", "\n#\x01 a control character\n", 1),
        RUN + "# last, without a line end",
        RUN.replace("1 Q0 b", "#1 Q0 b"),  # a row commented out
        "# only comments\n#\n",
    ],
)
def test_tricky_comment_lines_give_the_same_outcome_on_every_path(tmp_path, monkeypatch, run_text):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("# judgments\n" + QRELS)
    run.write_bytes(run_text.encode())
    conv = PROFILES["trec_eval"].conventions
    got = _paths(monkeypatch, qrels, run, conv)
    reference = got.pop("robust")
    for name, outcome in got.items():
        if outcome != reference and name.endswith(("-limited", "-duckdb")):
            # under the limit, a file the scanner refuses (a character no id may hold, even in a comment)
            # reaches DuckDB's own reader, which takes neither comment lines nor tabs, and says so
            assert "a comment line" in outcome or "normalise the whitespace" in outcome, (name, outcome)
            continue
        assert outcome == reference, (name, outcome, reference)


def test_the_trec_eval_drop_in_skips_comment_lines_as_trec_eval_10_does(tmp_path):
    """trec_eval 10 reads both files with comment lines skipped (get_qrels.c, get_trec_results.c), so
    ``qrelkit trec_eval`` does, on its fast path and through the readers (a run not grouped by query)."""
    f = files(tmp_path)
    for run_text in (RUN, "".join(sorted(RUN.splitlines(keepends=True), key=lambda line: line[4:]))):
        plain, commented_run = tmp_path / "plain.run", tmp_path / "commented.run"
        plain.write_text(run_text)
        commented_run.write_text(commented(run_text))
        want = CliRunner().invoke(main, ["trec_eval", "-q", "-m", "all_trec", str(f["qrels"]), str(plain)])
        got = CliRunner().invoke(
            main, ["trec_eval", "-q", "-m", "all_trec", str(f["qrels#"]), str(commented_run)]
        )
        assert want.exit_code == 0 and got.exit_code == 0, got.output
        assert got.stdout == want.stdout


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
