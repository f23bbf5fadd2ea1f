"""The rubric as a prompt: the default template, a team's own (``--prompt FILE``), and their hashes.

A template is a Jinja template (jinja2 comes with the ``web`` extra) rendered with undefined variables
refused, so a misspelt variable is an error when the labeller is added, not an empty string in every
prompt. Its variables:

``rubric``
    ``name``, ``version``, ``description``
``levels``
    the rubric's levels, highest grade first (reversed for the order probe), each with ``grade``,
    ``label``, ``question``, ``examples_at`` and ``examples_below``
``scale``
    the grades, lowest first
``query``
    the query's text
``document``, ``title``, ``text``
    the document (its title and text, blank-line separated), its title, its text

That is all a prompt can see: never a run, a rank, a score or another labeller's grade.

The template's SHA-256 (:func:`template_hash`) is recorded with the labeller and every grade; the
rendered prompt's SHA-256 (:func:`prompt_hash`) keys the answer cache.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.errors import ValidationError
from qrelkit.formats.inputs import LIMITS
from qrelkit.rubric import Rubric

__all__ = [
    "DEFAULT_TEMPLATE",
    "MAX_TEMPLATE",
    "VARIABLES",
    "PairText",
    "check_template",
    "prompt_hash",
    "read_template",
    "render",
    "rubric_payload",
    "template_hash",
]

#: The largest template accepted, in bytes: the one bound of a template file
#: (:data:`qrelkit.formats.inputs.LIMITS`, ``"prompt"``), checked on its stored size before it is read.
MAX_TEMPLATE = LIMITS["prompt"][0]

VARIABLES = ("rubric", "levels", "scale", "query", "document", "title", "text")

DEFAULT_TEMPLATE = """\
You judge how relevant a document is to a search query, with the rubric below.

Rubric: {{ rubric.name }} (version {{ rubric.version }})
{{ rubric.description }}

Answer the questions of the levels in the order they are listed; the grade is the first level whose \
question is answered yes.
{% for level in levels %}
Grade {{ level.grade }}: {{ level.label }}
  Question: {{ level.question }}
{%- for example in level.examples_at %}
  Example at this grade: {{ example }}
{%- endfor %}
{%- for example in level.examples_below %}
  Example below this grade: {{ example }}
{%- endfor %}
{% endfor %}
Query: {{ query }}

Document:
{{ document }}

Reply with a JSON object only: {"grade": one of {{ scale | join(", ") }}, "reason": "one sentence saying why"}.
"""


@dataclass(frozen=True)
class PairText:
    """What a model labeller sees of one pair."""

    query: str
    title: str
    text: str

    @property
    def document(self) -> str:
        return f"{self.title}\n\n{self.text}" if self.title else self.text


def template_hash(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()


def read_template(path: str | Path | None) -> str:
    """The template of ``--prompt FILE`` (UTF-8, at most :data:`MAX_TEMPLATE` bytes), or the default."""
    if path is None:
        return DEFAULT_TEMPLATE
    from qrelkit.formats.inputs import read_input

    raw = read_input(Path(path), "prompt template", kind="prompt")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(
            "the prompt template is not UTF-8 text", source=str(path), fix="save it as UTF-8"
        ) from None
    return text


def rubric_payload(rubric: Rubric, *, reverse: bool = False) -> dict[str, Any]:
    """The rubric as a prompt or a ``--command`` program sees it (no file path, no hash)."""
    levels = [level.to_dict() for level in rubric.levels]
    if not levels:
        raise ValidationError(
            "the rubric has no levels: a model labeller cannot be asked for a grade on it",
            source=rubric.source,
            fix="give the rubric a [[levels]] table for every grade of its scale",
        )
    return {
        "name": rubric.name,
        "version": rubric.version,
        "description": rubric.description,
        "scale": list(rubric.scale),
        "levels": levels[::-1] if reverse else levels,
    }


def _environment() -> Any:
    try:
        import jinja2
    except ImportError:  # pragma: no cover - jinja2 is in the web extra, which the tests install
        raise ValidationError(
            "model labellers' prompts are Jinja templates, and jinja2 is not installed",
            fix="pip install 'qrelkit[web]'",
        ) from None
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


def check_template(template: str, source: str = "the prompt template") -> Any:
    """The compiled template; a syntax error is one line naming the template's line."""
    import jinja2

    env = _environment()
    try:
        return env.from_string(template)
    except jinja2.TemplateSyntaxError as exc:
        raise ValidationError(
            f"the prompt template is not a valid Jinja template: {exc.message}",
            source=source,
            line=exc.lineno,
            fix="fix the template's syntax ({{ variable }}, {% for ... %} ... {% endfor %})",
        ) from None


def render(template: str, rubric: Rubric, pair: PairText, *, reverse: bool = False,
           source: str = "the prompt template") -> str:  # fmt: skip
    """The prompt for one pair; an unknown variable is one line naming it and the variables there are."""
    import jinja2

    compiled = check_template(template, source)
    payload = rubric_payload(rubric, reverse=reverse)
    values = {
        "rubric": {k: payload[k] for k in ("name", "version", "description")},
        "levels": payload["levels"],
        "scale": payload["scale"],
        "query": pair.query,
        "document": pair.document,
        "title": pair.title,
        "text": pair.text,
    }
    try:
        return str(compiled.render(**values))
    except jinja2.UndefinedError as exc:
        raise ValidationError(
            f"the prompt template uses an unknown variable ({exc.message})",
            source=source,
            expected=", ".join(VARIABLES),
            fix="use only the variables listed (docs/model-labellers.md)",
        ) from None
    except jinja2.TemplateError as exc:
        raise ValidationError(
            f"the prompt template failed to render: {exc}", source=source, fix="fix the template"
        ) from None
