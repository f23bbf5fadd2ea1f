"""``qrelkit compare``: is a new run better than the one it replaced, beyond statistical and labeller noise?"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from .._typing import COMPARE_FORMATS
from ..agreement.resample import (
    COMPARE_SEED,
    MONTE_CARLO_PERMUTATIONS,
    NOISE_REPLICATES,
    PAIRED_BOOTSTRAP_RESAMPLES,
)
from ..compare import EXACT_AUTO_LIMIT, FAMILIES, MULTI, TESTS
from ..compare.stats import CORRECTIONS
from ..errors import ValidationError
from .agree import VariadicOptionCommand
from .options import (
    bounds_option,
    bounds_wanted,
    human_of,
    human_options,
    input_options,
    judgments_of,
    labellers_option,
    parse_run_models,
    reader_of,
    resolve,
    rubric_scale,
    run_model_option,
    seed_option,
)

__all__ = ["command", "read_human", "read_labellers"]

OUTPUT_SUFFIXES = {".json": "json", ".md": "markdown", ".tex": "latex", ".html": "html", ".txt": "table"}
SQLITE_MAGIC = b"SQLite format 3\x00"


class NoiseFloorCommand(VariadicOptionCommand):
    """``--noise-floor A.qrels B.qrels`` takes up to two following arguments (a project .db is one)."""

    option = "--noise-floor"

    def takes(self, taken: list[str], arg: str) -> bool:
        return len(taken) < 2 and not (taken and _is_sqlite(taken[0]))


def _is_sqlite(path: str) -> bool:
    p = Path(path)
    if not p.is_file():
        return False
    with p.open("rb") as fh:
        return fh.read(16) == SQLITE_MAGIC


def _permutations(value: str) -> int | str:
    if value in ("auto", "exact"):
        return value
    try:
        n = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not 'exact', 'auto' or a whole number") from None
    if n < 1:
        raise click.BadParameter("the number of permutations must be at least 1")
    return n


def read_labellers(
    paths: tuple[str, ...], names: tuple[str, ...], scale: Any = None, conventions: Any = None
) -> tuple[Any, Any]:
    """Two labellers' calibration judgments as Qrels: two qrels files (named by
    :func:`qrelkit.naming.labeller_names`, read with the reader options of ``conventions``' profile, as the
    main judgments are: :func:`qrelkit.evaluation.plan.reader_options`), or a judging project's .db
    (:func:`qrelkit.app.labeller_pairs.calibration_qrels`: the two labellers with calibration grades, every
    pair of labellers sharing calibration queries, or the two named ``A,B``; which is said on stderr)."""
    from ..evaluation.plan import reader_options
    from ..formats import read_qrels
    from ..measures.conventions import DEFAULT
    from ..naming import labeller_names

    if len(paths) == 2:
        options = reader_options(conventions or DEFAULT)
        first, second = (
            read_qrels(p, scale=scale, name=n, comments=options.comments, on_duplicate=options.on_duplicate)
            for p, n in zip(paths, labeller_names(paths), strict=True)
        )
        return first, second
    (path,) = paths
    if not _is_sqlite(path):
        raise ValidationError(
            "--noise-floor takes two labellers' qrels files or one judging project .db",
            source=path,
            got=path,
            fix="pass --noise-floor alice.qrels bob.qrels, or --noise-floor project.db",
        )
    from ..app.labeller_pairs import calibration_qrels
    from ..compare.noise import labeller_pairs_note

    first, second = calibration_qrels(path, list(names) or None)
    note = labeller_pairs_note(first)
    if note:
        click.echo(note, err=True)
    return first, second


@click.command("compare", cls=NoiseFloorCommand)
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--measure", "measures", multiple=True,
              help="measure, repeatable [default: eval's, nDCG@10, R@100, Judged@10]")  # fmt: skip
@click.option("--baseline", "baselines", multiple=True,
              help="run compared against every other run, repeatable [default: the first run]")  # fmt: skip
@click.option("--all-pairs", is_flag=True, help="compare every two runs (the earlier one as baseline)")
@click.option("--test", type=click.Choice(TESTS),
              default="randomization", show_default=True, help="the paired test")  # fmt: skip
@click.option("--permutations", default="auto", show_default=True, metavar="exact|N",
              help="randomization: enumerate every sign vector, or draw N; auto: exact when at most "
              f"{EXACT_AUTO_LIMIT} queries differ, else {MONTE_CARLO_PERMUTATIONS}")  # fmt: skip
@seed_option("seed of every random draw", default=COMPARE_SEED)
@click.option("--bootstrap", "resamples", type=click.IntRange(min=1), default=PAIRED_BOOTSTRAP_RESAMPLES, show_default=True,
              help="paired bootstrap resamples (interval, bootstrap test, noise floor)")  # fmt: skip
@click.option("--correction", type=click.Choice(CORRECTIONS), default="holm",
              show_default=True, help="multiple-comparison correction")  # fmt: skip
@click.option("--family", type=click.Choice(FAMILIES), default="pairs-x-measures",
              show_default=True, help="what one correction covers: each measure's pairs, or all")  # fmt: skip
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="significance level; intervals are at 1 - alpha")  # fmt: skip
@click.option("--multi", type=click.Choice(MULTI), default=None,
              help="with 3+ runs: Tukey HSD (always shown with the ANOVA), or also the randomised Tukey HSD")  # fmt: skip
@click.option("--noise-floor", "noise", multiple=True, metavar="A.qrels B.qrels | project.db",
              help="two labellers' judgments of the calibration queries: the labeller-noise floor")  # fmt: skip
@labellers_option("with a project .db: the two labellers")
@click.option("--replicates", type=click.IntRange(min=1), default=NOISE_REPLICATES, show_default=True,
              help="relabelled copies for the simulated noise floor")  # fmt: skip
@click.option("--smoothing", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="add-s smoothing of the relabelling channel")  # fmt: skip
@click.option("--power", is_flag=True, help="topic-set size for power 0.8 (paired t; with --human: the "
              "human-judged queries the estimator needs)")  # fmt: skip
@click.option("--power-delta", type=float, default=None, help="the difference to detect [default: observed]")
@click.option("-f", "--format", "out_format", type=click.Choice(COMPARE_FORMATS),
              default=None, help="output format [default: table; -o: by suffix]")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="write to this file")
@bounds_option
@human_options
@run_model_option
@input_options
def command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], baselines: tuple[str, ...], all_pairs: bool,
            test: str, permutations: str, seed: int, resamples: int, correction: str, family: str, alpha: float,
            multi: str | None, noise: tuple[str, ...], labellers: tuple[str, ...], replicates: int, smoothing: float,
            power: bool, power_delta: float | None, out_format: str | None, output: str | None, input_format: str,
            on_duplicate: str | None, rubric: str | None, manifest: str | None, human: str | None, estimator: str,
            run_model: tuple[str, ...] = (), bounds: bool | None = None, interval: str = "t", **options: Any) -> None:  # fmt: skip
    """Compare RUNS evaluated against QRELS: paired tests, corrected p-values, intervals, effect sizes.

    Each --baseline (default: the first run) is compared with every other run, per measure: the
    means, the difference, wins/ties/losses, the t-interval and the paired bootstrap interval of the
    mean difference, the effect size, the test's p-value and the p-value adjusted over the family. With
    three or more runs: a two-way ANOVA (queries as blocks) and Tukey's HSD. --noise-floor adds how far
    swapping one labeller for another moves each difference, and a verdict per pair. --human adds each
    difference estimated from QRELS (a model's grades) and HUMAN_QRELS (people's, a random sample).
    """
    # long: its docstring is the command's --help; the body checks, reads the inputs once and calls one function
    from ..compare import compare_files
    from ..evaluation.plan import bounds_refused
    from ..judgments.manifest import with_run_models
    from ..measures.grammar import parse_all

    if len(runs) < 2:
        raise click.UsageError("compare needs at least two runs: the baseline and a run to compare with it")
    if noise and len(noise) > 2:
        raise click.UsageError("--noise-floor takes two qrels files or one project .db")
    perms = _permutations(permutations)
    fmt = _output_format(out_format, output)
    judgments = with_run_models(judgments_of(qrels, manifest), parse_run_models(run_model))
    human = human_of(qrels, human, manifest, estimator)
    conv, on_duplicate = resolve(options, on_duplicate)
    parsed = parse_all(measures) if measures else None
    scale, rubric_hash = rubric_scale(rubric)
    chosen = dict(baseline=list(baselines) or None, all_pairs=all_pairs, test=test, permutations=perms, seed=seed,
                  correction=correction, family=family, alpha=alpha, multi=multi, bootstrap=resamples, power=power,
                  power_delta=power_delta)  # fmt: skip
    want = bounds_wanted(bounds, fmt == "table" and not output, runs, bounds_refused(human=bool(human)))
    reader = reader_of(input_format, on_duplicate, scale, rubric_hash)
    # long: what is read, and how, is the library's (compare_files); the noise floor's files are read after the runs
    with resampling_progress():
        comparison = compare_files(
            qrels, runs, parsed, conv, reader, bounds=want, human=human, **({"estimator": estimator} if noise or human else {}),
            **({"interval": interval} if human else {}),
            labellers=(lambda: read_labellers(noise, labellers, scale, conv)) if noise else None,
            noise_replicates=replicates, noise_smoothing=smoothing, **chosen,
        )  # fmt: skip
    _write(
        replace(comparison, results=comparison.results.with_judgments(judgments)),
        fmt,
        output,
    )


def read_human(path: str | None, conv: Any, reader: Any) -> Any:
    """``--human``'s judgments (None without it), read as QRELS are (:func:`qrelkit.estimation.read_human`)."""
    if not path:
        return None
    from ..estimation import read_human as read

    return read(path, conv, reader)


