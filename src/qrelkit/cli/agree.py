"""``qrelkit agree``, ``qrelkit leverage`` and ``qrelkit adjudicate-files``: from two labellers to final qrels."""

from __future__ import annotations

from typing import Any

import click

from ..agreement.group import STATISTICS
from ..agreement.kappa import WEIGHTINGS
from ..agreement.resample import QUERY_BOOTSTRAP_RESAMPLES, QUERY_BOOTSTRAP_SEED
from ..judgments.adjudication import DEFAULT_POLICIES, UNDECIDED_POLICIES
from . import EXIT_GATE_FAILED, alias_of
from .options import seed_option

__all__ = ["RunsCommand", "VariadicOptionCommand", "adjudicate_alias", "adjudicate_command", "command",
           "leverage_command"]  # fmt: skip


class VariadicOptionCommand(click.Command):
    """A command whose option :attr:`option` takes the following arguments, up to the next option or until
    :meth:`takes` says no, as if each had been given with the option (``--runs A B -k 10`` is ``--runs A
    --runs B -k 10``). Put such an option after the positional arguments."""

    option = "--runs"

    def takes(self, taken: list[str], arg: str) -> bool:
        """Whether ``arg`` is one more value, given the values taken so far (every one, by default)."""
        return True

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                out += args[i:]
                break
            if arg != self.option:
                out.append(arg)
                i += 1
                continue
            i += 1
            taken: list[str] = []
            while i < len(args) and not args[i].startswith("-") and self.takes(taken, args[i]):
                out += [self.option, args[i]]
                taken.append(args[i])
                i += 1
            if not taken:
                out.append(self.option)  # no value: click reports it
        return super().parse_args(ctx, out)


class RunsCommand(VariadicOptionCommand):
    """``--runs`` takes every following argument up to the next option; ``--runs A --runs B`` works too."""


def _read(paths: tuple[str, ...], rubric: str | None, *, warn: bool = True) -> Any:
    """:func:`qrelkit.judgments.labellers.read_labellers`, printing the warning of an inferred scale."""
    from ..judgments.labellers import read_labellers

    found = read_labellers(paths, rubric)
    if warn and found.scale.warning:
        click.echo(f"warning: {found.scale.warning}", err=True)
    return found


def _read_runs(paths: tuple[str, ...]) -> list[Any]:
    from .options import load_runs

    return load_runs(paths)


def _write_or_echo(text: str, output: str | None, what: str) -> None:
    if output:
        from ..formats.outputs import write_output

        write_output(output, text)
        click.echo(f"wrote {output} ({what})", err=True)
    else:
        click.echo(text, nl=False)


# -- agree ----------------------------------------------------------------------------------------------


