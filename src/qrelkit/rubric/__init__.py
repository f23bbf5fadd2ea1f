"""Relevance rubrics: the ``Rubric`` and ``Level`` values, ``rubric.toml`` loading, and lint rules.

A grade is a measurement only if a second person can check it. So every level of a rubric is tied to a
question about what the user can do with the document, answered by looking at that document alone, and
never to a comparison with other documents ("3 for the best answer" is not a scale). The lint rules below
catch the wordings that break this: comparative words, hedges, statements that are not questions,
circular "is it relevant?" questions, and scales with gaps or duplicate grades.

The file format::

    [rubric]
    name = "docsearch"
    version = "1.0"
    description = "..."
    scale = [0, 1, 2, 3]      # optional; default: the levels' grades

    [[levels]]
    grade = 3
    label = "Answers the task"
    question = "Can the user complete the task in the query using only this document?"
    examples_at = ["..."]      # optional: documents at this level
    examples_below = ["..."]   # optional: documents just below it

Loading is strict about what cannot be represented (TOML syntax, missing or unknown keys, wrong types)
and reports the file and line. Everything that can be represented but is a bad rubric (duplicate grades,
gaps, vague wording) loads, so that :func:`lint` can report all of it at once.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import numbers
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from qrelkit.errors import InputFormatError, ValidationError, did_you_mean

__all__ = [
    "MAX_ABS_GRADE",
    "RULES",
    "Finding",
    "Level",
    "Rubric",
    "Rule",
    "Severity",
    "format_findings",
    "lint",
    "load_rubric",
    "refuse_lint_errors",
]

Severity = Literal["error", "warning"]
"""``"error"``: the rubric cannot produce checkable grades; ``"warning"``: it probably will not."""


# --------------------------------------------------------------------------------------------------
# Values


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


#: Grades of a rubric lie from ``-MAX_ABS_GRADE`` to ``MAX_ABS_GRADE``: a scale is a handful of levels a
#: person tells apart, and lint, agreement and the exponential gain all walk every step between the lowest
#: and the highest grade (``scale = [0, 1000000000]`` would take gigabytes). Agreement without a rubric
#: takes its scale from the grades seen, and refuses grades beyond the same bound.
MAX_ABS_GRADE = 100


def grade_bound_error(grade: int, *, source: str | None = None, line: int | None = None) -> ValidationError:
    """The one error for a grade beyond :data:`MAX_ABS_GRADE`."""
    return ValidationError(
        f"grade {grade} is beyond the bound of a rubric's scale",
        source=source,
        line=line,
        expected=f"grades from {-MAX_ABS_GRADE} to {MAX_ABS_GRADE}",
        fix="number the levels 0, 1, 2, ... (a scale is a handful of levels a labeller tells apart)",
    )


def within_bound(grade: int) -> bool:
    """Whether ``grade`` lies within :data:`MAX_ABS_GRADE` of zero."""
    return -MAX_ABS_GRADE <= grade <= MAX_ABS_GRADE


@dataclass(frozen=True)
class Level:
    """One grade of a rubric.

    ``question`` is what a labeller answers about the document to decide whether it is at this level;
    ``examples_at`` are documents at the level and ``examples_below`` documents just below it, which is
    where labellers disagree.
    """

    grade: int
    label: str
    question: str
    examples_at: tuple[str, ...] = ()
    examples_below: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _is_int(self.grade):
            raise ValidationError("a level's grade must be an integer", got=self.grade)
        if not within_bound(self.grade):
            raise grade_bound_error(self.grade)
        object.__setattr__(self, "grade", int(self.grade))
        object.__setattr__(self, "examples_at", tuple(self.examples_at))
        object.__setattr__(self, "examples_below", tuple(self.examples_below))

    def to_dict(self) -> dict[str, Any]:
        return {
            "grade": self.grade,
            "label": self.label,
            "question": self.question,
            "examples_at": list(self.examples_at),
            "examples_below": list(self.examples_below),
        }


@dataclass(frozen=True)
class Rubric:
    """A versioned rubric: its levels sorted by grade, highest first, and its scale.

    ``scale`` is every grade a judgment may carry, ascending: the ``scale`` declared in the file, or the
    levels' grades when none is declared. It is the full scale even when some grades never occur in the
    judgments, which is what agreement statistics must weight by. Levels sharing a grade are kept (lint
    reports them). ``source`` is the file the rubric came from; it is not part of the rubric's identity
    and is ignored by ``==``.
    """

    name: str
    version: str
    description: str
    levels: tuple[Level, ...]
    source: str | None = dataclasses.field(default=None, compare=False)
    scale: tuple[int, ...] = None  # type: ignore[assignment]  # normalised in __post_init__

    def __post_init__(self) -> None:
        levels = tuple(sorted(self.levels, key=lambda lv: -lv.grade))
        grades = {lv.grade for lv in levels}
        scale = tuple(sorted(grades if self.scale is None else self.scale))
        if (
            not levels
            or not all(_is_int(g) for g in scale)
            or len(set(scale)) != len(scale)
            or grades - set(scale)
        ):
            raise ValidationError(
                f"rubric {self.name!r} needs at least one level and a scale of distinct integers",
                got={"levels": sorted(grades), "scale": list(scale)},
                expected="every level's grade on the scale",
                fix="add levels, or correct the scale",
            )
        for grade in scale:
            if not within_bound(grade):
                raise grade_bound_error(grade, source=self.source)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "scale", tuple(int(g) for g in scale))

    @property
    def min_grade(self) -> int:
        return self.scale[0]

    @property
    def max_grade(self) -> int:
        return self.scale[-1]

    def _canonical(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "scale": list(self.scale),
            "levels": [lv.to_dict() for lv in self.levels],
        }

    @functools.cached_property
    def content_hash(self) -> str:
        """SHA-256 (hex) of the rubric's content, not of its file.

        The hash covers name, version, description, scale and every level (grade, label, question,
        examples) serialised as canonical JSON (sorted keys, no whitespace, UTF-8), with levels in grade
        order. Comments, whitespace, key order and the order of ``[[levels]]`` tables in the file do not
        change it; any change of wording does, because a reworded question is a different instrument.
        Computed once per value (its fields are frozen; ``source``, which may be set after, is not hashed):
        the judging app checks it at every grade.
        """
        text = json.dumps(self._canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def short_hash(self) -> str:
        """The first 12 hex digits of :attr:`content_hash`, for summaries and file names."""
        return self.content_hash[:12]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with every field, the ``content_hash`` and the ``source``."""
        return {**self._canonical(), "content_hash": self.content_hash, "source": self.source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> Rubric:
        """Rebuild a rubric written by :meth:`to_dict`, validating it; a ``content_hash`` must match."""
        ctx = _Context(source, None, toml=False)
        if not isinstance(data, Mapping):
            raise ctx.error("a rubric must be a mapping", got=data, expected="a dict from Rubric.to_dict()")
        extra = {"levels", "content_hash", "source"}
        header = {k: v for k, v in data.items() if k not in extra}
        _check_keys(header, (*_HEADER_KEYS, *extra), ctx, "rubric", None)
        rubric = _build(header, data.get("levels"), ctx)
        if source is None and isinstance(data.get("source"), str):
            object.__setattr__(rubric, "source", data["source"])
        expected_hash = data.get("content_hash")
        if expected_hash is not None and expected_hash != rubric.content_hash:
            raise ValidationError(
                "the rubric's content does not match its content_hash",
                source=source,
                got=expected_hash,
                expected=rubric.content_hash,
                fix="the rubric was edited after it was recorded; use the rubric file it was judged with",
            )
        return rubric

    def check_grade(self, grade: object, *, source: str | None = None, line: int | None = None) -> int:
        """Return ``grade`` if it is on the scale; raise :class:`ValidationError` naming the scale if not."""
        if _is_int(grade) and grade in self.scale:
            return int(grade)
        problem = (
            f"grade {grade} is not on the scale" if _is_int(grade) else "grade is not an integer on the scale"
        )
        raise ValidationError(
            f"{problem} of rubric {self.name!r} {self.version}",
            source=source,
            line=line,
            got=grade,
            expected="one of " + ", ".join(str(g) for g in self.scale),
            fix="correct the grade, or add a level for it to the rubric and bump the rubric's version",
        )


# --------------------------------------------------------------------------------------------------
# Loading

_HEADER_KEYS = ("name", "version", "description", "scale")
_REQUIRED_HEADER = ("name", "version", "description")
_LEVEL_KINDS = {
    "grade": "int",
    "label": "str",
    "question": "str",
    "examples_at": "strings",
    "examples_below": "strings",
}
_LEVEL_KEYS = tuple(_LEVEL_KINDS)
_REQUIRED_LEVEL = ("grade", "label", "question")
_HEADER_RE = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?")
_TOML_ERROR_RE = re.compile(r"^(.*?) \(at (?:line (\d+), column (\d+)|end of document)\)$")


_TYPE_NAMES = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array"}


def _type_name(value: object) -> str:
    return "a table" if isinstance(value, Mapping) else _TYPE_NAMES.get(type(value), type(value).__name__)


class _Locator:
    """Finds the line of a key in rubric.toml text, so schema errors can point at it.

    tomllib reports lines only for syntax errors, so this scans the text: ``[rubric]`` and ``[[levels]]``
    headers split it into regions, and a key is found as ``key =`` inside its region. Layouts it does not
    understand (inline tables, dotted keys) give ``None`` rather than a wrong line.
    """

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.regions: dict[str, list[tuple[int, int]]] = {}
        current, start = "", 0
        for number, line in enumerate(self.lines):
            match = _HEADER_RE.match(line)
            if match:
                self.regions.setdefault(current, []).append((start, number))
                current = match.group(1).replace(" ", "").replace('"', "").replace("'", "")
                start = number
        self.regions.setdefault(current, []).append((start, len(self.lines)))

    def find(self, table: str, index: int, key: str | None, grade: object = None) -> int | None:
        regions = self.regions.get(table, [])
        if index >= len(regions):
            if table == "levels" and _is_int(grade):
                return self._search(0, len(self.lines), rf"\bgrade\s*=\s*{grade}\b")
            return None
        start, end = regions[index]
        if key is None:
            return start + 1
        found = self._search(start, end, rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
        return found if found is not None else (start + 1 if table else None)

    def _search(self, start: int, end: int, pattern: str) -> int | None:
        regex = re.compile(pattern)
        for number in range(start, end):
            if regex.search(self.lines[number]):
                return number + 1
        return None


class _Context:
    """Where the data being validated came from, to build errors that point at it."""

    def __init__(self, source: str | None, locator: _Locator | None, *, toml: bool) -> None:
        self.source, self.locator, self.toml = source, locator, toml

    def line(self, table: str, index: int = 0, key: str | None = None, grade: object = None) -> int | None:
        return self.locator.find(table, index, key, grade) if self.locator else None

    def level_name(self, index: int, grade: object = None) -> str:
        name = f"[[levels]] entry {index + 1}" if self.toml else f"levels[{index}]"
        return f"{name} (grade {grade})" if _is_int(grade) else name

    def table_name(self, table: str) -> str:
        if not self.toml:
            return "the rubric" if table == "rubric" else table
        return "the top level of the file" if table == "" else f"[{table}]"

    def error(self, problem: str, *, line: int | None = None, **kwargs: Any) -> InputFormatError:
        return InputFormatError(problem, source=self.source, line=line, **kwargs)


def _check_keys(
    table: Mapping[str, Any], allowed: tuple[str, ...], ctx: _Context, where: str, line_of: Any
) -> None:
    for key in table:
        if key in allowed:
            continue
        hint = ""
        if key in _LEVEL_KEYS:
            hint = "; level keys belong in a [[levels]] table"
        elif key in _HEADER_KEYS:
            hint = "; it belongs in the [rubric] table"
        elif key == "levels":
            hint = "; write levels as top-level [[levels]] tables, not [[rubric.levels]]"
        raise ctx.error(
            f"unknown key {key!r} in {where}{did_you_mean(key, allowed)}",
            line=line_of(key) if line_of else None,
            expected="one of " + ", ".join(allowed),
            fix="correct or remove the key" + hint,
        )


_KINDS: dict[str, tuple[Any, str]] = {
    "int": (_is_int, "an integer such as 3"),
    "str": (lambda v: isinstance(v, str), '"a string"'),
    "strings": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), '["an example", ...]'),
}


