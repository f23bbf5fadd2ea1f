"""``qrelkit compare``: is a new run better than the one it replaced, beyond statistical and labeller noise?"""

from __future__ import annotations

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
from .help import ShortHelp
from .options import (
    bounds_option,
    bounds_wanted,
    human_of,
    human_options,
    input_options,
    judgments_of,
    labellers_option,
    parse_run_models,
    provenance_option,
    reader_of,
    resolve,
    rubric_scale,
    run_model_option,
    seed_option,
)

__all__ = ["CompareCommand", "command", "read_human", "read_labellers"]

OUTPUT_SUFFIXES = {".json": "json", ".tsv": "tsv", ".csv": "csv", ".md": "markdown", ".tex": "latex", ".html": "html",
                   ".txt": "table"}  # fmt: skip
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


class CompareCommand(ShortHelp, NoiseFloorCommand):
    """``compare`` and ``report``: ``--noise-floor A B`` and help that starts short."""


@click.command(
    "compare",
    cls=CompareCommand,
    common={
        "measures": "a measure, repeatable [default: nDCG@10, R@100, Judged@10]",
        "baselines": "the run every other run is compared with, repeatable [default: the first run]",
        "noise": "two labellers' judgments (A.qrels B.qrels) or a project .db: the labeller-noise floor",
        "profile": "reproduce a tool's conventions: trec_eval, pytrec_eval, ir_measures, ranx, ...",
        "out_format": "table, tsv, csv, json, markdown, latex, html [default: table on a terminal, else tsv]",
    },
    example="qrelkit compare qrels.txt runs/bm25.run runs/rerank.run \\\n    --noise-floor alice.qrels bob.qrels",
)
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
              default=None, help="output format [default: table on a terminal, tsv otherwise; -o: by suffix]")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="write to this file")
@provenance_option
@bounds_option
@human_options
@run_model_option
@input_options
def command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], baselines: tuple[str, ...], all_pairs: bool,
            test: str, permutations: str, seed: int, resamples: int, correction: str, family: str, alpha: float,
            multi: str | None, noise: tuple[str, ...], labellers: tuple[str, ...], replicates: int, smoothing: float,
            power: bool, power_delta: float | None, out_format: str | None, output: str | None, input_format: str,
            on_duplicate: str | None, rubric: str | None, manifest: str | None, human: str | None, estimator: str,
            run_model: tuple[str, ...] = (), bounds: bool | None = None, provenance: str | None = None,
            interval: str = "t", **options: Any) -> None:  # fmt: skip
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
    from ..judgments.manifest import recorded_scale, with_run_models
    from ..measures.grammar import parse_all
    from .design import show_design_comparison
    from .output import resampling_progress

    if len(runs) < 2:
        raise click.UsageError("compare needs at least two runs: the baseline and a run to compare with it")
    if noise and len(noise) > 2:
        raise click.UsageError("--noise-floor takes two qrels files or one project .db")
    perms = _permutations(permutations)
    fmt = _output_format(out_format, output)
    judgments = with_run_models(judgments_of(qrels, manifest), parse_run_models(run_model))
    if human is None and show_design_comparison(
        qrels, manifest, runs, measures, baselines, out_format, output
    ):
        return  # a live queue's design chose what people judged: its own estimator
    human = human_of(qrels, human, manifest, estimator)
    conv, on_duplicate = resolve(options, on_duplicate)
    parsed = parse_all(measures) if measures else None
    scale, rubric_hash = rubric_scale(rubric)
    if human:  # estimating: both files on the scale the model's manifest records, when no rubric names one
        scale = recorded_scale(judgments, scale)
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
        provenance,
    )


def read_human(path: str | None, conv: Any, reader: Any) -> Any:
    """``--human``'s judgments (None without it), read as QRELS are (:func:`qrelkit.estimation.read_human`)."""
    if not path:
        return None
    from ..estimation import read_human as read

    return read(path, conv, reader)


def _output_format(out_format: str | None, output: str | None) -> str:
    """--format, else the output file's suffix, else the rule of :mod:`qrelkit.cli.output` (the table on a
    terminal, TSV otherwise)."""
    from .output import default_format

    if output and not out_format and Path(output).suffix.lower() not in OUTPUT_SUFFIXES:
        raise click.UsageError(
            f"cannot tell the output format from {output!r}: name it with --format "
            f"{'|'.join(COMPARE_FORMATS)}, or use a suffix .json, .tsv, .csv, .md, .tex, .html or .txt"
        )
    return default_format(out_format, OUTPUT_SUFFIXES.get(Path(output).suffix.lower()) if output else None)


def _write(comparison: Any, fmt: str, output: str | None, provenance: str | None = None) -> None:
    from ..report.compare import render_compare

    if provenance:
        from .output import write_provenance

        write_provenance(provenance, comparison.provenance())
    if output:
        from ..formats.outputs import write_output

        write_output(output, render_compare(comparison, fmt))
        click.echo(
            f"wrote {output} ({fmt}: the comparison with its options, conventions, fingerprints)", err=True
        )
    else:
        click.echo(render_compare(comparison, fmt, short=True), nl=False)
    if output or fmt != "table":  # the table prints them itself
        from .output import echo_warnings

        echo_warnings(comparison.results.warnings, printed=not output)