@click.command("agree", cls=RunsCommand)
@click.argument("qrels", metavar="A.qrels B.qrels [C.qrels ...]", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--rubric", type=click.Path(dir_okay=False), help="rubric.toml: its full scale weights kappa")
@click.option(
    "--weights",
    type=click.Choice(WEIGHTINGS),
    default="linear",
    show_default=True,
    help="kappa weights, from grade values over the full scale",
)
@click.option(
    "--min-kappa",
    type=click.FloatRange(-1, 1),
    default=None,
    help="gate: pass only if the lower bound of the statistic's 95% interval is at least this; exit 3 if not",
)
@click.option(
    "--statistic",
    type=click.Choice(list(STATISTICS)),
    default=None,
    help="what the gate compares: kappa (every two labellers pass; normal interval), mean_kappa, "
    "alpha_interval, alpha_ordinal, fleiss (query-bootstrap interval) [default: kappa for two files, "
    "mean_kappa for more]",
)
@click.option(
    "--bootstrap",
    type=click.IntRange(min=1),
    default=QUERY_BOOTSTRAP_RESAMPLES,
    show_default=True,
    help="query resamples (the judging app and the manifest use the same default)",
)
@seed_option("bootstrap seed", default=QUERY_BOOTSTRAP_SEED)
@click.option(
    "--runs",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="runs for metric-level agreement: nDCG@k and R@k under each labeller (--runs R1 R2 ...)",
)
@click.option("-k", type=click.IntRange(min=1), default=10, show_default=True, help="cutoff for --runs")
@click.option(
    "-m",
    "--measure",
    default=None,
    help="with --runs: the measure the runs are ordered by for the ranking agreement [default: nDCG@k]",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="with --runs: the paired tests' level (compare's test and correction over every pair of runs)",
)
@click.option("--show-disagreements", is_flag=True, help="list every disagreeing pair")
@click.option(
    "-f",
    "--format",
    "out_format",
    type=click.Choice(["table", "json"]),
    default=None,
    help="output format [default: table; json when -o ends in .json]",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="write to FILE")
def command(
    qrels: tuple[str, ...],
    rubric: str | None,
    weights: str,
    min_kappa: float | None,
    statistic: str | None,
    bootstrap: int,
    seed: int,
    runs: tuple[str, ...],
    k: int,
    measure: str | None,
    alpha: float,
    show_disagreements: bool,
    out_format: str | None,
    output: str | None,
) -> None:
    """Agreement between labellers' judgments: two files A.qrels B.qrels, or more.

    For two labellers: weighted kappa (linear by default) with its Fleiss-Cohen-Everitt standard error and
    95% interval, a bootstrap interval over queries, the confusion matrix over the full scale, per-grade
    marginals, per-query agreement, Krippendorff's alpha (ordinal and interval) and, with --runs, nDCG@k
    and R@k under each labeller's judgments, and the decisions the two lead to: Kendall's tau-b and tau_AP
    (B's order against A's, and the mean of both directions) of the runs ordered by -m's mean, each with
    its query-bootstrap interval, the pairs of runs whose order flips, and how many differences significant
    under A are reversed or lost under B (with two runs or more).

    For three or more (or two with a --statistic other than kappa): the mean pairwise weighted kappa,
    Krippendorff's alpha (interval and ordinal) and Fleiss' kappa, each with its query-bootstrap interval,
    the matrix of pairwise weighted kappas, and the gate on the chosen statistic (mean_kappa by default).

    Exit status: 0 on success (and when the gate passes), 3 when --min-kappa is given and the lower
    bound of the interval falls below it, 1 on bad input, 2 on bad usage.
    """
    # long: the docstring is the command's help, which lists everything agree reports
    from ..judgments.labellers import agreement_of, is_group

    if len(qrels) < 2:
        raise click.UsageError("pass two or more qrels files, one per labeller")
    if runs and is_group(len(qrels), statistic):
        raise click.UsageError("--runs compares two labellers; pass two qrels files and no group --statistic")
    if measure is not None and not runs:
        raise click.UsageError("-m orders runs: pass it with --runs R1 R2 ...")
    found = _read(qrels, rubric)
    run_objs = _read_runs(runs) if runs else []
    doc = agreement_of(
        found, weights=weights, statistic=statistic, min_kappa=min_kappa, n_resamples=bootstrap, seed=seed,  # type: ignore[arg-type]  # --weights is a click.Choice of the Literal's members
        runs=run_objs, k=k,
    )  # fmt: skip
    if len(run_objs) >= 2:  # an order needs two runs
        doc = _with_decisions(doc, found, run_objs, measure or f"nDCG@{k}", alpha, bootstrap, seed)
    _finish(doc, out_format, output, show_disagreements)


def _with_decisions(doc: Any, found: Any, runs: list[Any], measure: str, alpha: float, resamples: int,
                    seed: int) -> Any:  # fmt: skip
    """``doc`` with :func:`qrelkit.compare.decisions.decision_agreement` of the two labellers over ``runs``."""
    from dataclasses import replace

    from ..compare import Options
    from ..compare.decisions import decision_agreement

    (qa, qb), (na, nb) = found.qrels, found.names
    decisions = decision_agreement(qa, qb, runs, measure, labellers=(na, nb), options=Options(alpha=alpha, seed=seed),
                                   n_resamples=resamples, seed=seed)  # fmt: skip
    return replace(doc, decisions=decisions)


def _finish(doc: Any, out_format: str | None, output: str | None, show_disagreements: bool) -> None:
    from ..report.agreement import render_agreement

    gate_result = doc.calibration.gate
    fmt = out_format or ("json" if output and output.endswith(".json") else "table")
    _write_or_echo(render_agreement(doc, fmt, show_disagreements=show_disagreements), output, fmt)
    if output and gate_result is not None:
        click.echo(f"gate: {gate_result.message}", err=True)
    if gate_result is not None and not gate_result.passed:
        click.get_current_context().exit(EXIT_GATE_FAILED)


# -- leverage ------------------------------------------------------------------------------------------


@click.command("leverage")
@click.argument("qrels", type=click.Path(dir_okay=False))
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-k", type=click.IntRange(min=1), default=10, show_default=True, help="nDCG cutoff")
@click.option(
    "--top", type=click.IntRange(min=0), default=20, show_default=True, help="rows to show (0: all)"
)
@click.option("--rubric", type=click.Path(dir_okay=False), help="rubric.toml: the scale regrades stay within")
@click.option("-f", "--format", "out_format", type=click.Choice(["table", "tsv", "json"]), default=None,
              help="output format [default: by -o's suffix (.json, .tsv, else table), a table on a terminal, "
              "tsv otherwise]")  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="write to FILE")