def _value(table: Mapping[str, Any], key: str, kind: str, ctx: _Context, where: str, line: int | None) -> Any:
    """``table[key]`` if present and of ``kind`` (see ``_KINDS``); an error naming the key if not."""
    check, what = _KINDS[kind]
    if key not in table:
        raise ctx.error(f"{where} has no {key!r}", line=line, expected=f"{key} = {what}", fix=f"add {key}")
    value = table[key]
    if check(value):
        return tuple(value) if kind == "strings" else value
    fix = f"write {key} = {what}"
    if kind == "int" and isinstance(value, str):
        fix = f"write the grade without quotes, e.g. {key} = {value.strip() or '0'}"
    elif kind == "str" and isinstance(value, (int, float)) and not isinstance(value, bool):
        fix = f'quote it: {key} = "{value}"'
        if key == "version":
            fix += " (unquoted, a version 1.10 would read as the number 1.1)"
    problem = f"{key} in {where} is {_type_name(value)}"
    if kind == "strings" and isinstance(value, list):
        problem = f"{key} in {where} has an item that is not a string"
    raise ctx.error(problem, line=line, got=value, expected=what, fix=fix)


def _build(header: Mapping[str, Any], levels: Any, ctx: _Context) -> Rubric:
    """Validate the ``[rubric]`` table and the levels, and make the Rubric value."""
    where = ctx.table_name("rubric")
    _check_keys(header, _HEADER_KEYS, ctx, where, lambda k: ctx.line("rubric", 0, k))
    values = {
        key: _value(header, key, "str", ctx, where, ctx.line("rubric", 0, key)) for key in _REQUIRED_HEADER
    }
    scale = None
    if "scale" in header:
        line = ctx.line("rubric", 0, "scale")
        scale = header["scale"]
        valid = isinstance(scale, list) and scale and all(_is_int(g) for g in scale)
        if not valid or len(set(scale)) != len(scale):
            raise ctx.error(
                f"scale in {where} must be a non-empty array of distinct integers",
                line=line,
                got=scale,
                expected="e.g. [0, 1, 2, 3]",
                fix="list every grade once, or leave scale out to use the levels' grades",
            )
        for grade in scale:
            if not within_bound(grade):
                error = grade_bound_error(grade, source=ctx.source, line=line)
                raise ctx.error(error.problem, line=line, got=scale if len(scale) < 20 else None,
                                expected=error.expected, fix=error.fix)  # fmt: skip
    if not isinstance(levels, list) or not levels or not all(isinstance(lv, Mapping) for lv in levels):
        raise ctx.error(
            "levels must be an array of tables" if levels else "the rubric has no levels",
            line=ctx.line("levels", 0) or ctx.line("", 0, "levels"),
            expected="one [[levels]] table (double brackets) per grade" if ctx.toml else "a list of dicts",
            fix="add a level for each grade, each with grade, label and question",
        )
    parsed = [_build_level(table, index, ctx) for index, table in enumerate(levels)]
    if scale is not None:
        for index, level in enumerate(parsed):
            if level.grade not in scale:
                raise ctx.error(
                    f"{ctx.level_name(index, level.grade)} has a grade that is not on the declared scale",
                    line=ctx.line("levels", index, "grade", level.grade),
                    got=level.grade,
                    expected="one of " + ", ".join(str(g) for g in sorted(scale)),
                    fix=f"add {level.grade} to scale in {where}, or correct the grade",
                )
    return Rubric(levels=tuple(parsed), source=ctx.source, scale=scale and tuple(scale), **values)


