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


def check_order(order: str | None, budget_text: str | None, *, runs: bool = True) -> None:
    """``--order`` and ``--budget`` go together, with the runs (``judge init --runs``: the plan weighs pairs
    by their rankings), and the strategy has a one-shot design."""
    if (order is None) != (budget_text is None):
        raise click.UsageError("--order and --budget go together")
    if order is not None and not runs:
        raise click.UsageError(
            "--order weighs the pairs by the pooled runs' rankings: pass the runs with --runs"
        )
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
    from qrelkit.app.design import DEFAULT_MEASURE, calibration_pairs, hold_queue, pooled_pairs
    from qrelkit.app.store import Store
    from qrelkit.budget.queue import budget_pairs

    from .output import warn

    with Store(db) as store:
        budget = budget_pairs(str(budget_text), store.read(pooled_pairs))
        hold_queue(store, strategy=order, budget=budget, seed=seed, measure=measure or DEFAULT_MEASURE)
        first = store.read(calibration_pairs)
    if budget <= first:
        warn(f"a budget of {budget} pairs is no more than the {first} calibration pairs people judge first: "
             f"nothing will be left to choose; plan with a larger one (`qrelkit judge plan {db} --order {order} "
             f"--budget N`, N above {first})")  # fmt: skip
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
@click.option("--replace", is_flag=True, help="Plan again though people judged pairs the design in force drew at "
              "random: settled them, or graded them since the plan (settled pairs then count as certain, and "
              "that design's intervals are lost).")  # fmt: skip
@click.option("--round", "round_text", default=None, metavar="N|P%",
              help="Plan a focused round of N pairs (or a share of the budget: 5%), each taken with certainty "
              "where the runs' order is most uncertain, instead of the final draw; once people have graded "
              "them, plan the next round or the final draw (without --round).")  # fmt: skip
def command(db: Path, order: str | None, budget_text: str | None, measure: str | None, model: str | None,
            seed: int | None, by: str | None, replace: bool, round_text: str | None) -> None:  # fmt: skip
    """Choose the pairs people judge beyond calibration within a budget (the strategy of --order, from the
    model labeller's grades and the pooled runs); their queue follows it, blind as before. With --round, a
    focused round first; the final draw of the rest of the budget gives the intervals."""
    from qrelkit.app.design import current_design, design_progress, plan_request, pooled_pairs, record_plan
    from qrelkit.app.design_inputs import planning_material
    from qrelkit.app.grades import final_grades
    from qrelkit.app.store import Store
    from qrelkit.budget.queue import budget_pairs, check_order, chosen_pairs, plan_project, round_size
    from qrelkit.report.design import render_plan

    with Store(db) as store:
        pairs = None if budget_text is None else budget_pairs(budget_text, store.read(pooled_pairs))
        settled = final_grades(store, people_only=True)[0]
        order, pairs, measure, seed = store.read(
            lambda c: plan_request(c, order=order, budget=pairs, measure=measure, seed=seed, replace=replace,
                                   settled=settled))  # fmt: skip
        check_order(order)
        round_pairs = None if round_text is None else round_size(round_text, pairs)
        material = planning_material(store, model, people=settled)
        built, selection = plan_project(material, order, pairs, seed, measure, round_pairs)
        chosen = chosen_pairs(built, selection)
        done = record_plan(store, strategy=order, budget=pairs, seed=seed, measure=measure,
                           model=material.model, judged_before=built.state.spent, chosen=chosen, by=by,
                           kind="draw" if round_pairs is None else "round")  # fmt: skip
        planned = store.read(current_design)
        assert planned is not None  # recorded just above
        progress = store.read(lambda c: design_progress(c, planned, settled))
    held = sum(
        (q, d) in material.held for q, d, _ in chosen
    )  # taken with certainty: people grade them anyway
    for line in render_plan({"db": str(db), "strategy": order, "round": round_pairs is not None, "chosen": done["chosen"],
                             "apart": progress["awaiting_decision"], "held": held, "settled": built.state.spent,
                             "budget": pairs, "pooled": built.problem.n_pairs, "seed": seed, "measure": measure,
                             "runs": built.problem.n_runs, "model": material.model, "people": done["people"]}):  # fmt: skip
        click.echo(line)


def status_lines(store: Any, alpha: float = 0.05) -> tuple[dict[str, Any] | None, list[str]]:
    """``judge status``'s live queue: the design, the budget spent, and each pooled run's estimate with its
    interval under the design's estimator (:func:`qrelkit.budget.queue.estimate_project`), and its lines."""
    from qrelkit.app.design import current_design, design_progress, graded_outside

    design = store.read(current_design)
    if design is None:  # no design: nothing of the budget package is loaded
        return None, []
    from qrelkit.app.design_inputs import planning_material
    from qrelkit.app.grades import final_grades
    from qrelkit.budget.queue import estimate_project, intervals_withheld
    from qrelkit.errors import QrelkitError
    from qrelkit.provenance import json_number
    from qrelkit.report.design import render_live_status

    settled = final_grades(store, people_only=True)[0]
    outside = store.read(lambda c: graded_outside(c, design))  # left out of the estimate: not chosen
    status: dict[str, Any] = {"design": {k: v for k, v in design.to_dict().items() if k != "pairs"},
                              "spent": store.read(lambda c: design_progress(c, design, settled, outside))}  # fmt: skip
    if design.state == "planned":
        try:
            chance = {(q, d): p for q, d, p, _ in design.pairs}
            material = planning_material(store, design.model, people=settled)
            found, built = estimate_project(material, design.strategy, design.measure, chance, alpha, outside)
            status["estimator"] = found.estimator
            status["intervals_withheld"] = intervals_withheld(
                [(q, d) for q, d, _, _ in design.pairs], settled, design.kind
            )
            status["estimates"] = [{"run": run, "estimate": json_number(found.means[i]), "low": json_number(found.low[i]),
                                    "high": json_number(found.high[i])} for i, run in enumerate(built.problem.runs)]  # fmt: skip
        except QrelkitError as exc:
            status["unavailable"] = exc.problem
    return status, render_live_status(status)
