"""Tests of qrelkit.rubric (values, loading, lint) and the ``qrelkit rubric`` commands."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from qrelkit.cli.rubric import command
from qrelkit.errors import InputFormatError, ValidationError
from qrelkit.rubric import RULES, Finding, Level, Rubric, format_findings, lint, load_rubric

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rubrics"
EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "docsearch"

QUESTION_3 = (
    "Can the user complete the task in the query using only this document, without opening another page?"
)


def fixture(name: str) -> Path:
    return FIXTURES / name


def summary(findings: list[Finding], examples: bool = False) -> list[tuple[str, str, int | None, str]]:
    """The findings as tuples; R011 (a level without examples: the fixtures' levels have none) only with
    ``examples`` (its own tests)."""
    return [(f.rule_id, f.severity, f.level_grade, f.field) for f in findings
            if examples or f.rule_id != "R011-no-examples"]  # fmt: skip


def write(tmp_path: Path, text: str, name: str = "rubric.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rubric_text(*levels: tuple[int, str, str], header: str = "") -> str:
    parts = ['[rubric]\nname = "t"\nversion = "1"\ndescription = "A test rubric."\n' + header]
    for grade, label, question in levels:  # each with an example document, as labellers need
        parts.append(f'[[levels]]\ngrade = {grade}\nlabel = "{label}"\nquestion = "{question}"\n'
                     f'examples_at = ["a document of grade {grade}"]\n')  # fmt: skip
    return "\n".join(parts)


GOOD_LEVELS = (
    (2, "Answers the task", "Can the user complete the task using only this document?"),
    (1, "Gives a step", "Does the document give a step the user needs?"),
    (0, "Unrelated", "Is the document about another subject?"),
)


# ---------------------------------------------------------------------------------------------------
# Loading a good rubric


def test_clean_rubric_loads_with_levels_highest_first():
    rubric = load_rubric(fixture("clean.toml"))
    assert rubric.name == "docsearch"
    assert rubric.version == "1.0"
    assert [lv.grade for lv in rubric.levels] == [3, 2, 1, 0]
    assert rubric.levels[0].label == "Answers the task"
    assert rubric.levels[0].question == QUESTION_3
    assert rubric.levels[0].examples_at == (
        "The how-to page 'Rotate an API key' for the query 'rotate api key'",
    )
    assert rubric.levels[3].examples_at == ("The pricing page, retrieved for the query 'rotate api key'",)
    assert rubric.levels[3].examples_below == ()
    assert rubric.scale == (0, 1, 2, 3)
    assert (rubric.min_grade, rubric.max_grade) == (0, 3)
    assert rubric.source == str(fixture("clean.toml"))


def test_clean_rubric_lints_clean():
    assert lint(load_rubric(fixture("clean.toml"))) == []


def test_levels_are_sorted_by_grade_whatever_the_file_order(tmp_path):
    path = write(tmp_path, rubric_text(GOOD_LEVELS[2], GOOD_LEVELS[0], GOOD_LEVELS[1]))
    assert [lv.grade for lv in load_rubric(path).levels] == [2, 1, 0]


def test_declared_scale_is_the_full_scale(tmp_path):
    path = write(tmp_path, rubric_text(*GOOD_LEVELS, header="scale = [3, 0, 1, 2]\n"))
    rubric = load_rubric(path)
    assert rubric.scale == (0, 1, 2, 3)
    assert rubric.max_grade == 3
    # grade 3 is on the scale but no level defines it
    assert summary(lint(rubric)) == [("R005-gap", "error", None, "scale")]
    assert "grade 3 is on the scale but no level defines it" in lint(rubric)[0].message


# ---------------------------------------------------------------------------------------------------
# Lint: wording


def test_best_answer_rubric_fails_on_the_comparative_rule():
    findings = lint(load_rubric(fixture("best-answer.toml")))
    assert summary(findings) == [
        ("R001-comparative", "error", 3, "label"),
        ("R001-comparative", "error", 3, "question"),
        ("R002-hedge", "warning", 1, "question"),
    ]
    assert 'uses "best"' in findings[0].message
    assert 'uses "best"' in findings[1].message
    assert 'uses "somewhat"' in findings[2].message


def test_trec_dl_definitions_are_flagged():
    findings = lint(load_rubric(fixture("trec-dl.toml")))
    assert summary(findings) == [
        ("R001-comparative", "error", 3, "label"),
        ("R003-not-a-question", "error", 3, "question"),
        ("R001-comparative", "error", 2, "label"),
        ("R002-hedge", "warning", 2, "question"),
        ("R003-not-a-question", "error", 2, "question"),
        ("R002-hedge", "warning", 1, "question"),
        ("R003-not-a-question", "error", 1, "question"),
        ("R003-not-a-question", "error", 0, "question"),
    ]
    assert 'uses "perfectly"' in findings[0].message
    assert 'uses "highly"' in findings[2].message
    assert 'uses "a bit"' in findings[3].message
    assert 'uses "seems"' in findings[5].message


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("Is this the most useful page?", "most"),
        ("Is that most of the answer?", "most"),  # "that most" is not "at most"
        ("Is it more relevant than the others?", "more relevant"),
        ("Is this the IDEAL page?", "ideal"),
        ("Would it be a top result?", "top"),
        ("Does it match the query perfectly?", "perfectly"),
        ("Is it of the highest quality?", "highest"),
        ("Is it better than the manual?", "better"),
        ("Is it the worst page?", "worst"),
        ("Is it excellent?", "excellent"),
        ("Is it the optimal page?", "optimal"),
    ],
)
def test_comparative_words_are_errors(tmp_path, question, word):
    levels = ((1, "Answers the task", question), GOOD_LEVELS[2])
    findings = [f for f in lint(load_rubric(write(tmp_path, rubric_text(*levels)))) if f.field == "question"]
    assert summary(findings)[0] == ("R001-comparative", "error", 1, "question")
    assert f'uses "{word}"' in findings[0].message


@pytest.mark.parametrize(
    "question",
    [
        "Does the document cover the topic of the query?",  # topic is not top
        "Does it explain the desktop app?",
        "Is it about the subject rather than its history?",  # rather than is a connective
        "Does the page bestow a licence?",
        "Does it name two causes at most?",  # "at most" is a bound, not a comparison
        "Does it list at least one and At most three steps?",
        "Does it mention the almost-final release?",
    ],
)
def test_words_are_matched_whole_and_in_context(tmp_path, question):
    levels = ((1, "Answers the task", question), GOOD_LEVELS[2])
    assert lint(load_rubric(write(tmp_path, rubric_text(*levels)))) == []


def test_hedges_are_warnings_and_description_is_checked(tmp_path):
    text = rubric_text(
        (1, "Fairly useful", "Does the document possibly answer the query?"), GOOD_LEVELS[2]
    ).replace("A test rubric.", "Grades that are rather strict, maybe.")
    findings = lint(load_rubric(write(tmp_path, text)))
    assert summary(findings) == [
        ("R002-hedge", "warning", None, "description"),
        ("R002-hedge", "warning", None, "description"),
        ("R002-hedge", "warning", 1, "label"),
        ("R002-hedge", "warning", 1, "question"),
    ]
    assert [f.message.split('"')[1] for f in findings] == ["rather", "maybe", "fairly", "possibly"]


def test_statement_is_not_a_question(tmp_path):
    levels = (
        (2, "Answers the task", "Can the user complete the task using only this document"),  # no "?"
        (1, "Gives a step", "The document gives a step the user needs?"),  # no question word
        GOOD_LEVELS[2],
    )
    findings = lint(load_rubric(write(tmp_path, rubric_text(*levels))))
    assert summary(findings) == [
        ("R003-not-a-question", "error", 2, "question"),
        ("R003-not-a-question", "error", 1, "question"),
    ]
    assert 'does not end with "?"' in findings[0].message
    assert "question word" not in findings[0].message
    assert "does not start with a question word" in findings[1].message
    assert 'end with "?"' not in findings[1].message


def test_relevance_as_criterion_is_circular(tmp_path):
    levels = (
        (1, "Relevant", "Is the document relevant to the query?"),
        (0, "Not", "Is the document irrelevant?"),
    )
    findings = lint(load_rubric(write(tmp_path, rubric_text(*levels))))
    assert summary(findings) == [
        ("R004-circular", "warning", 1, "question"),
        ("R004-circular", "warning", 0, "question"),
    ]
    assert 'uses "relevant"' in findings[0].message
    assert 'uses "irrelevant"' in findings[1].message


def test_empty_label_and_question(tmp_path):
    levels = ((1, "  ", "Can the user complete the task using only this document?"), (0, "Unrelated", " "))
    findings = lint(load_rubric(write(tmp_path, rubric_text(*levels))))
    assert summary(findings) == [("R010-empty", "error", 1, "label"), ("R010-empty", "error", 0, "question")]


# ---------------------------------------------------------------------------------------------------
# Lint: the scale


def test_gap_in_scale():
    rubric = load_rubric(fixture("gap.toml"))
    assert rubric.scale == (0, 1, 3)
    findings = lint(rubric)
    assert summary(findings) == [("R005-gap", "error", None, "scale")]
    assert "skips grade 2" in findings[0].message


def test_duplicate_grades_load_and_are_reported():
    rubric = load_rubric(fixture("duplicate-grade.toml"))
    assert [lv.grade for lv in rubric.levels] == [2, 2, 1, 0]
    assert [lv.label for lv in rubric.levels[:2]] == ["Answers the task", "Gives a step"]  # file order kept
    assert rubric.scale == (0, 1, 2)
    findings = lint(rubric)
    assert summary(findings) == [("R006-duplicate-grade", "error", 2, "grade")]
    assert "'Answers the task', 'Gives a step'" in findings[0].message


def test_duplicate_questions_ignore_case_and_spacing():
    findings = lint(load_rubric(fixture("duplicate-question.toml")))
    assert summary(findings) == [("R007-duplicate-question", "error", 0, "question")]
    assert "level 1" in findings[0].message


def test_single_level(tmp_path):
    findings = lint(load_rubric(write(tmp_path, rubric_text(GOOD_LEVELS[0]))))
    assert summary(findings) == [("R008-too-few-levels", "error", None, "levels")]


def test_negative_grade_is_a_warning(tmp_path):
    levels = (*GOOD_LEVELS[1:], (-1, "Spam", "Is the document advertising with no content?"))
    findings = lint(load_rubric(write(tmp_path, rubric_text(*levels))))
    assert summary(findings) == [("R009-negative-grade", "warning", -1, "grade")]
    assert "trec_eval" in findings[0].message


def test_a_level_without_examples_is_a_warning(tmp_path):
    text = rubric_text(*GOOD_LEVELS).replace('examples_at = ["a document of grade 1"]\n', "")
    findings = lint(load_rubric(write(tmp_path, text)))
    assert summary(findings, examples=True) == [("R011-no-examples", "warning", 1, "examples")]
    below = text.replace('question = "Does the document give a step the user needs?"',
                         'question = "Does the document give a step the user needs?"\nexamples_below = ["x"]')  # fmt: skip
    assert (
        lint(load_rubric(write(tmp_path, below, "below.toml"))) == []
    )  # a document just below is an example


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("Does the document answer the question fully?", "fully"),
        ("Does it completely cover the task?", "completely"),
        ("Does it adequately explain the setting?", "adequately"),
        ("Is there sufficient detail for the user?", "sufficient"),
        ("Is it a good answer?", "good"),
        ("Does it clearly state the limit?", "clearly"),
        ("Is it a high-quality page?", "high-quality"),
        ("Is the answer clear?", "clear"),
        ("Does it give a clear procedure?", "clear"),
    ],
)
def test_wording_a_second_person_cannot_check_is_a_warning(tmp_path, question, word):
    levels = ((1, "Gives a step", question), GOOD_LEVELS[2])
    findings = lint(load_rubric(write(tmp_path, rubric_text(*levels))))
    assert summary(findings) == [("R012-uncheckable", "warning", 1, "question")]
    assert f'uses "{word}"' in findings[0].message


@pytest.mark.parametrize(
    "question",
    [
        "Does it name the command that clears the cache?",
        "Does it say how to clear it?",
        "Does it say which flag to clear before a retry?",
        "Does it show how to clear the cache?",
        "Does it say the flag is cleared after a restart?",
    ],
)
def test_clear_as_a_verb_is_checkable(tmp_path, question):
    levels = ((1, "Gives a step", question), GOOD_LEVELS[2])
    assert lint(load_rubric(write(tmp_path, rubric_text(*levels)))) == []


def test_the_complete_task_is_not_uncheckable(tmp_path):
    """'complete' the verb (the user can complete the task) is a fact; 'completely' is a degree."""
    assert lint(load_rubric(write(tmp_path, rubric_text(*GOOD_LEVELS)))) == []


def test_every_finding_uses_its_rule_severity():
    for path in FIXTURES.glob("*.toml"):
        try:
            rubric = load_rubric(path)
        except InputFormatError:
            continue
        for finding in lint(rubric):
            assert RULES[finding.rule_id][0] == finding.severity


def test_format_findings():
    rubric = load_rubric(fixture("gap.toml"))
    findings = [
        Finding("R001-comparative", "error", 3, "question", 'uses "best"', "ask a question"),
        Finding("R005-gap", "error", None, "scale", "the scale skips grade 2", "add a level"),
    ]
    path = str(fixture("gap.toml"))
    assert format_findings(findings, rubric).splitlines() == [
        f'{path}: level 3 (question): R001-comparative error: uses "best"; fix: ask a question',
        f"{path}: rubric (scale): R005-gap error: the scale skips grade 2; fix: add a level",
    ]
    assert format_findings([], rubric) == ""


# ---------------------------------------------------------------------------------------------------
# Load errors: file and line


def load_error(path: Path) -> InputFormatError:
    with pytest.raises(InputFormatError) as info:
        load_rubric(path)
    assert info.value.source == str(path)
    return info.value


def test_toml_syntax_error_names_file_and_line():
    error = load_error(fixture("syntax-error.toml"))
    assert error.line == 8
    assert str(error).startswith(f"{fixture('syntax-error.toml')}:8: is not valid TOML")
    assert error.got == 'label = "Answers the task'


def test_missing_question_points_at_its_level():
    error = load_error(fixture("missing-question.toml"))
    assert error.line == 11  # the second [[levels]] header
    assert "[[levels]] entry 2 (grade 0) has no 'question'" in str(error)


def test_unknown_key_suggests_the_right_one():
    error = load_error(fixture("unknown-key.toml"))
    assert error.line == 14
    assert "unknown key 'questoin'" in str(error)
    assert "did you mean 'question'?" in str(error)


def test_grade_as_string():
    error = load_error(fixture("grade-string.toml"))
    assert error.line == 7
    assert error.got == "1"
    assert "grade in [[levels]] entry 1 is a string" in str(error)
    assert "grade = 1" in str(error.fix)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('[rubric]\nname = "t"\nversion = "1"\ndescription = "d"\n', None, "has no levels"),
        ('[[levels]]\ngrade = 1\nlabel = "a"\nquestion = "b?"\n', None, "has no [rubric] table"),
        ('[rubric]\nname = "t"\nversion = 1.0\ndescription = "d"\n', 3, "version in [rubric] is a float"),
        (
            '[rubric]\nname = "t"\nversion = "1"\n\n[[levels]]\ngrade = 1\n',
            1,
            "[rubric] has no 'description'",
        ),
        ('title = "x"\n[rubric]\nname = "t"\n', 1, "unknown key 'title' in the top level of the file"),
        (
            '[rubric]\nname = "t"\nversion = "1"\ndescription = "d"\n[levels]\ngrade = 1\n',
            5,
            "array of tables",
        ),
        ('[rubric]\nname = "t"\nversion = "1"\ndescripion = "d"\n', 4, "did you mean 'description'?"),
        (
            rubric_text(*GOOD_LEVELS, header="scale = [0, 1]\n"),
            8,
            "[[levels]] entry 1 (grade 2) has a grade that is not on the declared scale",
        ),
        (rubric_text(*GOOD_LEVELS, header="scale = [0, 1, 1, 2]\n"), 5, "array of distinct integers"),
        (
            rubric_text(*GOOD_LEVELS, header='scale = ["0"]\n'),
            5,
            "must be a non-empty array of distinct integers",
        ),
        (
            rubric_text(*GOOD_LEVELS).replace('"A test rubric."', '"d"\ngrade = 2'),
            5,
            "belong in a [[levels]]",
        ),
        (
            rubric_text(GOOD_LEVELS[0]).replace(
                'examples_at = ["a document of grade 2"]', 'examples_at = "one"'
            ),
            10,
            "examples_at in [[levels]] entry 1 (grade 2) is a string",
        ),
        (
            rubric_text(GOOD_LEVELS[0]).replace("grade = 2", 'grade = 2\nexamples_below = ["one", 2]'),
            8,
            "examples_below in [[levels]] entry 1 (grade 2) has an item that is not a string",
        ),
    ],
)
def test_schema_errors(tmp_path, text, line, fragment):
    error = load_error(write(tmp_path, text))
    assert error.line == line
    assert fragment in str(error)


def test_missing_file_and_bad_encoding(tmp_path):
    assert "rubric file not found" in str(load_error(tmp_path / "nope.toml"))
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[rubric]\nname = "caf\xe9"\n')
    error = load_error(path)
    assert error.line == 2
    assert "not UTF-8" in str(error)


# ---------------------------------------------------------------------------------------------------
# Identity: content hash, to_dict/from_dict


def test_content_hash_is_of_canonical_json():
    rubric = Rubric("n", "1", "d", (Level(1, "L", "Q?"),))
    canonical = (
        '{"description":"d","levels":[{"examples_at":[],"examples_below":[],"grade":1,"label":"L",'
        '"question":"Q?"}],"name":"n","scale":[1],"version":"1"}'
    )
    assert rubric.content_hash == hashlib.sha256(canonical.encode()).hexdigest()
    assert rubric.short_hash == rubric.content_hash[:12]
    assert len(rubric.short_hash) == 12


def test_content_hash_ignores_comments_whitespace_and_order(tmp_path):
    original = load_rubric(fixture("clean.toml"))
    text = fixture("clean.toml").read_text(encoding="utf-8")
    edited = "# a new comment\n\n" + text.replace("grade = 3\n", "grade   =   3   # top grade\n\n")
    edited = edited.replace('version = "1.0"', '  version = "1.0"  ')
    assert edited != text
    assert load_rubric(write(tmp_path, edited, "edited.toml")).content_hash == original.content_hash
    reordered = rubric_text(GOOD_LEVELS[1], GOOD_LEVELS[0], GOOD_LEVELS[2])
    assert (
        load_rubric(write(tmp_path, reordered, "a.toml")).content_hash
        == load_rubric(write(tmp_path, rubric_text(*GOOD_LEVELS), "b.toml")).content_hash
    )


def test_content_hash_changes_with_wording(tmp_path):
    original = load_rubric(fixture("clean.toml"))
    text = fixture("clean.toml").read_text(encoding="utf-8")
    reworded = text.replace("without opening another page?", "without opening any other page?")
    assert reworded != text
    assert load_rubric(write(tmp_path, reworded)).content_hash != original.content_hash
    bumped = text.replace('version = "1.0"', 'version = "1.1"')
    assert load_rubric(write(tmp_path, bumped, "bumped.toml")).content_hash != original.content_hash


def test_equality_ignores_source(tmp_path):
    text = fixture("clean.toml").read_text(encoding="utf-8")
    assert load_rubric(write(tmp_path, text)) == load_rubric(fixture("clean.toml"))


def test_to_dict_round_trip():
    rubric = load_rubric(fixture("clean.toml"))
    data = json.loads(json.dumps(rubric.to_dict()))
    assert data["scale"] == [0, 1, 2, 3]
    assert data["levels"][0]["grade"] == 3
    assert data["source"] == str(fixture("clean.toml"))
    back = Rubric.from_dict(data)
    assert back == rubric
    assert back.source == rubric.source
    assert back.content_hash == data["content_hash"]


def test_from_dict_refuses_edited_content():
    data = load_rubric(fixture("clean.toml")).to_dict()
    data["levels"][0]["question"] = "Is it the one?"
    with pytest.raises(ValidationError, match="does not match its content_hash"):
        Rubric.from_dict(data)


def test_from_dict_validates():
    data = load_rubric(fixture("clean.toml")).to_dict()
    data["levels"][1]["grade"] = "2"
    with pytest.raises(InputFormatError, match=r"grade in levels\[1\] is a string"):
        Rubric.from_dict(data)
    with pytest.raises(InputFormatError, match="did you mean 'version'"):
        Rubric.from_dict({"name": "n", "verison": "1"})


def test_constructor_sorts_and_validates():
    rubric = Rubric("n", "1", "d", (Level(0, "a", "A?"), Level(2, "c", "C?"), Level(1, "b", "B?")))
    assert [lv.grade for lv in rubric.levels] == [2, 1, 0]
    with pytest.raises(ValidationError):
        Rubric("n", "1", "d", ())
    with pytest.raises(ValidationError):
        Rubric("n", "1", "d", (Level(4, "a", "A?"),), scale=(0, 1))
    with pytest.raises(ValidationError):
        Level(True, "a", "A?")


# ---------------------------------------------------------------------------------------------------
# check_grade


def test_check_grade():
    rubric = load_rubric(fixture("clean.toml"))
    assert rubric.check_grade(0) == 0
    assert rubric.check_grade(3) == 3
    with pytest.raises(ValidationError) as info:
        rubric.check_grade(4, source="judgments.tsv", line=12)
    message = str(info.value)
    assert message.startswith("judgments.tsv:12: grade 4 is not on the scale of rubric 'docsearch' 1.0")
    assert "expected one of 0, 1, 2, 3" in message
    assert "Fix: " in message
    for bad in (-1, "2", 2.0, True, None):
        with pytest.raises(ValidationError):
            rubric.check_grade(bad)


def test_check_grade_accepts_declared_but_unused_grade(tmp_path):
    rubric = load_rubric(write(tmp_path, rubric_text(*GOOD_LEVELS, header="scale = [0, 1, 2, 3]\n")))
    assert rubric.check_grade(3) == 3


# ---------------------------------------------------------------------------------------------------
# Command line


def run(*args: str):
    return CliRunner().invoke(command, list(args))


def test_cli_lint_clean():
    rubric = load_rubric(fixture("clean.toml"))
    result = run("lint", str(fixture("clean.toml")))
    assert result.exit_code == 0
    assert result.stdout == f"rubric 'docsearch' version 1.0 (sha256 {rubric.short_hash}): clean\n"


def test_cli_lint_errors_exit_1():
    result = run("lint", str(fixture("best-answer.toml")))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 8  # 2 errors, 1 hedge, 4 levels without examples, the total
    assert lines[0].startswith(f"{fixture('best-answer.toml')}: level 3 (label): R001-comparative error")
    assert lines[-1].endswith("): 2 errors, 5 warnings")
    assert "'best-answer' version 0.1" in lines[-1]


def test_cli_lint_warnings_only_exit_0(tmp_path):
    path = write(tmp_path, rubric_text((1, "Gives a step", "Does it mostly give a step?"), GOOD_LEVELS[2]))
    result = run("lint", str(path))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1].endswith(": 0 errors, 1 warning")


def test_cli_lint_json():
    result = run("lint", "--format", "json", str(fixture("trec-dl.toml")))
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["rubric"]["name"] == "trec-dl"
    assert payload["rubric"]["version"] == "2019"
    assert (payload["errors"], payload["warnings"]) == (6, 6)  # 2 hedges, 4 levels without examples
    assert payload["findings"][0]["rule_id"] == "R001-comparative"
    assert payload["findings"][0]["level_grade"] == 3


@pytest.mark.parametrize("subcommand", ["lint", "show"])
def test_cli_bad_input_is_one_line_on_stderr(subcommand):
    result = run(subcommand, str(fixture("syntax-error.toml")))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"{fixture('syntax-error.toml')}:8: is not valid TOML")
    assert "Traceback" not in result.stderr


def test_cli_missing_file():
    result = run("lint", "no-such-rubric.toml")
    assert result.exit_code == 1
    assert (
        result.stderr
        == "no-such-rubric.toml: rubric file not found. Fix: check the path (relative paths start from the current folder)\n"
    )


def test_cli_show_plain():
    rubric = load_rubric(fixture("clean.toml"))
    result = run("show", str(fixture("clean.toml")))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[:3] == ["rubric: docsearch 1.0", "scale: 0, 1, 2, 3", f"sha256: {rubric.content_hash}"]
    # the label column is as wide as the longest label, "On the subject, no step" (23 characters)
    assert lines[4] == "grade  label                    question"
    assert lines[5] == f"    3  Answers the task         {QUESTION_3}"
    assert lines[
        8
    ] == "    0  Unrelated                Would the user learn nothing about the subject of the query " + (
        "from this document?"
    )


def test_cli_show_prints_each_levels_examples():
    result = run("show", str(fixture("clean.toml")))
    assert result.exit_code == 0
    # after the table: the examples of each grade as written in clean.toml
    tail = result.stdout.split("from this document?\n", 1)[1]
    policy = "The key-management policy page, which says keys must be rotated every 90 days but not how"
    steps = "A page listing the key-rotation steps but sending the user elsewhere for the final command"
    assert tail.splitlines() == [
        "",
        "examples of grade 3 (Answers the task)",
        "  at this level:",
        "    - The how-to page 'Rotate an API key' for the query 'rotate api key'",
        "  just below it:",
        f"    - {steps}",
        "",
        "examples of grade 2 (Gives a required step)",
        "  at this level:",
        f"    - {steps}",
        "  just below it:",
        f"    - {policy}",
        "",
        "examples of grade 1 (On the subject, no step)",
        "  at this level:",
        f"    - {policy}",
        "",
        "examples of grade 0 (Unrelated)",
        "  at this level:",
        "    - The pricing page, retrieved for the query 'rotate api key'",
    ]


def test_cli_show_without_examples_prints_the_table_only():
    result = run("show", str(Path(__file__).parent.parent / "app" / "fixtures" / "rubric.toml"))
    assert result.exit_code == 0 and "examples" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith("    0  Nothing for this task")


# ---------------------------------------------------------------------------------------------------
# The example project's rubrics (written separately; skipped until they exist)


@pytest.mark.skipif(
    not (EXAMPLES / "rubric.toml").exists() or not (EXAMPLES / "trec-dl-rubric.toml").exists(),
    reason="examples/docsearch rubrics not written yet",
)
def test_example_rubrics():
    assert lint(load_rubric(EXAMPLES / "rubric.toml")) == []
    flagged = lint(load_rubric(EXAMPLES / "trec-dl-rubric.toml"))
    assert any(f.severity == "error" for f in flagged)
    assert "R001-comparative" in {f.rule_id for f in flagged}


def test_empty_name_and_version():
    rubric = Rubric(" ", "", "d", (Level(1, "a", "Is it a?"), Level(0, "b", "Is it b?")))
    assert summary(lint(rubric)) == [
        ("R010-empty", "error", None, "name"),
        ("R010-empty", "error", None, "version"),
    ]


def test_show_on_a_terminal_uses_a_table(capsys):
    from qrelkit.cli.rubric import _show_rich

    rubric = load_rubric(fixture("clean.toml"))
    _show_rich(rubric)
    out = capsys.readouterr().out
    assert f"sha256 {rubric.content_hash}" in out
    assert "Answers the task" in out
    assert "docsearch 1.0" in out
