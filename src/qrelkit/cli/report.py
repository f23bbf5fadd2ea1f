"""``qrelkit report``: one self-contained HTML page a team reads to decide."""

from __future__ import annotations

import shlex
import sys
from typing import Any

import click

from ..agreement.resample import COMPARE_SEED
from ..compare import TESTS
from .compare import CompareCommand, _permutations, read_human, read_labellers
from .options import (
    human_of,
    human_options,
    input_options,
    judgments_of,
    labellers_option,
    load_inputs,
    parse_run_models,
    reader_of,
    resolve,
    rubric_scale,
    run_model_option,
    seed_option,
)
from .output import resampling_progress

__all__ = ["command"]


@click.command(
    "report",
    cls=CompareCommand,
    common={
        "output": "the HTML page to write (required)",
        "measures": "a measure, repeatable [default: nDCG@10, R@100, Judged@10]",
        "baselines": "the run every other run is compared with [default: the first run]",
        "noise": "two labellers' judgments (A.qrels B.qrels) or a project .db: the labeller-noise floor",
        "profile": "reproduce a tool's conventions: trec_eval, pytrec_eval, ir_measures, ranx, ...",
    },
    example="qrelkit report qrels.txt runs/*.run \\\n    --noise-floor alice.qrels bob.qrels -o report.html",
)
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-m", "--measure", "measures", multiple=True,
              help="measure, repeatable [default: eval's, nDCG@10, R@100, Judged@10]; the first nDCG drives "
              "the per-query, conventions and explain sections")  # fmt: skip
@click.option(
    "--baseline",
    "baselines",
    multiple=True,
    help="the run(s) the others are compared with [default: the first]",
)
@click.option("--test", type=click.Choice(TESTS), default="randomization",
              show_default=True, help="the paired test (as in compare)")  # fmt: skip
@click.option("--permutations", default="auto", show_default=True, metavar="exact|N",
              help="randomisation test: exact enumeration, or N Monte Carlo sign flips")  # fmt: skip
@seed_option("seed of every random draw", default=COMPARE_SEED)
@click.option("--noise-floor", "noise", multiple=True, metavar="A.qrels B.qrels | project.db",
              help="two labellers' calibration judgments: the noise floor, the confusion matrix and marginals")  # fmt: skip
@labellers_option("with a project .db: the two labellers")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, writable=True),
              help="the HTML file to write (one file, readable offline)")  # fmt: skip
@human_options
@run_model_option
@input_options
def command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], baselines: tuple[str, ...], test: str,
            permutations: str, seed: int, noise: tuple[str, ...], labellers: tuple[str, ...], output: str,
            input_format: str, on_duplicate: str | None, rubric: str | None, manifest: str | None,
            human: str | None, estimator: str, run_model: tuple[str, ...] = (), interval: str = "t",
            **options: Any) -> None:  # fmt: skip
    """Write one HTML page for RUNS against QRELS: the bottom line, the comparison, the judgments, the
    conventions and the provenance.

    The page holds the summary with the comparison verdicts, the forest plot of differences (with the
    labeller-noise floor), per-query differences, ordered badly versus never retrieved, the judgments
    (manifest, calibration matrix, marginals), the conventions and how far each moves the means, the
    per-rank arithmetic of the queries that moved most, and the provenance. With --human, QRELS are a
    model's grades and the page adds every mean and difference estimated with HUMAN_QRELS, people's
    grades of a random sample of queries."""
    # long: its docstring is the command's --help; the body checks, reads the inputs once and writes one page
    from ..judgments.manifest import recorded_scale, with_run_models
    from ..measures.grammar import parse_all
    from ..report.dossier import build_dossier
    from ..report.page import report_page

    if len(runs) < 2:
        raise click.UsageError("a report compares runs: pass the baseline run and at least one other")
    if noise and len(noise) > 2:
        raise click.UsageError("--noise-floor takes two qrels files or one project .db")
    if not output.lower().endswith((".html", ".htm")):
        raise click.UsageError(f"the report is HTML: name the output file *.html (got {output!r})")
    perms = _permutations(permutations)
    judgments = with_run_models(judgments_of(qrels, manifest), parse_run_models(run_model))
    human = human_of(qrels, human, manifest, estimator)
    conv, on_duplicate = resolve(options, on_duplicate)
    scale, rubric_hash = rubric_scale(rubric)
    if human:  # estimating: both files on the scale the model's manifest records, when no rubric names one
        scale = recorded_scale(judgments, scale)
    reader = reader_of(input_format, on_duplicate, scale, rubric_hash)
    qrels_obj, run_objs = load_inputs(qrels, runs, conv, reader)
    pair = read_labellers(noise, labellers, scale, conv) if noise else None
    # long: the estimates, the noise floor and the report's draws, all read before one page is written
    with resampling_progress():
        dossier = build_dossier(
            qrels_obj, run_objs, parse_all(measures) if measures else None, conv, labellers=pair,
            judgments=judgments, command=shlex.join(["qrelkit", *sys.argv[1:]]), baseline=list(baselines) or None,
            test=test, permutations=perms, seed=seed, estimator=estimator, interval=interval,
            human_qrels=read_human(human, conv, reader),
        )  # fmt: skip
    if human is None:  # a live queue's design: its estimates, under its estimator, join the page
        from .design import design_values

        dossier = design_values(dossier, qrels, manifest, runs, measures, baselines)
    page = report_page(dossier)
    from ..formats.outputs import write_output

    write_output(output, page)
    _announce(dossier, output, len(page.encode("utf-8")))


def _announce(dossier: Any, output: str, size: int) -> None:
    """What was written and its warnings (stderr), then the answer: the bottom line and the page to open
    (stdout, the command's last lines)."""
    click.echo(
        f"wrote {output} ({size / 1e6:.2f} MB: {len(dossier.results.run_names)} runs, one page)", err=True
    )
    from .output import warn

    for warning in (*dossier.results.warnings, *(dossier.estimates.warnings if dossier.estimates else ())):
        warn(warning)
    sys.stderr.flush()
    click.echo("bottom line:")
    for sentence in dossier.comparison.bottom_line():
        click.echo(f"  {sentence}")
    click.echo(f"open {output}")
