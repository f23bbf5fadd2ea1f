"""``qrelkit eval`` and ``qrelkit explain``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .._typing import ENGINE_CHOICES, FORMAT_CHOICES, MEASURE_NAMES, ON_DUPLICATE_CHOICES, RESULT_FORMATS
from ..measures.conventions import Conventions
from .help import ShortHelp
from .options import (
    bounds_option,
    bounds_wanted,
    convention_options,
    conventions_from,
    human_of,
    human_options,
    judgments_of,
    load_inputs,
    manifest_option,
    parse_run_models,
    profile_option,
    provenance_option,
    reader_of,
    refuse_bounds,
    resolve,
    rubric_scale,
    run_model_option,
)
from .output import default_format, echo_warnings, stdout_is_terminal, write_provenance

OUTPUT_SUFFIXES = {
    ".json": "json",
    ".tsv": "tsv",
    ".csv": "csv",
    ".txt": "trec",
    ".trec": "trec",
    ".md": "markdown",
    ".tex": "latex",
    ".html": "html",
}


def _with_progress(runs: tuple[str, ...], call: Callable[..., Any]) -> Any:
    """``call(progress=..., on_bytes=...)`` with the progress of reading when the runs are large enough to
    take a while (a bar on a terminal, one line per tenth otherwise: :mod:`qrelkit.cli.output`), else
    ``call()``."""
    from .output import progress

    total = sum(Path(p).stat().st_size for p in runs if Path(p).is_file())
    if total < PROGRESS_BYTES:
        return call()
    read = [0]

    def advance(n: int) -> None:
        read[0] += n
        bar.update(read[0])

    with progress("reading runs", total, unit="bytes") as bar:
        return call(progress=lambda i, n, what: bar.update(read[0], what or "evaluating"), on_bytes=advance)


#: Runs larger than this (in bytes, all files together) get a progress bar on a terminal (~1 s of reading).
PROGRESS_BYTES = 64 << 20


def _refuse_trec_eval_parsing(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        raise click.UsageError(
            "--trec-eval-parsing belongs to `qrelkit trec_eval` only: eval refuses the scores and grades C's "
            "atof/atol would read (nan, inf, 0x1p3, 1.5abc, abc as 0, a grade 1.5 as 1), because a NaN score "
            "has no rank and a typo read as a number is a silently wrong result; fix the file, or run "
            "`qrelkit trec_eval --trec-eval-parsing QRELS RUN` for trec_eval's own numbers",
            ctx=ctx,
        )


@click.command(
    "eval",
    cls=ShortHelp,
    common={
        "measures": "a measure, repeatable: nDCG@10, AP, R(rel=2)@100 [default: nDCG@10, R@100, Judged@10]",
        "profile": "reproduce a tool's numbers: trec_eval, pytrec_eval, ir_measures, ranx, sklearn, ...",
        "per_query": "also each query's values",
        "out_format": "table, tsv, csv, json, markdown, latex, html, trec [default: table on a terminal, else tsv]",
        "output": "write the numbers with their conventions and fingerprints to a file (format by suffix)",
    },
    example="qrelkit eval qrels.txt runs/*.run -m nDCG@10 -m AP \\\n    --profile trec_eval -o results.json",
)
@click.argument("qrels", type=click.Path())
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    help="measure, repeatable: nDCG@10, R(rel=2)@100, nDCG(gain=linear,ties=docid_desc)@10 "
    "[default: nDCG@10, R@100, Judged@10]. The measures: "
    + ", ".join(MEASURE_NAMES)
    + " (docs/conventions.md)",
)
@click.option("-q", "--per-query", is_flag=True, help="also print each query's values")
@click.option(
    "-f",
    "--format",
    "out_format",
    type=click.Choice(RESULT_FORMATS),
    default=None,
    help="output format [default: table on a terminal, tsv otherwise; -o: by suffix]",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="write the numbers with their conventions and fingerprints to this file",
)
@click.option(
    "--input-format",
    type=click.Choice(FORMAT_CHOICES),
    default="auto",
    show_default=True,
    help="format of QRELS and RUNS (auto: by suffix, TREC text otherwise)",
)
@click.option(
    "--on-duplicate",
    type=click.Choice(ON_DUPLICATE_CHOICES),
    default=None,
    help="a document listed twice for one query: error, or keep the first/last/max-score line (a run "
    "too large for the small path is then sorted on disk by DuckDB, not held whole) "
    "[default: the profile's choice, else error]",
)
@click.option(
    "--rubric", type=click.Path(dir_okay=False), help="rubric.toml: grades outside its scale are errors"
)
@click.option(
    "--memory-limit",
    metavar="SIZE",
    default=None,
    help="memory for the whole process (e.g. 2GB): interpreter, libraries, judgments and runs, read one "
    "at a time. A run that would not fit beside what is already held is streamed in any line order, "
    "keeping each query's top rows, or, when a measure needs every document, sorted on disk by DuckDB "
    "(its own memory limit set to what is left of SIZE less room for one batch, spilling to a temporary "
    "directory) and evaluated in batches of whole queries, with identical numbers. The judgments are "
    "read whole first: SIZE must leave room for them [default: no limit]",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINE_CHOICES),
    default="local",
    show_default=True,
    help="where to compute: this process, or Spark (qrelkit[spark]): QRELS and RUNS may then also be "
    "Parquet folders or table names; the same numbers, conventions and fingerprints",
)
@click.option(
    "--master",
    metavar="URL",
    default=None,
    help="Spark master for --engine spark (local[*], spark://host:7077, yarn, ...) [default: local[*], "
    "or the active session's]",
)
@click.option(
    "--comments/--no-comments",
    default=None,
    help="skip TREC lines beginning with '#' in QRELS and RUNS, as trec_eval 10 does [default: the "
    "profile's choice (on for trec_eval), else off]",
)
@click.option(
    "--strict",
    is_flag=True,
    help="refuse where the profile's tool would have stopped (trec_eval 10 without -c on a judged query "
    "the run lacks; ranx on differing query sets) instead of warning",
)
@click.option(
    "--diversity",
    is_flag=True,
    help="QRELS holds diversity judgments 'query_id subtopic doc_id grade' (the TREC Web track's, as "
    "ndeval reads them), for alpha_nDCG@k and ERR_IA@k [default measures then: alpha_nDCG@20, ERR_IA@20]",
)
@bounds_option
@human_options
@run_model_option
@manifest_option
@provenance_option
@click.option("--project", type=click.Path(dir_okay=False), default=None,
              help="the judging project the qrels were exported from: check the manifest's signature with its key "
              "(\"manifest verified\", or an error)")  # fmt: skip
@click.option("--trec-eval-parsing", is_flag=True, hidden=True, expose_value=False,
              callback=_refuse_trec_eval_parsing)  # fmt: skip
@profile_option
@convention_options
def eval_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], per_query: bool, out_format: str | None,
                 output: str | None, input_format: str, on_duplicate: str | None, rubric: str | None,
                 memory_limit: str | None, engine: str, master: str | None, manifest: str | None, project: str | None,
                 comments: bool | None, strict: bool, diversity: bool, human: str | None, estimator: str,
                 run_model: tuple[str, ...] = (), bounds: bool | None = None, provenance: str | None = None,
                 **options: Any) -> None:  # fmt: skip
    """Evaluate RUNS against QRELS.

    With no -m, reports nDCG@10 beside R@100 (did the run find the documents at all?) and Judged@10
    (how much of the top is judged). Conventions default to the chapter's: gain 2^g-1, discount
    1/log2(i+1), ideal from all judged documents, unjudged count 0, ties averaged; they are printed
    with the results and written into every output file. --profile NAME reproduces a tool's numbers
    (trec_eval, pytrec_eval, ir_measures, ranx, sklearn, trectools, gdeval, ...), its reader option for
    duplicate documents and its refusals; the profile's name is written with the conventions.
    With --human, QRELS are a model's grades and HUMAN_QRELS people's grades of a random sample of
    queries: each mean is estimated from both (docs/prediction-powered.md); --human writes
    table|json|markdown|tsv|csv|latex|html (not trec).
    """
    # long: its docstring is the command's --help; the body parses, calls one function and renders
    from ..evaluation.files import evaluate_planned_on, plan_inputs
    from ..evaluation.plan import bounds_refused
    from ..judgments.manifest import with_run_models
    from ..measures.grammar import parse_all

    file_format = out_format or (OUTPUT_SUFFIXES.get(Path(output).suffix.lower()) if output else None)
    if output and file_format in (None, "table"):
        raise click.UsageError(
            f"cannot tell the output format from {output!r}: name it with --format "
            "tsv|csv|json|markdown|latex|html|trec, or use a suffix .json, .tsv, .csv, .txt/.trec, .md, .tex or .html"
        )
    conv = _conventions_noted(options, on_duplicate, measures)
    judgments = with_run_models(judgments_of(qrels, manifest, project), parse_run_models(run_model))
    reader = reader_of(input_format, on_duplicate, *rubric_scale(rubric), comments=comments)
    if human is None and (manifest or _has_manifest(qrels)):
        from .design import show_design_estimates

        if show_design_estimates(qrels, manifest, runs, measures, out_format, output):
            return None  # a live queue's design chose what people judged: its own estimator
    if human := human_of(qrels, human, manifest, estimator):
        return show_estimates(qrels, human, runs, measures, conv, estimator, reader, engine, out_format, output,
                              file_format, bounds, provenance, options.pop("interval", "t"), judgments)  # fmt: skip
    want = bounds_wanted(bounds, out_format == "table" or (out_format is None and stdout_is_terminal()), runs,
                         bounds_refused(engine=engine, diversity=diversity, memory_limit=memory_limit))  # fmt: skip
    plan = plan_inputs(qrels, runs, parse_all(measures) if measures else None, conv, reader, engine=engine,
                       memory_limit=memory_limit, diversity=diversity, bounds=want)  # fmt: skip
    results = _with_progress(runs, lambda **bar: evaluate_planned_on(plan, master=master, strict=strict, bounds=want,
                                                                       **bar))  # fmt: skip
    _show(
        results.with_judgments(judgments),
        per_query,
        out_format,
        output,
        file_format,
        bool(bounds),
        provenance,
    )


def _has_manifest(qrels: str) -> bool:
    from ..judgments.manifest import manifest_path

    return manifest_path(qrels).is_file()


def _conventions_noted(
    options: dict[str, Any], on_duplicate: str | None, measures: tuple[str, ...]
) -> Conventions:
    """The conventions of the options, after a note on stderr for each trec_eval name they read differently."""
    from ..measures.grammar import trec_name_notes

    conv, _ = resolve(options, on_duplicate)
    for note in trec_name_notes(measures, conv):
        click.echo(note, err=True)
    return conv


def show_estimates(qrels: str, human: str, runs: tuple[str, ...], measures: tuple[str, ...], conv: Conventions,
                   estimator: str, reader: Any, engine: str, out_format: str | None, output: str | None, file_format: Any,
                   bounds: bool | None = None, provenance: str | None = None,
                   interval: str = "t", judgments: Any = None) -> None:  # fmt: skip
    """``eval --human``: :func:`qrelkit.estimation.estimate_files`, rendered, with its warnings on stderr
    (``--bounds`` refused: they bound the means of judgments, not estimates). ``judgments``: what the
    model's qrels mean (their manifest): its warnings are the estimates' too, in every format; on stderr
    they are not repeated (the people's qrels' choice said the predictor's line there already)."""
    from ..evaluation.plan import bounds_refused

    refuse_bounds(bounds, bounds_refused(human=True))
    from ..estimation import estimate_files
    from ..measures.grammar import parse_all
    from ..report.estimates import FORMATS, render_estimates

    fmt = default_format(out_format, file_format)
    if fmt not in FORMATS:
        raise click.UsageError(f"--human writes {'|'.join(FORMATS)}, not {fmt}: choose one with --format")
    if engine != "local":
        raise click.UsageError(f"--human computes in this process: drop --engine {engine}")
    estimates = estimate_files(qrels, human, runs, parse_all(measures) if measures else None, conv, reader,
                               estimator=estimator, interval=interval, judgments=judgments)  # fmt: skip
    if provenance:
        write_provenance(provenance, estimates.model.provenance() | {"estimation": estimates.settings()})
    text = render_estimates(estimates, fmt, short=not output)
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {output} ({fmt}: estimates with the estimator, |H|, |U|, fingerprints)", err=True)
    else:
        click.echo(text, nl=False)
    if output or fmt != "table":
        from ..estimation import source_warnings

        # the manifest's lines: in the output, and said on stderr already with the people's qrels' choice
        said = set((judgments or {}).get("warnings") or ()) | set(
            source_warnings(qrels, human) if judgments else ()
        )
        fresh = [w for w in dict.fromkeys((*estimates.warnings, *estimates.model.warnings)) if w not in said]
        echo_warnings(fresh, printed=not output)


def _show(
    results: Any,
    per_query: bool,
    out_format: str | None,
    output: str | None,
    file_format: Any,
    file_bounds: bool = False,
    provenance: str | None = None,
) -> None:
    """Write ``results`` to ``output`` (with the table on a terminal when no format was named) or print
    them in ``out_format`` (a table on a terminal, TSV otherwise), the warnings on stderr. The file holds
    the judgment bounds only when ``file_bounds`` (``--bounds`` given): the default is the terminal's.
    ``provenance``: the file ``--provenance`` names, for the full provenance as JSON."""
    from ..report import render

    if provenance:
        write_provenance(provenance, results.provenance())

    if output:
        from ..formats.outputs import write_output

        written = results if file_bounds else results.with_bounds(None)
        write_output(output, render(written, file_format, per_query=True))
        click.echo(
            f"wrote {output} ({file_format}: per-query values, means, conventions, fingerprints)", err=True
        )
        if out_format is None and stdout_is_terminal():
            _print_table(results, per_query)
        else:
            echo_warnings(results.warnings, printed=False)
        return
    fmt = default_format(out_format)
    if fmt == "table":
        _print_table(results, per_query)
    else:
        click.echo(render(results, fmt, per_query=per_query, short=True), nl=False)
        echo_warnings(results.warnings, printed=True)


def _print_table(results: Any, per_query: bool) -> None:
    from ..report import data_console, print_table

    print_table(results, per_query, data_console())


@click.command("explain")
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("run", type=click.Path(dir_okay=False))
@click.option("--query", "query_id", required=True, help="the query id to explain")
@click.option("-m", "--measure", default="nDCG@10", show_default=True, help="a DCG-family measure")
@click.option(
    "-f", "--format", "out_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("--input-format", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True)
@click.option(
    "--on-duplicate",
    type=click.Choice(ON_DUPLICATE_CHOICES),
    default=None,
    help="a document listed twice for one query [default: the profile's choice, else error]",
)
@profile_option
@convention_options
def explain_command(
    qrels: str,
    run: str,
    query_id: str,
    measure: str,
    out_format: str,
    input_format: str,
    on_duplicate: str | None,
    **options: Any,
) -> None:
    """Show the arithmetic of one query's nDCG: each rank's gain, discount and contribution, the ideal
    ordering, DCG, IDCG, nDCG, recall at the same cutoff, and how tied scores were resolved."""
    import json

    from .._version import __version__
    from ..evaluation.diagnose import explain
    from ..provenance import header
    from ..report.explain import render_explanation_text

    conv = conventions_from(options)
    qrels_obj, (run_obj,) = load_inputs(qrels, (run,), conv, reader_of(input_format, on_duplicate))
    ex = explain(qrels_obj, run_obj, query_id, measure, conv)
    if out_format == "json":
        payload = (
            header(
                qrels_fingerprint=qrels_obj.fingerprint.to_dict(),
                run_fingerprint=run_obj.fingerprint.to_dict(),
            )
            | ex.to_dict()
        )
        click.echo(json.dumps(payload, indent=2))
    else:
        click.echo(render_explanation_text(ex), nl=False)
        click.echo(
            f"qrels sha256:{qrels_obj.fingerprint.sha256[:16]} · run sha256:"
            f"{run_obj.fingerprint.sha256[:16]} · qrelkit {__version__}"
        )