def _build_level(table: Mapping[str, Any], index: int, ctx: _Context) -> Level:
    grade = table.get("grade")
    where = ctx.level_name(index, grade)

    def line(key: str | None) -> int | None:
        return ctx.line("levels", index, key, grade)

    _check_keys(table, _LEVEL_KEYS, ctx, where, line)
    values = {
        key: _value(table, key, kind, ctx, where, line(key))
        for key, kind in _LEVEL_KINDS.items()
        if key in _REQUIRED_LEVEL or key in table
    }
    if not within_bound(values["grade"]):
        error = grade_bound_error(values["grade"])
        raise ctx.error(
            f"{where}: {error.problem}", line=line("grade"), expected=error.expected, fix=error.fix
        )
    return Level(**values)


def load_rubric(path: str | os.PathLike[str]) -> Rubric:
    """Read and validate a ``rubric.toml`` file.

    Raises :class:`InputFormatError` naming the file and, where it can be found, the line: for TOML
    syntax errors, a missing ``[rubric]`` key or level key, a value of the wrong type, an unknown key
    (with a "did you mean"), or no levels at all. Duplicate grades, gaps and wording problems load
    fine and are reported by :func:`lint`.
    """
    source = os.fspath(path)
    from ..formats.inputs import read_input

    data = read_input(Path(source), "rubric file", kind="rubric")
    if data[:2] == b"\x1f\x8b":
        raise InputFormatError(
            "rubric file is gzip-compressed (it starts with gzip's magic bytes 1f 8b)",
            source=source,
            fix=f"decompress it (`gunzip {source}`) and pass the TOML file",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFormatError(
            "rubric file is not UTF-8 text",
            source=source,
            line=data[: exc.start].count(b"\n") + 1,
            fix="save the file as UTF-8",
        ) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_ERROR_RE.match(str(exc))
        line = int(match.group(2)) if match and match.group(2) else None
        column = f" at column {match.group(3)}" if match and match.group(3) else ""
        lines = text.splitlines()
        got = lines[line - 1].strip() if line and line <= len(lines) else None
        raise InputFormatError(
            f"is not valid TOML: {match.group(1) if match else exc}{column}",
            source=source,
            line=line,
            got=got,
            fix="correct the TOML syntax (strings need quotes; a key may appear once per table)",
        ) from None
    except RecursionError:
        raise InputFormatError(
            "nests TOML arrays or tables too deeply to read",
            source=source,
            fix="a rubric needs one [rubric] table and flat [[levels]] tables",
        ) from None
    ctx = _Context(source, _Locator(text), toml=True)
    _check_keys(document, ("rubric", "levels"), ctx, ctx.table_name(""), lambda k: ctx.line("", 0, k))
    header = document.get("rubric")
    if not isinstance(header, dict):
        raise ctx.error(
            "has no [rubric] table" if header is None else "rubric must be a table",
            line=ctx.line("", 0, "rubric"),
            expected='[rubric] with name, version and description, e.g. name = "docsearch"',
            fix="add a [rubric] table at the top of the file",
        )
    return _build(header, document.get("levels"), ctx)


# --------------------------------------------------------------------------------------------------
# Lint


@dataclass(frozen=True)
class Finding:
    """One lint finding: which rule, how serious, where (level grade and field), what, and the fix."""

    rule_id: str
    severity: Severity
    level_grade: int | None
    field: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Rule(NamedTuple):
    """A lint rule's severity, what it detects, and its usual fix."""

    severity: Severity
    summary: str
    fix: str


_EXAMPLE_QUESTION = "'Can the user complete the task in the query using only this document?'"

RULES: dict[str, Rule] = {
    "R001-comparative": Rule(
        "error",
        "comparative, superlative or intensifying words (best, most, ideal, perfectly, highly, ...)",
        f"describe a property of this document alone, e.g. 'Answers the task' or {_EXAMPLE_QUESTION}",
    ),
    "R002-hedge": Rule(
        "warning",
        "vague hedges (somewhat, a bit, seems, mostly, ...)",
        "state the condition that decides the level, e.g. 'gives at least one step the user needs'",
    ),
    "R003-not-a-question": Rule(
        "error",
        "the question does not start with a question word or does not end with '?'",
        f"rewrite it as a question about what the user can do with the document, e.g. {_EXAMPLE_QUESTION}",
    ),
    "R004-circular": Rule(
        "warning",
        "the question asks whether the document is relevant",
        "ask for the fact that decides it, e.g. 'Does the document give a step the user needs?'",
    ),
    "R005-gap": Rule("error", "a grade between the lowest and highest has no level", "add a level"),
    "R006-duplicate-grade": Rule(
        "error", "two levels share a grade", "give each level its own grade, or merge them"
    ),
    "R007-duplicate-question": Rule(
        "error", "two levels ask the same question", "ask a question whose answer separates the two levels"
    ),
    "R008-too-few-levels": Rule(
        "error", "fewer than two levels", "add a level for documents that do not help the user (grade 0)"
    ),
    "R009-negative-grade": Rule(
        "warning", "a negative grade", "use grades from 0 upward; keep documents that cannot be judged out"
    ),
    "R010-empty": Rule("error", "an empty label, question, name or version", "write it"),
    "R011-no-examples": Rule(
        "warning",
        "a level with no example documents (labellers see the examples beside the question)",
        "add examples_at = [...] (documents at this level) and examples_below = [...] (just below it)",
    ),
    "R012-uncheckable": Rule(
        "warning",
        "wording a second person cannot check: a judgement of quality or completeness (fully, completely, "
        "adequately, sufficiently, good, clearly, ...)",
        f"ask what the user can do with this document, e.g. {_EXAMPLE_QUESTION}",
    ),
}
"""Every lint rule by id. Rule ids are stable; a new rule gets a new number."""


def _finding(rule_id: str, grade: int | None, field: str, message: str, fix: str | None = None) -> Finding:
    rule = RULES[rule_id]
    return Finding(rule_id, rule.severity, grade, field, message, rule.fix if fix is None else fix)


def _terms(*terms: str) -> re.Pattern[str]:
    alternatives = "|".join(t.replace(" ", r"\s+") for t in terms)
    return re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE)