def leverage_command(
    qrels: str,
    runs: tuple[str, ...],
    k: int,
    top: int,
    rubric: str | None,
    out_format: str | None,
    output: str | None,
) -> None:
    """Rank the judgments of QRELS by the largest nDCG@k swing a one-step regrade would cause on RUNS.

    For each judgment, the grade one step down and one step up (within the scale) are tried, every other
    grade held; leverage_max is the largest absolute change of that query's nDCG@k over the runs. The
    judgments at the top are the ones worth a second look.
    """
    # long: its docstring is the command's --help; the body reads, calls one function and renders
    from ..judgments.leverage import regrade_leverage, retrieval_ranks
    from .options import load_judgments, reader_of

    scale = None
    if rubric:
        from ..rubric import load_rubric

        scale = load_rubric(rubric).scale
    q = load_judgments(qrels, reader_of("auto", None, scale))
    run_objs = _read_runs(runs)
    table = regrade_leverage(q, run_objs, k, scale)
    shown = table.head(top) if top else table
    shown = shown.join(retrieval_ranks(run_objs, shown), on=["query_id", "doc_id"], how="left")
    from pathlib import Path

    from ..provenance import header
    from ..report.agreement import render_leverage
    from .output import default_format

    suffixes = {".json": "json", ".tsv": "tsv", ".txt": "table"}
    fmt = (
        (out_format or suffixes.get(Path(output).suffix.lower(), "table"))
        if output
        else default_format(out_format)
    )
    head = header(qrels={"name": q.name, "fingerprint": q.fingerprint.to_dict()},
                  runs=[{"name": r.name, "fingerprint": r.fingerprint.to_dict()} for r in run_objs])  # fmt: skip
    _write_or_echo(render_leverage(table, shown, k, fmt, head), output, fmt)


# -- adjudicate ----------------------------------------------------------------------------------------


@click.command("adjudicate-files", cls=RunsCommand)
@click.argument("qrels_a", metavar="A.qrels", type=click.Path(dir_okay=False))
@click.argument("qrels_b", metavar="B.qrels", type=click.Path(dir_okay=False))
@click.option(
    "--runs", multiple=True, type=click.Path(dir_okay=False), help="runs to order the queue by leverage"
)
@click.option(
    "-k", type=click.IntRange(min=1), default=10, show_default=True, help="nDCG cutoff for leverage"
)
@click.option(
    "--decisions",
    type=click.Path(dir_okay=False),
    help="adjudicated grades, query_id<TAB>doc_id<TAB>grade per disagreeing pair: merge into final qrels",
)
@click.option(
    "--default",
    "default",
    type=click.Choice(DEFAULT_POLICIES),
    default=None,
    help="grade for a disagreeing pair without a decision (otherwise that is an error), recorded",
)
@click.option(
    "--allow-unresolved",
    type=click.Choice(["leave-out"]),
    default=None,
    help="export although disagreeing pairs have no decision: leave them out of the final qrels (they "
    "then score as unjudged); the count is recorded in the manifest [default: refuse]",
)
@click.option(
    "--allow-override",
    is_flag=True,
    help="accept decisions for pairs the labellers agreed on (each override is counted in the manifest)",
)
@click.option("--rubric", type=click.Path(dir_okay=False), help="rubric.toml, recorded in the manifest")
@click.option(
    "--min-kappa",
    type=click.FloatRange(-1, 1),
    default=0.6,
    show_default=True,
    help="gate recorded in the manifest (lower bound of kappa's 95% interval)",
)
@click.option(
    "--relevance-threshold",
    type=int,
    default=1,
    show_default=True,
    help="lowest grade binary measures count as relevant, recorded in the manifest",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, writable=True))
