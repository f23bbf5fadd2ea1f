"""Options and helpers several commands share, declared once: ``--labellers`` (a list of names), ``--seed``,
``--run-model RUN=ID``, and for every command that reads QRELS and RUNS the convention axes, ``--profile``,
the reader options (one :class:`qrelkit.evaluation.plan.ReaderOptions`), ``--manifest``, ``--human`` and
``--estimator``, ``--bounds``, and the inputs read whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .._typing import (
    DEFAULT_ESTIMATOR,
    DEFAULT_INTERVAL,
    ESTIMATOR_CHOICES,
    FORMAT_CHOICES,
    INTERVAL_CHOICES,
    ON_DUPLICATE_CHOICES,
)
from ..measures.conventions import CHOICES, DEFAULT, GAIN_NAMES, PROFILE_NAMES, Conventions

__all__ = [
    "file_or_dataset",
    "labellers_option",
    "parse_labellers",
    "parse_run_models",
    "run_model_option",
    "seed_option",
]


def parse_labellers(
    ctx: click.Context | None, param: click.Parameter | None, value: str | None
) -> tuple[str, ...]:
    """``alice,bob`` -> ``("alice", "bob")``; nothing given -> ``()``. An empty or repeated name is a usage
    error (exit status 2) naming the value."""
    if value is None or value == "":
        return ()
    names = tuple(n.strip() for n in value.split(","))
    if any(not n for n in names):
        raise click.BadParameter(f"empty name in {value!r}; write names separated by commas: alice,bob")
    if len(set(names)) != len(names):
        raise click.BadParameter(f"a name is repeated in {value!r}")
    return names


def labellers_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--labellers alice,bob``, handed to the command as a tuple of names (empty when not given)."""
    return click.option("--labellers", callback=parse_labellers, metavar="NAME,NAME,...", help=help_text)