# R001. A comparative ("better", "most relevant") or superlative ("best", "ideal") defines a grade
# against the other documents the labeller happens to have seen, not against a property of this one;
# an intensifier ("highly", "perfectly") asks for a degree with no threshold. Two careful labellers
# seeing different pools, or the same pool in a different order, then disagree. Matched as whole words,
# in any case, in the description, labels and questions. "At most" is a bound, not a comparison ("grade 1
# at most"), and is not matched; "at least" never was.
_COMPARATIVE = _terms(
    "best", "better", r"(?<!\bat\s)most", "(?:more|less) (?:relevant|useful|helpful|important)",
    "ideal(?:ly)?",
    "top", "perfect(?:ly)?", "highest", "greatest", "optimal(?:ly)?", "optimum", "superior", "worse",
    "worst", "excellent(?:ly)?", "highly",
)  # fmt: skip

# R002. A hedge leaves the threshold of a level to each labeller's judgement: "somewhat helpful" is a
# 2 to one person and a 1 to another. Only a warning, since a hedge is sometimes harmless; "rather
# than" is a connective, not a hedge, and is not matched.
_HEDGE = _terms(
    "somewhat", "a bit", "a little", "seem(?:s|ed|ingly)?", "kind of", "sort of", "fairly",
    r"rather(?!\s+than\b)", "maybe", "possibly", "mostly", "partially relevant", "reasonabl[ey]",
)  # fmt: skip