def adjudicate_command(
    qrels_a: str,
    qrels_b: str,
    runs: tuple[str, ...],
    k: int,
    decisions: str | None,
    default: str | None,
    allow_unresolved: str | None,
    allow_override: bool,
    rubric: str | None,
    min_kappa: float,
    relevance_threshold: int,
    output: str,
) -> None:
    """Adjudicate two labellers' disagreements in their qrels files (a judging project: `judge decide`).

    `qrelkit adjudicate`, its old name, works for one more release.

    With --runs: write the queue (-o queue.tsv) of disagreeing pairs, those whose grade moves nDCG@k
    most first, with the runs and ranks that retrieved each. With --decisions: merge the decisions into
    final qrels (-o final.qrels) and write final.qrels.manifest.json beside them (rubric, scale,
    labellers, calibration kappa and gate, adjudication counts).
    """
    if bool(runs) == bool(decisions):  # neither, or both
        what = "pass --runs RUN... to write the adjudication queue, or --decisions FILE to merge decisions"
        raise click.UsageError(what + (", not both" if runs else " into final qrels"))
    found = _read((qrels_a, qrels_b), rubric, warn=False)
    if runs:
        qa, qb = found.qrels
        _write_queue(qa, qb, _read_runs(runs), k, output)
        return
    if found.scale.warning:
        click.echo(f"warning: {found.scale.warning}", err=True)
    if default and allow_unresolved:
        raise click.UsageError("pass --default or --allow-unresolved, not both")
    undecided = default or allow_unresolved or "refuse"
    assert decisions is not None and undecided in UNDECIDED_POLICIES
    _merge(found, decisions, undecided, allow_override, min_kappa, relevance_threshold, output)


def _write_queue(qa: Any, qb: Any, run_objs: list[Any], k: int, output: str) -> None:
    from ..judgments.leverage import disagreement_leverage, retrieval_ranks

    queue = disagreement_leverage(qa, qb, run_objs, k)
    queue = queue.join(retrieval_ranks(run_objs, queue), on=["query_id", "doc_id"], how="left")
    from ..formats.outputs import write_output

    write_output(output, queue.write_csv(separator="\t", float_precision=6))
    click.echo(
        f"{queue.height} disagreements, ordered by the largest change of nDCG@{k} over {len(run_objs)} run(s); "
        f"wrote {output}. Record decisions as query_id<TAB>doc_id<TAB>grade and merge them with --decisions.",
        err=True,
    )


def _merge(found: Any, decisions: str, undecided: str, allow_override: bool, min_kappa: float, threshold: int,
           output: str) -> None:  # fmt: skip
    from ..judgments.labellers import merge_decisions

    done = merge_decisions(found, decisions, output, undecided=undecided, allow_override=allow_override,
                           min_kappa=min_kappa, relevance_threshold=threshold)  # fmt: skip
    c = done.merged.counts
    click.echo(
        f"final qrels: {c['total']} judgments ({c['agreed']} agreed, {c['adjudicated']} adjudicated, "
        f"{c['overridden']} overridden, {c['defaulted']} defaulted, {c['single_labeller']} from one labeller; "
        f"{c['unresolved_left_out']} unresolved left out); wrote {output} and {done.manifest}",
        err=True,
    )
    gate_result = done.calibration.gate
    if gate_result is not None and not gate_result.passed:
        click.echo(
            f"warning: calibration gate failed ({gate_result.message}); recorded in the manifest", err=True
        )


#: ``qrelkit adjudicate-files``: the old name of ``adjudicate-files``, for one release (``qrelkit.cli.ALIASES``).
adjudicate_alias = alias_of(adjudicate_command, "adjudicate", "adjudicate-files")
