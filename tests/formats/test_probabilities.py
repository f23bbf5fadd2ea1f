"""The grade probabilities side file ``<qrels>.probabilities.tsv``: written and read back to the same doubles,
and every bad input refused in one line naming the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from qrelkit.errors import InputFormatError, ValidationError
from qrelkit.formats.probabilities import (
    probabilities_path,
    probabilities_text,
    read_probabilities,
    write_probabilities,
)

HEAD = "# qrelkit grade probabilities 0.0.0; grades 0..2\nquery_id\tdoc_id\tp0\tp1\tp2\n"


def test_written_and_read_back_to_the_same_doubles(tmp_path: Path) -> None:
    values = {
        ("q2", "d1"): (0.1, 0.2, 0.7),
        ("q1", "d9"): (1 / 3, 1 / 3, 1 / 3),
        ("q1", "d10"): (0.0, 0.0, 1.0),
    }
    path = write_probabilities(tmp_path / "m.qrels.probabilities.tsv", values, 2)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# qrelkit grade probabilities ") and lines[0].endswith("; grades 0..2")
    assert lines[1:] == [
        "query_id\tdoc_id\tp0\tp1\tp2",
        "q1\td10\t0.0\t0.0\t1.0",  # sorted by query, then document id as text
        "q1\td9\t0.3333333333333333\t0.3333333333333333\t0.3333333333333333",
        "q2\td1\t0.1\t0.2\t0.7",
    ]
    assert read_probabilities(path, 2) == values
    assert read_probabilities(path) == values  # the scale from the file


def test_the_side_file_is_named_after_the_qrels() -> None:
    assert probabilities_path("out/final.model.qrels") == Path("out/final.model.qrels.probabilities.tsv")


def test_the_writer_refuses_what_the_reader_would() -> None:
    with pytest.raises(ValidationError, match=r"q1 d1 sum to 0\.9"):
        probabilities_text({("q1", "d1"): (0.5, 0.4, 0.0)}, 2)
    with pytest.raises(ValidationError, match="hold 2 values for 3 grades"):
        probabilities_text({("q1", "d1"): (0.5, 0.5)}, 2)
    with pytest.raises(ValidationError, match="a whole number from 0 to 100"):
        probabilities_text({}, -1)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("q1\td1\t0.2\t0.3\t0.5\n", 1, "is not a grade probabilities file"),
        (
            "# qrelkit grade probabilities 0.0.0; grades 0..2\nquery_id\tdoc_id\tp0\tp1\n",
            2,
            "the column header is not the one of this scale",
        ),
        (HEAD + "q1\td1\t0.2\t0.8\n", 3, "expected 5 tab-separated fields"),
        (HEAD + "q1\td1\t0.2\tlots\t0.8\n", 3, "p1 is not a probability"),
        (HEAD + "q1\td1\t0.2\t-0.1\t0.9\n", 3, "p1 is not a probability"),
        (HEAD + "q1\td1\tnan\t0.5\t0.5\n", 3, "p0 is not a probability"),
        (HEAD + "q1\td1\t0.2\t0.3\t0.4\n", 3, "the probabilities sum to 0.9"),
        (HEAD + "q1\td1\t0.2\t0.3\t0.5\nq1\td1\t0.2\t0.3\t0.5\n", 4, "the pair q1 d1 is given twice"),
        (HEAD + "q1\td1\t0.2\t0.3\t0.5\n\n", 4, "blank line"),
        (HEAD + "q1\t\t0.2\t0.3\t0.5\n", 3, "doc_id"),
        ("# qrelkit grade probabilities 0.0.0; grades 0..101\n", 1, "pass the bound of a scale"),
    ],
)
def test_each_bad_input_is_one_line_naming_file_and_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(InputFormatError) as caught:
        read_probabilities(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: ") and problem in message
    assert "\n" not in message and "Fix:" in message


def test_a_file_of_another_scale_or_no_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.tsv"
    path.write_text(HEAD + "q1\td1\t0.2\t0.3\t0.5\n")
    with pytest.raises(
        InputFormatError, match=r"p\.tsv:1: holds grades 0\.\.2, but the scale here is 0\.\.3"
    ):
        read_probabilities(path, 3)
    path.write_text("")
    with pytest.raises(InputFormatError, match="is empty: no header line"):
        read_probabilities(path)
    path.write_bytes(b"\x1f\x8b\x08")
    with pytest.raises(InputFormatError, match="gzip"):
        read_probabilities(path)
    with pytest.raises(InputFormatError, match=r"not found|does not exist|no such"):
        read_probabilities(tmp_path / "missing.tsv")