#: A draw of at least this many sign vectors, resamples or trials gets a progress bar on a terminal.
PROGRESS_DRAWS = 1_000_000


@contextmanager
def resampling_progress() -> Iterator[None]:
    """A progress bar on stderr for each long draw of a comparison (:data:`PROGRESS_DRAWS` or more), on a
    terminal only (as ``qrelkit eval`` shows its reading), removed when done."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..agreement.resample import resample_progress

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True)  # fmt: skip
    tasks: dict[str, Any] = {}

    def tick(what: str, done: int, total: int) -> None:
        if total < PROGRESS_DRAWS:
            return
        if not tasks:
            bar.start()
        if what not in tasks:
            tasks[what] = bar.add_task(what, total=total)
        bar.update(tasks[what], completed=done)

    try:
        with resample_progress(tick):
            yield
    finally:
        if tasks:
            bar.stop()


def _output_format(out_format: str | None, output: str | None) -> str:
    """--format, else the output file's suffix, else the table."""
    fmt = out_format or (OUTPUT_SUFFIXES.get(Path(output).suffix.lower()) if output else "table")
    if fmt is None:
        raise click.UsageError(
            f"cannot tell the output format from {output!r}: name it with --format "
            "json|markdown|latex|html|table, or use a suffix .json, .md, .tex, .html or .txt"
        )
    return fmt


def _write(comparison: Any, fmt: str, output: str | None) -> None:
    from ..report.compare import render_compare

    if output:
        from ..formats.outputs import write_output

        write_output(output, render_compare(comparison, fmt))
        click.echo(
            f"wrote {output} ({fmt}: the comparison with its options, conventions, fingerprints)", err=True
        )
    else:
        click.echo(render_compare(comparison, fmt), nl=False)
    if output or fmt != "table":  # the table prints them itself
        for warning in comparison.results.warnings:
            click.echo(f"warning: {warning}", err=True)