# R003. A level is checkable when it is a question about the document that the labeller answers by
# looking, so it must start with a question word and end with "?". A statement ("The passage contains
# the answer") describes a grade without telling the labeller what to check.
_QUESTION_WORDS = (
    "Can", "Does", "Is", "Are", "Will", "Would", "Could", "Has", "Have", "Do", "Did", "Should", "Must",
    "What", "Which", "How",
)  # fmt: skip
_QUESTION_START = re.compile(rf"^(?:{'|'.join(_QUESTION_WORDS)})\b", re.IGNORECASE)

# R004. "Is the document relevant?" asks the labeller for the grade itself instead of for a fact that
# decides it, so the rubric measures each labeller's private notion of relevance. Questions only: a
# label such as "Irrelevant" is a name, not a criterion.
_CIRCULAR = re.compile(r"\b(?:ir)?relevan(?:t|ce|cy)\b", re.IGNORECASE)

# R012. The chapter's rubric rule: every level is a question about what the user can do with the document,
# which a second person answers the same way by looking. A judgement of quality or completeness ("answers
# the question fully", "adequately", "a good answer") leaves the threshold to each labeller, as a hedge
# does. Questions only; a warning, as a hedge is.
# "clear" as a judgement ("is it clear", "a clear answer"), not the verb ("how to clear it", "clear the
# cache", "clears", "cleared"): not after "to", nor before an object.
_CLEAR = (
    r"(?<!\bto\x20)clear(?!\s+(?:the|a|an|it|them|this|these|those|its|their|your|our|my|his|her|out|up|"
    r"away|all|any|each|every|some)\b)"
)
_UNCHECKABLE = _terms(
    "fully", "completely", "adequate(?:ly)?", "sufficient(?:ly)?", "appropriate(?:ly)?", "satisfactor(?:y|ily)",
    "comprehensive(?:ly)?", "thorough(?:ly)?", "properly", "good", "high[- ]quality", "clearly", _CLEAR,
)  # fmt: skip

