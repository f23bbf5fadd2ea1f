"""``qrelkit pool``: build the judging pool, its sidecar statistics and the assignment plan; with
``--extend``, the pairs new runs add to a project or a final qrels file; with ``--leave-one-out``, whether
the judgments are reusable for a run that took no part in the pool."""

from __future__ import annotations

from pathlib import Path

import click

from .._typing import FORMAT_CHOICES
from ..pool import DEFAULT_CALIBRATION
from .options import file_or_dataset, labellers_option, load_judgments, load_runs, reader_of, seed_option

__all__ = ["command"]


@click.command("pool")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--depth",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="pool each run's top DEPTH documents per query",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="pool.jsonl to write; the statistics go to pool.meta.json beside it (with --extend: the new "
    "pairs' pool, printed on stdout without -o)",
)
@click.option(
    "--extend",
    "extend",
    callback=file_or_dataset,
    metavar="PROJECT.db|FINAL.qrels|irds:ID",
    help="list only the pairs RUNS bring within --depth that this judging project (any pair of its pool, "
    "graded or not) or final qrels file or dataset (any pair with a grade) does not hold, with the cost; "
    "nothing is written to the project",
)
@click.option(
    "--leave-one-out",
    "leave_one_out",
    is_flag=True,
    help="reusability: each run's measure against --qrels without the judged pairs only it contributed to "
    "the pool of RUNS at --depth, beside its measure against the full --qrels, with the rank change and "
    "Kendall's tau of the two rankings",
)
@click.option(
    "-m",
    "--measure",
    "measures",
    multiple=True,
    help="with --leave-one-out: measure, repeatable [default: nDCG@10]",
)
@click.option("--json", "as_json", is_flag=True, help="with --leave-one-out: print one JSON object")
@click.option(
    "--qrels",
    type=click.Path(dir_okay=False),
    help="existing judgments: pooled pairs found there are marked judged and not counted as work",
)
@click.option(
    "--seconds-per-judgment",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="time one judgment takes, for the cost estimate",
)
@click.option(
    "--calibration",
    type=click.IntRange(min=0),
    default=DEFAULT_CALIBRATION,
    show_default=True,
    help="number of calibration queries, judged by --calibration-labellers labellers each (each pair "
    "counted that often in the cost); all queries when the pool has fewer; 0 for none (then `judge init` "
    "needs --no-calibration)",
)
@click.option(
    "--calibration-labellers",
    type=click.IntRange(min=2),
    default=2,
    show_default=True,
    help="labellers per calibration query (with --labellers): groups of that many taken in turn; as many as "
    "there are labellers gives every calibration pair to every labeller",
)
@seed_option("seed of the calibration draw (numpy default_rng)")
@labellers_option("comma-separated names: writes an assignment plan into every line of the pool")
@click.option(
    "--input-format",
    type=click.Choice(FORMAT_CHOICES),
    default="auto",
    show_default=True,
    help="format of the runs and qrels (auto: by suffix, TREC text otherwise)",
)
def command(
    runs: tuple[str, ...],
    depth: int,
    output: str | None,
    qrels: str | None,
    seconds_per_judgment: float,
    calibration: int,
    calibration_labellers: int,
    seed: int,
    labellers: tuple[str, ...],
    input_format: str,
    extend: str | None,
    leave_one_out: bool,
    measures: tuple[str, ...],
    as_json: bool,
) -> None:
    """Pool the top documents of RUNS per query into the pairs to judge.

    Runs are ranked by score descending, ties by doc id descending (as trec_eval). Writes one JSON
    line per pooled (query, document) pair, sorted by query then document, with the runs and ranks
    that retrieved it; and a sidecar .meta.json with per-query sizes, the overlap between runs, the
    counts, the cost estimate (judgments = pairs to judge + (labellers per calibration query - 1) x
    calibration pairs; hours = judgments x
    seconds per judgment / 3600), the calibration queries and the per-labeller pair counts.

    --extend PROJECT.db (or FINAL.qrels) lists the pairs new RUNS add; --leave-one-out --qrels FINAL
    measures each run under the pool built without it.
    """
    # long: its docstring is the command's --help; three questions (pool, extend, leave one out) share the options
    from ..pool import build_pool

    if extend and leave_one_out:
        raise click.UsageError("--extend and --leave-one-out are two different questions; pass one")
    if (measures or as_json) and not leave_one_out:
        raise click.UsageError("-m and --json go with --leave-one-out")
    _refuse_unused(extend is not None, leave_one_out, labellers)
    if extend:
        return _extend(runs, depth, output, extend, qrels, seconds_per_judgment, input_format)
    if leave_one_out:
        return _leave_one_out(runs, depth, output, qrels, measures, as_json, input_format)
    if not output:
        raise click.UsageError("Missing option '-o' / '--output' (the pool.jsonl to write)")
    reader = reader_of(input_format, None)
    run_objs = load_runs(runs, reader)
    qrels_obj = load_judgments(qrels, reader) if qrels else None
    pool = build_pool(
        run_objs,
        depth,
        qrels=qrels_obj,
        seconds_per_judgment=seconds_per_judgment,
        calibration=calibration,
        seed=seed,
        labellers=labellers,
        calibration_labellers=calibration_labellers,
    )
    side = pool.write(output)
    _summary(pool, Path(output), side, given=click.get_current_context().params)


