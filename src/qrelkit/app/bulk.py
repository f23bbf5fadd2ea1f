"""Decisions in bulk: the adjudication queue as a file to fill, and a filled file applied in one transaction.

The file is tab-separated text, UTF-8, one decision a line::

    query_id<TAB>doc_id<TAB>grade[<TAB>note[<TAB>anything else]]

- a first line whose third field is ``grade`` is a header and is skipped;
- a line whose first character is ``#`` is a comment, and a blank line is skipped;
- a line whose grade is empty is left undecided (the queue file starts that way: fill in the grades you
  decide, leave the others empty);
- columns after the note are context and are ignored (:func:`queue_tsv` writes the labellers' grades, who
  was unsure, the leverage and the spread there), so the queue file goes back in as it is, filled.

Each line goes through the rules of the one-pair ``judge decide``: the grade on the rubric's scale
(:meth:`~qrelkit.rubric.Rubric.check_grade`), a note of at most
:data:`~qrelkit.app.grades.MAX_NOTE` characters, the pair in the pool, the override rule
(:func:`qrelkit.judgments.adjudication.check_decision`), a calibration pair only once its round's gate is
decided; a pair given twice in the file is refused on its second line. Every applied line is one
adjudication event with its own number, undone as any other (:func:`.decisions.undo_adjudication`).

All or nothing by default: if a line is refused, nothing is applied and every refused line is reported
(file, line, value, fix). With ``partial``, the lines that pass are applied and the refused ones reported.
Either way the decisions that are applied are applied in one transaction: no reader ever sees half a file.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qrelkit.errors import InputFormatError, QrelkitError, ValidationError
from qrelkit.formats.inputs import read_lines
from qrelkit.rubric import Rubric

from .store import Store

__all__ = ["MAX_REFUSED", "Applied", "Decision", "Refusals", "apply_decisions", "queue_tsv", "read_decisions"]

#: The columns of the file, in order; those after ``note`` are context, ignored on reading.
COLUMNS = ("query_id", "doc_id", "grade", "note")
CONTEXT = ("calibration", "grades", "unsure", "distance", "leverage", "labeller_notes")


#: The refused lines reported one by one; past this, the rest are only counted (a file of garbage stays
#: bounded in memory and on the screen).
MAX_REFUSED = 100

#: A grade as the file writes it: ASCII digits, with an optional sign (not ``1_0``, not other scripts' digits).
GRADE = re.compile(r"[+-]?[0-9]+")
#: A control character other than the tab between fields (a NUL byte is refused with the whole file).
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _line_of(error: QrelkitError) -> int:
    return error.line or 0


class Refusals(list[QrelkitError]):
    """The refused lines: the :data:`MAX_REFUSED` errors of the lowest line numbers, in file order, and
    ``more``, the count of the others. Lines are refused in several passes (reading, the grade and note,
    the pool and the gate), so each is placed by its line as it comes: the first lines listed are the
    first lines of the file that were refused, whichever pass refused them."""

    more = 0

    def add(self, error: QrelkitError) -> None:
        bisect.insort(self, error, key=_line_of)  # after the ones of the same line: their order kept
        if len(self) > MAX_REFUSED:
            self.pop()  # the highest line number: counted, not listed
            self.more += 1

    @property
    def total(self) -> int:
        return len(self) + self.more


@dataclass(frozen=True)
class Decision:
    """One decided line of the file."""

    line: int
    query_id: str
    doc_id: str
    grade: int
    note: str | None


@dataclass
class Applied:
    """What a decisions file did: each applied line with its decision number, each refused line with its
    error (file, line, value, fix), the lines left undecided, and whether anything was written."""

    source: str
    applied: list[tuple[Decision, int]] = field(default_factory=list)
    refused: Refusals = field(default_factory=Refusals)
    undecided: int = 0
    written: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "written": self.written,
            "applied": [
                {
                    "line": d.line,
                    "query_id": d.query_id,
                    "doc_id": d.doc_id,
                    "grade": d.grade,
                    "decision": event,
                }
                for d, event in self.applied
            ],
            "refused": [{"line": e.line, "message": str(e)} for e in self.refused],
            "refused_not_listed": self.refused.more,
            "undecided": self.undecided,
        }


def _clean(text: str) -> str:
    """A context value on one line of one column: tabs, newlines and control characters as spaces."""
    return "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in str(text)).strip()


def queue_tsv(queue: dict[str, Any], items: list[dict[str, Any]], *, db: str) -> str:
    """The adjudication queue as the file to fill: a comment saying how, the header, and one line a pair
    with the grade and the note empty and the context after them (read back by :func:`read_decisions`)."""
    lines = [
        f"# the adjudication queue of {_clean(db)} ({len(items)} pairs, ordered by {_clean(queue['method'])}):",
        "# fill in grade (and note) for the pairs you decide, leave the others empty, then",
        f"# qrelkit judge decide {_clean(db)} --decisions THIS_FILE (columns after note are ignored)",
        "\t".join(COLUMNS + CONTEXT),
    ]
    for item in items:
        grades = ",".join(f"{n}:{'' if g is None else g}" for n, g in sorted(item["grades"].items()))
        notes = "; ".join(f"{n}: {_clean(t)}" for n, t in sorted(item.get("notes", {}).items()))
        leverage = item.get("leverage")
        wait = "waits for the gate" if item.get("waits_for_gate") else ("yes" if item["calibration"] else "")
        row = [item["query_id"], item["doc_id"], "", "", wait, grades, ",".join(item["unsure"]),
               str(item["distance"]), "" if leverage is None else f"{leverage:.6f}", notes]  # fmt: skip
        lines.append("\t".join(_clean(v) for v in row))
    return "\n".join(lines) + "\n"


def read_decisions(path: str | Path, *, max_pairs: int | None = None) -> tuple[list[Decision], Refusals, int]:
    """The decided lines of a decisions file, the lines refused on their own (too few fields, a grade
    that is not a whole number, a pair given twice), and the count of lines left undecided.

    Bounded: the file by :data:`qrelkit.formats.inputs.LIMITS` (``project_decisions``); the decisions by
    ``max_pairs`` (the pool's pairs: each pair at most once), past which the file is refused whole; the
    refused lines kept by :data:`MAX_REFUSED` (the others are counted: :class:`Refusals`). The file is read
    line by line (:func:`qrelkit.formats.inputs.read_lines`): a line ends at ``\\n``, ``\\r\\n`` or a lone
    ``\\r``, so no two decisions are ever joined into one; a line past 1 MiB, a NUL byte, or text that is not
    UTF-8 is refused whole, naming the line; a line with another control character than the tab is refused on its
    own."""
    source = str(path)
    decisions: list[Decision] = []
    refused = Refusals()
    undecided = 0
    seen: dict[tuple[str, str], int] = {}
    for number, raw in read_lines(path, "project_decisions", what="decisions file"):  # streamed
        try:
            text = raw.decode("utf-8")
            if number == 1:
                text = text.removeprefix("\ufeff")  # a byte-order mark, as spreadsheets save UTF-8
        except UnicodeDecodeError as exc:
            raise InputFormatError(
                f"is not UTF-8 text (byte {exc.start} of the line)", source=source, line=number,
                fix="save the file as UTF-8",
            ) from None  # fmt: skip
        if not text.strip() or text.startswith("#"):
            continue
        control = CONTROL.search(text)
        if control is not None:
            refused.add(ValidationError(
                f"holds the control character U+{ord(control.group()):04X} at character {control.start() + 1}",
                source=source, line=number, got=text[:200],
                fix="remove it: fields are separated by tabs, and a decision and its note fit on one line",
            ))  # fmt: skip
            continue
        fields = text.split("\t")
        if len(fields) < 3:
            refused.add(ValidationError(
                f"has {len(fields)} tab-separated field(s)", source=source, line=number, got=text,
                expected="query_id<TAB>doc_id<TAB>grade[<TAB>note]", fix="separate the fields with tabs",
            ))  # fmt: skip
            continue
        query_id, doc_id, grade_text = (f.strip() for f in fields[:3])
        if not decisions and not refused and not undecided and grade_text.lower() == "grade":
            continue  # the header
        if not grade_text:
            undecided += 1
            continue
        grade = _grade(grade_text)
        if grade is None:
            refused.add(ValidationError(
                "the grade is not a whole number", source=source, line=number, got=grade_text,
                fix="write one of the rubric's grades in ASCII digits, or leave it empty to decide the pair later",
            ))  # fmt: skip
            continue
        pair = (query_id, doc_id)
        if pair in seen:
            refused.add(ValidationError(
                f"pair ({query_id}, {doc_id}) is decided on line {seen[pair]} already", source=source,
                line=number, got=grade_text, fix="keep one line per pair",
            ))  # fmt: skip
            continue
        seen[pair] = number
        note = fields[3].strip() if len(fields) > 3 and fields[3].strip() else None
        decisions.append(Decision(number, query_id, doc_id, grade, note))
        if max_pairs is not None and len(decisions) > max_pairs:
            raise InputFormatError(
                f"has more decisions than the project has pairs ({max_pairs:,})", source=source, line=number,
                fix="pass the decisions file of this project (one line per pair)",
            )  # fmt: skip
    return decisions, refused, undecided


def _grade(text: str) -> int | None:
    """The grade written ``text``: ASCII digits with an optional sign, else ``None`` (``int()`` alone would
    take ``1_0`` as 10 and digits of other scripts)."""
    if GRADE.fullmatch(text) is None:
        return None
    try:
        return int(text)
    except ValueError:  # more digits than Python converts: no rubric's grade
        return None


def _at(exc: QrelkitError, source: str, line: int) -> QrelkitError:
    """The library's error on one pair, placed at its line of the file."""
    return ValidationError(exc.problem, source=source, line=line, got=exc.got, expected=exc.expected,
                           fix=exc.fix)  # fmt: skip


def apply_decisions(
    store: Store, rubric: Rubric, path: str | Path, *, by: str | None, allow_override: bool = False,
    partial: bool = False,
) -> Applied:  # fmt: skip
    """Apply a decisions file (the module docstring gives its form and rules) in one transaction.

    Every line is checked before anything is written. With a refused line and not ``partial``, nothing is
    written (``written`` is false); otherwise the lines that pass are written together and the decision
    number of each is returned with it."""
    from .grades import MAX_NOTE, decide
    from .phases import ensure_gate, waiting_for_gate

    source = str(path)
    pairs = store.read(lambda c: int(c.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]))
    decisions, refused, undecided = read_decisions(path, max_pairs=pairs)
    done = Applied(source, refused=refused, undecided=undecided)
    good: list[Decision] = []
    for d in decisions:
        try:
            rubric.check_grade(d.grade)
            if d.note is not None and len(d.note) > MAX_NOTE:
                raise ValidationError(f"the note is longer than {MAX_NOTE} characters", got=len(d.note),
                                      fix="shorten it")  # fmt: skip
        except QrelkitError as exc:
            done.refused.add(_at(exc, source, d.line))
            continue
        good.append(d)
    ensure_gate(store)  # a round whose pairs are all graded has its gate decided first

    def write(conn: sqlite3.Connection) -> list[tuple[Decision, int]]:
        events: list[tuple[Decision, int]] = []
        waiting = waiting_for_gate(conn)  # once: a decision changes neither the phase nor the round's grades
        for d in good:
            conn.execute("SAVEPOINT line")
            try:
                event = decide(conn, rubric, d.query_id, d.doc_id, d.grade, by=by, note=d.note,
                               allow_override=allow_override, waiting=waiting)  # fmt: skip
            except QrelkitError as exc:
                conn.execute("ROLLBACK TO line")
                done.refused.add(_at(exc, source, d.line))
            else:
                events.append((d, event))
            conn.execute("RELEASE line")
        if done.refused and not partial:
            raise _NothingWritten()
        return events

    try:
        done.applied = store.write(write)
        done.written = bool(done.applied)
    except _NothingWritten:
        done.applied = []
    return done  # the refused lines already in file order (:class:`Refusals`)


class _NothingWritten(Exception):
    """Raised inside the transaction to roll it back whole (a refused line, without ``partial``)."""