_FIX_LABEL = "write a short label naming what the level checks, e.g. 'Answers the task'"

_WORD_RULES = (
    ("R001-comparative", _COMPARATIVE, "a comparative, superlative or intensifying word: it grades the "
     "document by degree or against others the labeller has seen, not by a property a second person can "
     "check"),
    ("R002-hedge", _HEDGE, "a hedge: it leaves the threshold of the level to each labeller"),
    ("R004-circular", _CIRCULAR, "relevance as its own criterion: it asks the labeller for the grade "
     "instead of for a fact that decides it"),
    ("R012-uncheckable", _UNCHECKABLE, "a judgement of quality or completeness: two careful labellers draw "
     "its line in different places"),
)  # fmt: skip


def _wording(text: str, grade: int | None, field: str) -> list[Finding]:
    """R001, R002 and R004: one finding per distinct word, in the order the words appear."""
    findings = []
    for rule_id, pattern, why in _WORD_RULES:
        if rule_id in ("R004-circular", "R012-uncheckable") and field != "question":
            continue
        words = dict.fromkeys(" ".join(m.group(0).lower().split()) for m in pattern.finditer(text))
        findings += [_finding(rule_id, grade, field, f'uses "{word}", {why}') for word in words]
    return findings


def _structure(rubric: Rubric) -> list[Finding]:
    """The rules about the scale: R008, R005, R006 and R009."""
    findings = []
    grades = [lv.grade for lv in rubric.levels]
    if len(grades) < 2:
        message = f"the rubric has {len(grades)} level: a single grade cannot order documents"
        findings.append(_finding("R008-too-few-levels", None, "levels", message))
    # R005. Gains (2^g - 1) and weighted kappa both use grade values, so a missing grade is not harmless
    # numbering: with 0, 1, 3 a 3-versus-1 disagreement weighs as two steps although the labeller only
    # had one step to choose. A declared scale grade that no level defines cannot be given at all.
    for grade in range(rubric.min_grade, rubric.max_grade + 1):
        if grade in grades:
            continue
        if grade in rubric.scale:
            message = f"grade {grade} is on the scale but no level defines it, so no labeller can give it"
        else:
            message = f"the scale skips grade {grade}: gains and weighted agreement count the gap as a step"
        fix = f"add a level with grade {grade}, or renumber the levels without gaps (and bump the version)"
        findings.append(_finding("R005-gap", None, "scale", message, fix))
    # R006. Two levels with one grade: a labeller cannot tell which applies, and the judgments cannot.
    for grade in sorted(set(grades), reverse=True):
        labels = [repr(lv.label) for lv in rubric.levels if lv.grade == grade]
        if len(labels) > 1:
            message = f"grade {grade} is defined by {len(labels)} levels ({', '.join(labels)})"
            findings.append(_finding("R006-duplicate-grade", grade, "grade", message))
    # R009. Tools read negative grades differently, so the same judgments score differently across them.
    for grade in [g for g in rubric.scale if g < 0]:
        message = (
            f"grade {grade} is negative: trec_eval reads a negative grade as 'in the pool but unjudged' "
            "(gain 0, left out of the ideal ranking, dropped by -J) and scikit-learn rejects it"
        )
        findings.append(_finding("R009-negative-grade", grade, "grade", message))
    return findings