def seed_option(
    help_text: str, default: int | None = 0
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--seed N``: a whole number >= 0 (numpy's ``default_rng`` refuses a negative one); ``default=None``
    when the command draws a seed of its own and prints it."""
    return click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=default,
        show_default=default is not None,
        help=help_text,
    )


def parse_run_models(values: tuple[str, ...]) -> dict[str, str]:
    """``("bm25-llm=gpt-4o", ...)`` -> ``{"bm25-llm": "gpt-4o"}``; a value without ``=`` or a run named
    twice is a usage error (exit status 2)."""
    out: dict[str, str] = {}
    for value in values:
        run, sep, model = value.partition("=")
        if not sep or not run.strip() or not model.strip():
            raise click.BadParameter(f"{value!r} is not RUN=MODEL_ID", param_hint="--run-model")
        if run.strip() in out:
            raise click.BadParameter(f"run {run.strip()!r} is named twice", param_hint="--run-model")
        out[run.strip()] = model.strip()
    return out


run_model_option = click.option(
    "--run-model",
    "run_model",
    multiple=True,
    metavar="RUN=ID",
    help="the model a run was made with (recorded; a warning when it is the model that judged the qrels)",
)


def file_or_dataset(
    ctx: click.Context | None, param: click.Parameter | None, value: str | None
) -> str | None:
    """A file that exists, or a dataset's name (``irds:ID``, which the readers route to ir_datasets): a
    missing file is a usage error (exit status 2) naming it."""
    from pathlib import Path

    from ..formats import is_dataset

    if value is None or is_dataset(value):
        return value
    if not Path(value).is_file():
        what = "a directory" if Path(value).is_dir() else "not found"
        raise click.BadParameter(f"file {value!r}: {what}; name an existing file or a dataset (irds:ID)")
    return value


CONVENTION_FLAGS = [
    (
        "gain",
        "--gain",
        f"{'|'.join(GAIN_NAMES)}|{{grade:gain,...}}",
        "gain per grade [default: exponential, 2^g-1]",
    ),
    ("discount", "--discount", "log2|ln|log10|log<b>", "rank discount 1/log_b(i+1) [default: log2]"),
    ("ideal", "--ideal", None, "documents the ideal ordering is built from [default: judged]"),
    ("unjudged", "--unjudged", None, "unjudged returned documents count 0, or are dropped [default: zero]"),
    ("ties", "--ties", None, "order of equal scores [default: average over all orderings]"),
    ("precision", "--precision", None, "scores as read, or rounded to float32 [default: double]"),
    ("negative", "--negative", None, "meaning of negative grades [default: unjudged]"),
    ("missing_queries", "--missing-queries", None, "judged queries absent from the run [default: zero]"),
    ("extra_queries", "--extra-queries", None, "run queries absent from the judgments [default: skip]"),
    ("no_relevant", "--no-relevant", None, "queries with nothing relevant [default: zero]"),
    ("mean", "--mean", None, "what the mean divides by [default: defined, the queries with a value]"),
    ("cutoff_denominator", "--cutoff-denominator", None, "what P@k and Judged@k divide by [default: k]"),
    ("missing_score", "--missing-score", None, "the score of a judged query the run lacks [default: empty]"),
    ("counts", "--counts", None, "NumRel, NumRet, NumRelRet summarised by their mean or sum [default: mean]"),
    ("max_grade", "--max-grade", "N", "ERR's stop probability (2^g-1)/2^N [default: 4, as gdeval]"),
    ("persistence", "--persistence", "P", "RBP's persistence, between 0 and 1 [default: 0.8]"),
    ("rbp_gain", "--rbp-gain", None, "what a relevant document is worth to RBP [default: binary]"),
    (
        "rbp_residual",
        "--rbp-residual",
        None,
        "RBP_resid always, or only when something is unjudged [default: always]",
    ),
    (
        "iprec_cutoff",
        "--iprec-cutoff",
        None,
        "IPrec's t = recall * R rounded, or +0.9 truncated [default: round]",
    ),
    (
        "nonpositive",
        "--nonpositive",
        None,
        "documents scored <= 0 count as retrieved or not [default: retrieved]",
    ),
    (
        "ap_denominator",
        "--ap-denominator",
        None,
        "what AP divides by: R, or the relevant retrieved [default: relevant]",
    ),
    (
        "printed_decimals",
        "--printed-decimals",
        "none|N",
        "round each per-query value to N decimals, as a tool printing %.Nf [default: none]",
    ),
    (
        "summation",
        "--summation",
        None,
        "a mean's sum: exact, or added in numeric query order [default: exact]",
    ),
    (
        "by_measure",
        "--by-measure",
        "FAMILY(axis=value,...);...",
        "axes for one measure family, e.g. 'RR@k(ties=docid_asc)' [default: none]",
    ),
]


def convention_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add one flag per convention axis; unset flags keep the defaults (which are printed with results)."""
    for axis, flag, metavar, help_text in reversed(CONVENTION_FLAGS):
        choices = CHOICES.get(axis)
        kind = click.Choice(choices) if choices else str
        func = click.option(flag, axis, type=kind, default=None, metavar=metavar, help=help_text)(func)
    return func


def conventions_from(options: dict[str, Any], base: Conventions = DEFAULT) -> Conventions:
    """The conventions the flags ask for: ``--profile`` (if given, else ``base``), then each explicit
    axis flag overriding one axis of it."""
    profile = options.pop("profile", None)
    if profile is not None:
        from ..measures.profiles import get_profile

        base = get_profile(profile).conventions
    changes = {axis: options.pop(axis) for axis, *_ in CONVENTION_FLAGS if options.get(axis) is not None}
    for axis, *_ in CONVENTION_FLAGS:
        options.pop(axis, None)
    return base.with_(**changes) if changes else base


def profile_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--profile NAME``: start from a named tool's conventions; explicit axis flags override single axes."""
    return click.option(
        "--profile",
        "profile",
        type=click.Choice(list(PROFILE_NAMES)),
        default=None,
        help="start from a tool's conventions (see `qrelkit conventions --list`); axis flags override it",
    )(func)


def resolve(options: dict[str, Any], on_duplicate: str | None) -> tuple[Conventions, str]:
    """``--profile`` and the axis flags, resolved once per command: the conventions
    (:func:`conventions_from`) and the duplicate rule as the library resolves it
    (:func:`qrelkit.evaluation.plan.reader_options`: an explicit ``--on-duplicate`` wins, else the
    profile's reader option, else ``error``), with the profile announced on stderr. The profile's reader
    options and refusals are applied by the library, not here."""
    from ..evaluation.plan import ReaderOptions

    conv = conventions_from(options)
    profile = None
    if conv.profile is not None:
        from ..measures.profiles import tool_of

        profile = tool_of(conv)
    rule = ReaderOptions.given(on_duplicate=on_duplicate).resolved(profile).on_duplicate or "error"
    if profile is not None:  # a note: on stderr after the result (qrelkit.cli.output)
        from .output import note

        note(
            f"profile: {conv.profile_label()} ({profile.tool}); on_duplicate={rule}"
            + (f"; refuses: {', '.join(profile.refuses)}" if profile.refuses else "")
        )
    return conv, rule


def manifest_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--manifest``: the qrels' manifest (default: ``QRELS.manifest.json`` beside them, when present)."""
    return click.option(
        "--manifest",
        type=click.Path(dir_okay=False),
        default=None,
        help="the qrels' manifest (rubric, kappa, gate, unresolved pairs), carried into every output; a qrels "
        "file that no longer matches it is refused [default: QRELS.manifest.json when it exists]",
    )(func)


def provenance_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--provenance FILE``: the full provenance as JSON beside any format (:mod:`qrelkit.cli.output`)."""
    return click.option(
        "--provenance",
        type=click.Path(dir_okay=False, writable=True),
        default=None,
        help="also write the full provenance (version, every convention, measures, fingerprints, reader counts) "
        "to this JSON file; printed TSV and CSV carry only a two-line header",
    )(func)


def input_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that reads QRELS and RUNS shares: --input-format, --on-duplicate,
    --rubric, --manifest, --profile and the convention axes."""
    option: Any
    for option in reversed(
        [
            click.option("--input-format", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True,
                         help="format of QRELS and RUNS (auto: by suffix, TREC text otherwise)"),
            click.option("--on-duplicate", type=click.Choice(ON_DUPLICATE_CHOICES), default=None,
                         help="a document listed twice for one query: error, or keep the first/last/max-score "
                         "line [default: the profile's choice, else error]"),
            click.option("--rubric", type=click.Path(dir_okay=False),
                         help="rubric.toml: grades outside its scale are errors"),
            manifest_option,
            profile_option,
            convention_options,
        ]
    ):  # fmt: skip
        func = option(func)
    return func


def human_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--human HUMAN_QRELS``, ``--estimator`` and ``--interval``: estimate from a model's and people's
    judgments."""
    func = click.option("--estimator", type=click.Choice(ESTIMATOR_CHOICES), default=DEFAULT_ESTIMATOR, show_default=True,
                        help="with --human, or a model's qrels that `judge export --final` wrote with the "
                        "people's: ppi++ (power-tuned), ppi, human (people's grades alone) or model "
                        "(the model's alone, biased)")(func)  # fmt: skip
    func = click.option("--interval", "interval", type=click.Choice(INTERVAL_CHOICES), default=DEFAULT_INTERVAL,
                        show_default=True, help="the interval of ppi and ppi++: t (small-sample: t quantile with "
                        "|H| - 1 degrees of freedom, variances with ddof 1) or normal (ppi_py's)")(func)  # fmt: skip
    return click.option("--human", type=click.Path(dir_okay=False), default=None, metavar="HUMAN_QRELS",
                        help="people's grades of a random sample of queries; QRELS are then a model's grades "
                        "of every pair, and each number is a prediction-powered estimate")(func)  # fmt: skip


def bounds_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--bounds/--no-bounds``: each run's judgment bounds (:mod:`qrelkit.evaluation.bounds`)."""
    from ..formats.trec.small import (
        SMALL_FILE_BYTES as AUTO_BYTES,
    )  # evaluation.bounds.AUTO_BYTES, light to import

    return click.option(
        "--bounds/--no-bounds",
        "bounds",
        default=None,
        help="also each mean with the run's unjudged documents within the cutoff counted as 0 and as the "
        "highest grade (the rubric's, else the judgments'; added to the judgments, so R and the ideal count "
        "them), with Judged@k beside it: how far the missing judgments could move it. Reads and evaluates "
        f"each run again [default: on for the table printed when RUNS add up to at most {AUTO_BYTES >> 20} "
        "MB, else off; a file (-o) or a machine format holds them only with --bounds]",
    )(func)


def bounds_wanted(
    wanted: bool | None, table: bool, runs: tuple[str, ...], refused: dict[str, bool] | None = None
) -> bool:
    """Whether the judgment bounds are computed: when ``--bounds`` asks for them, or by default
    (:func:`qrelkit.evaluation.bounds.bounds_by_default`) when the ``table`` is printed (a file or a machine
    format holds them only with ``--bounds``). ``refused``: the options the bounds do not go with (named in
    the error when ``--bounds`` was given, turning the default off)."""
    if refuse_bounds(wanted, refused or {}) or wanted is False or not (wanted or table):
        return False  # (before the import: an evaluation without bounds does not load them)
    from ..evaluation.bounds import bounds_by_default

    return bool(wanted or bounds_by_default(runs))


def refuse_bounds(wanted: bool | None, refused: dict[str, bool]) -> bool:
    """Whether an option the bounds do not go with was given (a usage error when ``--bounds`` was)."""
    conflicts = [name for name, given in refused.items() if given]
    if wanted and conflicts:
        raise click.UsageError(
            f"--bounds reads each run whole and bounds the means of judgments in this process, which "
            f"{', '.join(conflicts)} does not: drop one of them"
        )
    return bool(conflicts)


def judgments_of(qrels: str, manifest: str | None, project: str | None = None) -> Any:
    """The manifest's meaning for these qrels (or None), read before any evaluation so a mismatch fails fast;
    with ``project``, its signature checked with that judging project's key (said on stderr after the
    result, once: :func:`qrelkit.cli.output.note`)."""
    from ..judgments.manifest import judgments_for
    from .output import note

    key = None
    if project is not None:
        from ..app.grades import manifest_key

        key = manifest_key(project)
    found = judgments_for(qrels, manifest, key=key)
    if found is not None and (project is not None or found["signature"] != "unsigned"):
        note(f"manifest {found['signature']}")
    elif project is not None:
        note(f"manifest: none beside {qrels}: nothing to verify with the project's key")
    return found


def human_of(qrels: str, human: str | None, manifest: str | None, estimator: str) -> str | None:
    """The people's qrels to estimate with: ``--human``, or those the model's qrels' manifest names
    (:func:`qrelkit.estimation.human_for` decides); which files, and why, said on stderr. Without either
    (no manifest), nothing more is imported."""
    from ..judgments.manifest import manifest_path

    if human is None and manifest is None and not manifest_path(qrels).is_file():
        return None
    from ..estimation import human_for
    from .output import warn

    choice = human_for(qrels, human, manifest, estimator)
    for line in choice.notes:
        click.echo(line, err=True)
    for warning in choice.warnings:
        warn(warning)
    return choice.path


def rubric_scale(rubric: str | None) -> tuple[Any, str | None]:
    """(scale, hash) of ``--rubric`` by :func:`qrelkit.rubric.rubric_scale`, whose module (and
    TOML reader) loads only when a rubric is given: a small evaluation imports nothing it does not use.
    Each command reads its rubric once, here."""
    if not rubric:
        return None, None
    from .. import rubric as rubrics

    return rubrics.rubric_scale(rubric)


def load_inputs(
    qrels_path: str, run_paths: tuple[str, ...], conv: Conventions | None, reader: Any
) -> tuple[Any, list[Any]]:
    """Judgments and runs read whole (for commands that need every row of every run) with ``reader``'s
    options (a :class:`qrelkit.evaluation.plan.ReaderOptions`), those unset taken from ``conv``'s profile
    (:func:`qrelkit.evaluation.files.read_whole`)."""
    from ..evaluation.files import read_whole

    return read_whole(qrels_path, run_paths, conv or DEFAULT, reader)


def load_runs(run_paths: tuple[str, ...] | list[str], reader: Any = None) -> list[Any]:
    """Runs read whole by the plan for every row (:func:`qrelkit.evaluation.plan.whole_plan`), with
    ``reader``'s options (a :class:`qrelkit.evaluation.plan.ReaderOptions`; unset ones the defaults)."""
    from ..evaluation.plan import read_runs_whole, whole_plan

    return read_runs_whole(whole_plan(None, list(run_paths), DEFAULT, reader))


def load_judgments(path: str, reader: Any = None) -> Any:
    """Judgments read whole by the plan for every row, with ``reader``'s options (as :func:`load_runs`)."""
    from ..evaluation.plan import read_judgments, whole_plan

    return read_judgments(whole_plan(path, (), DEFAULT, reader))


def reader_of(input_format: str, on_duplicate: str | None, scale: Any = None, rubric_hash: str | None = None, *,
              comments: bool | None = None) -> Any:  # fmt: skip
    """The reader options a command was given, as one value (:class:`qrelkit.evaluation.plan.ReaderOptions`)."""
    from ..evaluation.plan import ReaderOptions

    return ReaderOptions.given(input_format, on_duplicate, comments, scale, rubric_hash)
