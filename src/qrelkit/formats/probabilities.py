"""Grade probabilities beside qrels: the side file ``<qrels>.probabilities.tsv``.

A model labeller may give, beside each grade, the probability it put on every grade of the scale (the
chat completions endpoint's token log-probabilities of the grade, or a program's own figures:
docs/model-labellers.md). The export writes them beside the model's qrels, and ``qrelkit budget replay
--probabilities FILE`` and the live queue read them. The file::

    # qrelkit grade probabilities 0.9.0; grades 0..3
    query_id	doc_id	p0	p1	p2	p3
    q1	d7	0.05	0.15	0.6	0.2

The first line names the tool's version and the scale ``0..G``; the second the columns (tab-separated, one
``p<g>`` a grade); then one line a pair: the query id, the document id and ``G + 1`` probabilities, each a
finite number in [0, 1], summing to 1 within :data:`SUM_TOLERANCE`. A pair appears once. Grades below 0
cannot be written: a scale with negative grades has no side file.

:func:`read_probabilities` reads it: streamed line by line within the ``probabilities`` kind's bounds
(:mod:`.inputs`), every problem one line naming the file, the line, the value and the fix.
:func:`probabilities_text` and :func:`write_probabilities` write it (numbers in Python's shortest repr, which
reads back to the same double).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import InputFormatError, ValidationError
from ..naming import check_id

__all__ = [
    "MAX_GRADE",
    "MAX_PAIRS",
    "SUFFIX",
    "SUM_TOLERANCE",
    "probabilities_path",
    "probabilities_text",
    "read_probabilities",
    "write_probabilities",
]

#: What the side file's name adds to the qrels file's.
SUFFIX = ".probabilities.tsv"
#: How far a line's probabilities may sum from 1.
SUM_TOLERANCE = 1e-6
#: The highest grade a side file may hold (the bound of a rubric's scale, ``qrelkit.rubric.MAX_ABS_GRADE``).
MAX_GRADE = 100
#: The most pairs a side file may hold (held in memory whole, as qrels are).
MAX_PAIRS = 50_000_000

_FIRST = re.compile(r"# qrelkit grade probabilities (\S+); grades 0\.\.(\d+)")


def probabilities_path(qrels: str | Path) -> Path:
    """The side file of the qrels at ``qrels``: ``<qrels>.probabilities.tsv``."""
    path = Path(qrels)
    return path.with_name(path.name + SUFFIX)


def _check_max_grade(max_grade: int) -> int:
    if isinstance(max_grade, bool) or not isinstance(max_grade, int) or not 0 <= max_grade <= MAX_GRADE:
        raise ValidationError(
            "the highest grade of grade probabilities is a whole number from 0 to 100",
            got=max_grade,
            fix="give the scale's highest grade (a side file holds grades 0..G)",
        )
    return max_grade


def probabilities_text(probabilities: Mapping[tuple[str, str], Sequence[float]], max_grade: int) -> str:
    """The side file's text: ``probabilities[(query_id, doc_id)]`` holds ``max_grade + 1`` probabilities
    (grade 0 first), summing to 1 within :data:`SUM_TOLERANCE`; pairs sorted by query id, then document
    id. A value that breaks the format is a :class:`ValidationError` naming the pair."""
    from .._version import __version__

    _check_max_grade(max_grade)
    width = max_grade + 1
    lines = [
        f"# qrelkit grade probabilities {__version__}; grades 0..{max_grade}",
        "\t".join(["query_id", "doc_id", *(f"p{g}" for g in range(width))]),
    ]
    for (query_id, doc_id), values in sorted(probabilities.items()):
        check_id(query_id, "query_id")
        check_id(doc_id, "doc_id")
        row = [float(v) for v in values]
        problem = _row_problem(row, width)
        if problem is not None:
            raise ValidationError(f"the grade probabilities of {query_id} {doc_id} {problem}", got=row,
                                  fix="give one probability per grade 0..G, each in [0, 1], summing to 1")  # fmt: skip
        lines.append("\t".join([query_id, doc_id, *(repr(v) for v in row)]))
    return "\n".join(lines) + "\n"


def write_probabilities(
    path: str | Path, probabilities: Mapping[tuple[str, str], Sequence[float]], max_grade: int
) -> Path:
    """Write :func:`probabilities_text` to ``path`` (whole, then renamed: :mod:`.outputs`)."""
    from .outputs import write_output

    write_output(Path(path), probabilities_text(probabilities, max_grade))
    return Path(path)


def _row_problem(row: Sequence[float], width: int) -> str | None:
    if len(row) != width:
        return f"hold {len(row)} values for {width} grades"
    for grade, value in enumerate(row):
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            return f"give grade {grade} the probability {value!r}, outside [0, 1]"
    total = math.fsum(row)
    if abs(total - 1.0) > SUM_TOLERANCE:
        return f"sum to {total!r}, not 1 (within {SUM_TOLERANCE:g})"
    return None


def read_probabilities(
    path: str | Path, max_grade: int | None = None
) -> dict[tuple[str, str], tuple[float, ...]]:
    """``{(query_id, doc_id): (p0, ..., pG)}`` of a side file (module docstring). ``max_grade``: the scale's
    highest grade the caller works on; a file of another scale is refused (``None``: the file's own)."""
    from .inputs import read_lines

    source = str(path)
    if max_grade is not None:
        _check_max_grade(max_grade)
    out: dict[tuple[str, str], tuple[float, ...]] = {}
    width = 0
    fix_header = (
        "write the side file with qrelkit (`qrelkit judge export`), or start it with its two header lines"
    )
    for number, raw in read_lines(Path(path), "probabilities", what="grade probabilities file"):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputFormatError("line is not UTF-8 text", source=source, line=number,
                                   got=raw[:60].decode("utf-8", "backslashreplace"),
                                   fix="save the file as UTF-8") from None  # fmt: skip
        if number == 1:
            found = _FIRST.fullmatch(line.strip())
            if found is None:
                raise InputFormatError(
                    "is not a grade probabilities file: the first line is not "
                    "'# qrelkit grade probabilities <version>; grades 0..G'",
                    source=source, line=1, got=line[:120], fix=fix_header,
                )  # fmt: skip
            grades = int(found.group(2))
            if grades > MAX_GRADE:
                raise InputFormatError(f"grades 0..{grades} pass the bound of a scale (0..{MAX_GRADE})",
                                       source=source, line=1, got=line[:120],
                                       fix="number the grades 0, 1, 2, ... as the rubric does")  # fmt: skip
            if max_grade is not None and grades != max_grade:
                raise InputFormatError(
                    f"holds grades 0..{grades}, but the scale here is 0..{max_grade}",
                    source=source, line=1, got=line[:120],
                    fix="pass the probabilities the model gave on this scale (the side file of the same export)",
                )  # fmt: skip
            width = grades + 1
            continue
        fields = line.split("\t")
        if number == 2:
            expected = ["query_id", "doc_id", *(f"p{g}" for g in range(width))]
            if [f.strip() for f in fields] != expected:
                raise InputFormatError("the column header is not the one of this scale", source=source,
                                       line=2, got=line[:200], expected="\t".join(expected),
                                       fix=fix_header)  # fmt: skip
            continue
        if not line.strip():
            raise InputFormatError("blank line", source=source, line=number,
                                   fix="write one pair a line, without blank lines")  # fmt: skip
        if len(fields) != width + 2:
            raise InputFormatError(
                f"expected {width + 2} tab-separated fields (query_id, doc_id, p0..p{width - 1}), got {len(fields)}",
                source=source, line=number, got=line[:200], fix="write one probability per grade, tab-separated",
            )  # fmt: skip
        query_id = check_id(fields[0], "query_id", source, number)
        doc_id = check_id(fields[1], "doc_id", source, number)
        row = []
        for grade, text in enumerate(fields[2:]):
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise InputFormatError(f"p{grade} is not a probability", source=source, line=number,
                                       got=text[:60], expected="a number from 0 to 1",
                                       fix="write each grade's probability as a decimal number")  # fmt: skip
            row.append(value)
        total = math.fsum(row)
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise InputFormatError(f"the probabilities sum to {total!r}, not 1 (within {SUM_TOLERANCE:g})",
                                   source=source, line=number, got=line[:200],
                                   fix="give every grade's probability, normalised to sum to 1")  # fmt: skip
        key = (query_id, doc_id)
        if key in out:
            raise InputFormatError(f"the pair {query_id} {doc_id} is given twice", source=source, line=number,
                                   fix="keep one line per pair")  # fmt: skip
        if len(out) >= MAX_PAIRS:
            raise InputFormatError(f"more than {MAX_PAIRS} pairs", source=source, line=number,
                                   fix="split the judgments; a side file holds one line per judged pair")  # fmt: skip
        out[key] = tuple(row)
    if width == 0:
        raise InputFormatError("is empty: no header line", source=source, fix=fix_header)
    return out