def lint(rubric: Rubric) -> list[Finding]:
    """Check a rubric against every rule in :data:`RULES`; return the findings in a stable order.

    Order: the scale rules, then the rubric's name, version and description, then each level from the
    highest grade down, its label before its question, then the levels without examples. An empty list
    means the rubric is clean.
    """
    findings = _structure(rubric)
    for name in ("name", "version"):
        if not getattr(rubric, name).strip():
            fix = f"give the rubric a {name}: every result records it"
            findings.append(_finding("R010-empty", None, name, f"the rubric's {name} is empty", fix))
    findings += _wording(rubric.description, None, "description")
    seen: dict[str, Level] = {}
    for level in rubric.levels:
        grade, label, question = level.grade, level.label.strip(), level.question.strip()
        if not label:
            findings.append(_finding("R010-empty", grade, "label", "the label is empty", _FIX_LABEL))
        findings += _wording(label, grade, "label")
        if not question:
            fix = RULES["R003-not-a-question"].fix
            findings.append(_finding("R010-empty", grade, "question", "the question is empty", fix))
            continue
        findings += _wording(question, grade, "question")
        problems = []
        if not _QUESTION_START.match(question):
            problems.append(f"does not start with a question word ({', '.join(_QUESTION_WORDS)})")
        if not question.endswith("?"):
            problems.append('does not end with "?"')
        if problems:
            message = "is not a question a labeller answers by checking the document: " + " and ".join(
                problems
            )
            findings.append(_finding("R003-not-a-question", grade, "question", message))
        # R007. Two levels asking the same question (ignoring case and spacing) cannot be told apart.
        key = " ".join(question.casefold().split())
        if key in seen:
            message = f"asks the same question as level {seen[key].grade} ({seen[key].label!r})"
            findings.append(_finding("R007-duplicate-question", grade, "question", message))
        seen.setdefault(key, level)
    for level in rubric.levels:
        if not level.examples_at and not level.examples_below:
            message = (
                "has no example documents: labellers see the question alone, with nothing to calibrate on"
            )
            findings.append(_finding("R011-no-examples", level.grade, "examples", message))
    return findings