def _refuse_unused(extend: bool, leave_one_out: bool, labellers: tuple[str, ...]) -> None:
    """An option the question asked does not read is a usage error, not silently ignored."""
    if labellers and (extend or leave_one_out):
        raise click.UsageError(
            "--labellers plans a new pool; `qrelkit judge extend` assigns a project's new pairs"
        )
    ctx = click.get_current_context()
    unused = ["calibration", "calibration_labellers", "seed"] if extend or leave_one_out else []
    unused += ["seconds_per_judgment"] if leave_one_out else []
    for name in unused:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name != "DEFAULT":
            flag = "--" + name.replace("_", "-")
            why = (
                "an extension has no calibration"
                if extend
                else "--leave-one-out measures, it plans no judging"
            )
            raise click.UsageError(f"{flag} plans a new pool: {why}; drop {flag}")


def _summary(pool, output: Path, side: Path, given: dict) -> None:
    # long: rendering only, one stderr line per fact of the pool (counts, overlap, calibration, cost)
    ctx = click.get_current_context()

    def default_note(name: str) -> str:
        source = ctx.get_parameter_source(name)
        return " (default)" if source is not None and source.name == "DEFAULT" else ""

    meta = pool.meta()
    c, cost, overlap = meta["counts"], meta["cost"], meta["overlap"]
    echo = lambda s="": click.echo(s, err=True)  # noqa: E731
    echo(
        f"pool: {len(pool.runs)} run(s), depth {pool.depth}{default_note('depth')}; "
        f"ties: score desc, then doc_id desc (trec_eval)"
    )
    size = meta["pool_size"]
    echo(
        f"queries: {c['queries']}; pooled pairs: {c['pooled_pairs']}; pool size per query: "
        f"mean {size['mean']:.1f}, min {size['min']}, max {size['max']}"
    )
    if pool.qrels is not None:
        echo(f"already judged: {c['already_judged']}; to judge: {c['pairs_to_judge']}")
    echo("overlap (pooled pairs): " + ", ".join(f"{n} {v}" for n, v in overlap["pooled_per_run"].items()))
    echo("  unique to one run: " + ", ".join(f"{n} {v}" for n, v in overlap["unique_per_run"].items()))
    for j in overlap["jaccard"]:
        value = "n/a" if j["jaccard"] is None else f"{j['jaccard']:.3f}"
        echo(f"  jaccard {j['a']} / {j['b']}: {value} ({j['intersection']} of {j['union']})")
    if pool.calibration_queries:
        echo(
            f"calibration: {len(pool.calibration_queries)} queries (seed {pool.seed}{default_note('seed')}), "
            f"{c['calibration_pairs']} pairs judged "
            f"{'twice' if pool.calibration_labellers == 2 else f'{pool.calibration_labellers} times'}: "
            f"{', '.join(pool.calibration_queries)}"
        )
    echo(
        f"cost: {cost['judgments']} judgments ({cost['pairs_to_judge']} pairs + "
        f"{cost['judgments'] - cost['pairs_to_judge']} calibration repeats) x {cost['seconds_per_judgment']:g} s{default_note('seconds_per_judgment')} "
        f"= {cost['hours']:.1f} h"
    )
    if pool.labellers:
        counts = meta["pairs_per_labeller"]
        echo("assignment: " + ", ".join(f"{n} {counts[n]} pairs" for n in pool.labellers))
    for note in pool.notes:
        echo(f"warning: {note}")
    echo(f"wrote {output} and {side}")


def _extend(runs: tuple[str, ...], depth: int, output: str | None, source: str, qrels: str | None,
            seconds_per_judgment: float, input_format: str) -> None:  # fmt: skip
    from ..app.extend import judged_of, phase_note
    from ..pool import extend_pool

    if qrels:
        raise click.UsageError("--extend names what the new runs are measured against; drop --qrels")
    run_objs = load_runs(runs, reader_of(input_format, None))
    pool = extend_pool(run_objs, depth, judged=judged_of(source, input_format=input_format),
                       seconds_per_judgment=seconds_per_judgment)  # fmt: skip
    ext, cost = pool.extends or {}, pool.cost()
    echo = lambda s="": click.echo(s, err=True)  # noqa: E731
    echo(f"extend {source} ({ext.get('kind')}: {ext.get('judged_pairs')} pairs, {ext.get('judged_queries')} "
         f"queries) with {', '.join(pool.run_names)}, depth {depth}")  # fmt: skip
    echo(f"pairs within depth: {ext.get('pairs_in_depth')}; already judged: {ext.get('already_judged')}; "
         f"new: {pool.pairs.height} in {pool.pairs.get_column('query_id').n_unique()} queries")  # fmt: skip
    echo(f"cost: {cost['judgments']} judgments x {cost['seconds_per_judgment']:g} s = {cost['hours']:.1f} h "
         "(one judgment per pair)")  # fmt: skip
    if ext.get("kind") == "project":
        echo(f"phase read: {phase_note(ext.get('phase') or {})}")
    for note in pool.notes:
        echo(f"warning: {note}")
    if output:
        side = pool.write(output)
        echo(f"wrote {output} and {side}")
    else:
        for line in pool.jsonl_lines():
            click.echo(line)


def _leave_one_out(runs: tuple[str, ...], depth: int, output: str | None, qrels: str | None,
                   measures: tuple[str, ...], as_json: bool, input_format: str) -> None:  # fmt: skip
    import json

    from ..pool import leave_one_out
    from ..report.reusability import render_leave_one_out

    if not qrels:
        raise click.UsageError("--leave-one-out needs the full judgments: pass --qrels FINAL.qrels")
    if output:
        raise click.UsageError("--leave-one-out prints its table; drop -o (use --json > FILE)")
    reader = reader_of(input_format, None)
    run_objs = load_runs(runs, reader)
    result = leave_one_out(run_objs, load_judgments(qrels, reader), depth, measures or ("nDCG@10",))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(render_leave_one_out(result), nl=False)
