"""``qrelkit judge plan``: the people's queue beyond calibration chosen by a strategy within a judging budget,
and the parts of ``judge init --order`` and ``judge status`` that speak of it (docs/judging-budget.md, "The
live queue"). The rules live in :mod:`qrelkit.budget.queue` and :mod:`qrelkit.app.design`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["check_order", "command", "hold_after_init", "order_options", "status_lines"]


def order_options(function: Any) -> Any:
    """``--order``, ``--budget`` and ``--measure`` of ``judge init`` and ``judge plan``."""
    function = click.option("--measure", default=None, metavar="MEASURE",
                            help="The measure the strategy weighs pairs by [default: nDCG@10].")(function)  # fmt: skip
    function = click.option("--budget", "budget_text", default=None, metavar="N|P%",
                            help="Pairs people judge in all (calibration included), or a share of the pooled "
                            "pairs.")(function)  # fmt: skip
    function = click.option("--order", default=None, metavar="STRATEGY",
                            help="Order the people's queue beyond calibration by a judging-budget strategy "
                            "(active): only the pairs it chooses are given to people.")(function)  # fmt: skip
    return function


def check_order(order: str | None, budget_text: str | None) -> None:
    """``--order`` and ``--budget`` go together, and the strategy has a one-shot design."""
    if (order is None) != (budget_text is None):
        raise click.UsageError("--order and --budget go together")
    if order is not None:
        from qrelkit.budget.queue import check_order as check

        check(order)


def hold_after_init(
    db: Path, order: str | None, budget_text: str | None, seed: int, measure: str | None
) -> str | None:
    """After ``judge init --order``: record the pending design and hold the people's queue beyond
    calibration until ``judge plan``; the line to print, or ``None`` without ``--order``."""
    if order is None:
        return None
    from qrelkit.app.design import hold_queue
    from qrelkit.app.store import Store
    from qrelkit.budget.queue import DEFAULT_MEASURE, budget_pairs

    with Store(db) as store:
        pooled = int(store.read(lambda c: c.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]))
        budget = budget_pairs(str(budget_text), pooled)
        hold_queue(store, strategy=order, budget=budget, seed=seed, measure=measure or DEFAULT_MEASURE)
    return (f"live queue: {order}, a budget of {budget} pairs; the people's queue beyond calibration waits for "
            f"the plan: add a model labeller, run it on the pool, then `qrelkit judge plan {db}`")  # fmt: skip


@click.command(name="plan")
@click.argument("db", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@order_options
@click.option("--model", default=None, help="The model labeller whose grades the strategy reads [default: the "
              "one that graded every pooled pair].")  # fmt: skip
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seed of the draw [default: the pending design's, else the project's].")  # fmt: skip
@click.option("--by", default=None, help="Who planned it (recorded).")
def command(db: Path, order: str | None, budget_text: str | None, measure: str | None, model: str | None,
            seed: int | None, by: str | None) -> None:  # fmt: skip
    """Choose the pairs people judge beyond calibration within a budget (the strategy of --order, from the
    model labeller's grades and the pooled runs); their queue follows it, blind as before."""
    from qrelkit.app.store import Store
    from qrelkit.budget.queue import plan_live

    if order is None and budget_text is not None:
        raise click.UsageError("--budget goes with --order")
    with Store(db) as store:
        done = plan_live(
            store, order=order, budget=budget_text, measure=measure, model=model, seed=seed, by=by
        )
    people = ", ".join(f"{n} {k}" for n, k in sorted(done["people"].items()))
    click.echo(f"live queue: {done['strategy']} chose {done['chosen']} pairs for people beyond the "
               f"{done['judged_before']} judged (a budget of {done['budget']} of {done['pooled']} pooled pairs, seed "
               f"{done['seed']}, weighed by {done['measure']} over {done['runs']} runs with model labeller "
               f"{done['model']}'s grades); given to: {people}")  # fmt: skip


def status_lines(store: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """``judge status``'s live queue: its values (:func:`qrelkit.budget.queue.live_status`) and lines."""
    from qrelkit.app.design import current_design

    if store.read(current_design) is None:  # no design: nothing of the budget package is loaded
        return None, []
    from qrelkit.budget.queue import live_status
    from qrelkit.report.design import render_live_status

    status = live_status(store)
    return status, render_live_status(status)