def refuse_lint_errors(rubric: Rubric, source: str | os.PathLike[str]) -> None:
    """Refuse a rubric with lint errors before labellers grade with it (``judge init``, ``judge revise``
    and the admin page's revision alike); warnings pass."""
    errors = [f for f in lint(rubric) if f.severity == "error"]
    if errors:
        raise ValidationError(
            f"the rubric has {len(errors)} lint error(s), first: {errors[0].message}",
            source=os.fspath(source),
            fix=f"fix them (`qrelkit rubric lint {os.fspath(source)}`) before labellers grade with it",
        )


def format_findings(findings: list[Finding], rubric: Rubric) -> str:
    """One line per finding: ``path: level 3 (question): R001-comparative error: <message>; fix: <fix>``.

    Findings about the whole rubric read ``path: rubric (scale): ...``; without a source file the
    rubric's name stands in for the path. No findings give an empty string.
    """
    where = rubric.source or f"rubric {rubric.name!r}"
    lines = []
    for f in findings:
        scope = f"level {f.level_grade}" if f.level_grade is not None else "rubric"
        lines.append(f"{where}: {scope} ({f.field}): {f.rule_id} {f.severity}: {f.message}; fix: {f.fix}")
    return "\n".join(lines)


def rubric_scale(path: str | Path | None) -> tuple[tuple[int, ...] | None, str | None]:
    """(scale, content hash) of a rubric file, or ``(None, None)`` without one: what an evaluation checks
    grades against and records."""
    if not path:
        return None, None
    rubric = load_rubric(path)
    return tuple(rubric.scale), rubric.content_hash
