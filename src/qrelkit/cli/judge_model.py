"""``qrelkit judge model``: a language model (or a local program) as one more labeller of a project.

``add`` (record it and assign it its pairs; ``--check`` asks for one grade first; ``--role predictor``),
``run`` (grade its calibration pairs, then the rest once its gate passed, or once decided for a predictor),
``status`` (its progress, agreement, gate, probes and cost), ``probe`` (the adversarial probes),
``override`` (open its pool despite a failed gate, with a reason), ``predict`` (make it a predictor, with a
reason) and ``retire`` (take it out of the counts, the queue and the export, with a reason).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["command"]

_DB = click.argument("db", type=click.Path(path_type=Path, dir_okay=False))
_NAME = click.argument("name")


def _open(db: Path, *, read_only: bool = False) -> Any:
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store

    store = Store(db, read_only=read_only)
    try:
        return store, load_rubric_from_store(store)
    except BaseException:
        store.close()
        raise


@click.group(name="model")
def command() -> None:
    """Model labellers: graded as people are, held to the same calibration gate."""


@command.command(name="add")
@_DB
@_NAME
@click.option(
    "--endpoint", default=None, help="Base URL of an OpenAI-compatible server (before /chat/completions)."
)
@click.option(
    "--command", "program", default=None, help='A local program speaking JSON lines, e.g. "python judge.py".'
)
@click.option("--model", "model_id", default=None, help="The model id the server serves.")
@click.option(
    "--api-key-env", default=None, metavar="VAR", help="Environment variable holding the key (never stored)."
)
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Sampling seed sent with each request."
)
@click.option(
    "--prompt",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="A Jinja template replacing the default prompt (docs/model-labellers.md).",
)
@click.option("--max-concurrency", type=int, default=4, show_default=True)
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds to wait for one reply.")
@click.option("--max-retries", type=int, default=5, show_default=True)
@click.option(
    "--margin",
    type=float,
    default=0.05,
    show_default=True,
    help="Non-inferiority margin of the model's gate, in kappa.",
)
@click.option(
    "--pairs",
    "pairs_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Assign only these pairs (query_id doc_id a line) besides the calibration pairs.",
)
@click.option("--show-prompt", is_flag=True, help="Print the prompt of the first calibration pair.")
@click.option(
    "--role",
    type=click.Choice(["labeller", "predictor"]),
    default="labeller",
    show_default=True,
    help="labeller: may replace people once its gate passed; predictor: grades every pair, only to be "
    "corrected by people's grades (never in the final qrels).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Ask for one grade (the first calibration pair) before recording: a wrong model id or a dead "
    "endpoint is refused here.",
)
@click.option(
    "--by",
    default=None,
    help="With --role predictor: who decides it (recorded) [default: the project's admin].",
)
@click.option(
    "--logprobs",
    "top_logprobs",
    type=click.IntRange(1, 20),
    default=None,
    metavar="N",
    help="Ask the endpoint for token log-probabilities (N alternatives a token) and record each grade's "
    "probability beside the grade; an endpoint that refuses them is asked without [default: not asked].",
)
def add_command(db: Path, name: str, endpoint: str | None, program: str | None, model_id: str | None,
                api_key_env: str | None, temperature: float, seed: int | None, prompt: Path | None,
                max_concurrency: int, timeout: float, max_retries: int, margin: float, pairs_file: Path | None,
                show_prompt: bool, role: str, check: bool, by: str | None, top_logprobs: int | None) -> None:  # fmt: skip
    """Add a model labeller: its user (role model), its settings, and its assignment."""
    from qrelkit.app.models.prompt import read_template
    from qrelkit.app.models.register import add_model, read_pairs_file

    template = read_template(prompt)
    pairs = None if pairs_file is None else read_pairs_file(pairs_file)
    store, rubric = _open(db)
    try:
        done = add_model(store, rubric, name, endpoint=endpoint, command=program, model_id=model_id,
                         api_key_env=api_key_env, temperature=temperature, seed=seed, template=template,
                         template_source=str(prompt or "the default prompt template"),
                         max_concurrency=max_concurrency, timeout=timeout, max_retries=max_retries,
                         margin=margin, pairs=pairs, role=role, check=check, by=by,
                         top_logprobs=top_logprobs)  # fmt: skip
    finally:
        store.close()
    what = "model labeller" if done["role"] == "labeller" else "model predictor"
    click.echo(f"{what} {done['name']} (model {done['model_id']}): {done['pairs']} pairs assigned, "
               f"{done['calibration_pairs']} of them calibration; prompt template {done['template_hash'][:12]}"
               + ("" if done["top_logprobs"] is None else f"; log-probabilities asked (top {done['top_logprobs']})")
               + ("" if done["checked"] is None else f"; checked: graded the first calibration pair "
                  f"{done['checked']['grade']} in {done['checked']['latency_ms']} ms"))  # fmt: skip
    if show_prompt and done["prompt"] is not None:
        click.echo(done["prompt"], nl=False)


class _RunProgress:
    """A model labeller's run, pair by pair, by the rule of :mod:`qrelkit.cli.output` (a bar on a terminal,
    one line per tenth otherwise): one reporter per stage (calibration, then the pool), each counting its
    own pairs against its own total, the failed attempts in its description."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.stage: int = 0  # how many stages the summary had begun when the reporter was opened
        self.seen = 0  # pairs done (graded or failed) at the last report
        self.offset = 0  # pairs done before the current stage began

    def __call__(self, summary: Any, total: int) -> None:
        from .output import reporter

        done = summary.graded + summary.failed_pairs
        if self.bar is None or len(summary.phases) != self.stage:  # a new stage: its own reporter and count
            self.close()
            self.stage, self.offset = len(summary.phases), self.seen
            self.what = f"grading {summary.phases[-1]} pairs" if summary.phases else "grading pairs"
            self.bar = reporter(self.what, total, unit="pairs")
        self.seen = done
        failed = (
            f"{self.what} ({summary.failed_attempts} failed attempts)" if summary.failed_attempts else None
        )
        self.bar.update(done - self.offset, failed)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@command.command(name="run")
@_DB
@_NAME
@click.option("--calibration-only", is_flag=True, help="Grade the calibration pairs and stop.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Grade at most N pairs in this run.")
@click.option(
    "--budget-pairs",
    type=click.IntRange(min=0),
    default=None,
    help="Ask the endpoint for at most N pairs in this run (cached answers are free).",
)
@click.option(
    "--audit-share",
    type=click.FloatRange(0, 1),
    default=0.05,
    show_default=True,
    help="Share of the model's grades outside calibration given to people too (the audit sample).",
)
def run_command(db: Path, name: str, calibration_only: bool, limit: int | None, budget_pairs: int | None,
                audit_share: float) -> None:  # fmt: skip
    """Grade the model's calibration pairs, decide its gate, then grade the rest if it passed."""
    from qrelkit.app.models.runner import run_model
    from qrelkit.report.models import render_run

    store, _ = _open(db)
    progress = _RunProgress()
    try:
        summary = run_model(store, name, calibration_only=calibration_only, limit=limit,
                            budget_pairs=budget_pairs, audit_share=audit_share, progress=progress)  # fmt: skip
    finally:
        progress.close()
        store.close()
    click.echo(render_run(summary.to_dict()))


@command.command(name="status")
@_DB
@_NAME
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--gate-ranking",
    type=click.FloatRange(-1, 1),
    default=None,
    help="hold the model to its ranking agreement: exit 3 unless the lower end of Kendall's tau's interval "
    "(the runs ordered by the people's grades and by the model's) is at least TAU [default: information only]",
)
def status_command(db: Path, name: str, fmt: str, gate_ranking: float | None) -> None:
    """The model's progress, agreement with each person and the adjudicated grades, gate, probes and cost,
    and the decisions its grades lead to on the calibration queries over the project's runs."""
    import json

    from qrelkit.app.models.status import model_status
    from qrelkit.report.models import render_model_status

    store, _ = _open(db, read_only=True)
    try:
        status = model_status(store, name)
        # the ranking agreement: the runs' order and significant differences, people's grades against the model's
        from qrelkit.app.models.ranking import ranking_inputs
        from qrelkit.compare.decisions import model_ranking

        inputs = ranking_inputs(store, name)
        status["ranking_agreement"] = model_ranking(inputs, inputs.measure, gate=gate_ranking)
    finally:
        store.close()
    click.echo(json.dumps(status, indent=2, default=str) if fmt == "json" else render_model_status(status))
    ranking_gate = status["ranking_agreement"]["gate"]
    if ranking_gate is not None and not ranking_gate["passed"]:
        from . import EXIT_GATE_FAILED

        click.get_current_context().exit(EXIT_GATE_FAILED)


@command.command(name="probe")
@_DB
@_NAME
@click.option(
    "--pairs",
    type=click.IntRange(1, 1000),
    default=None,
    help="Calibration pairs per kind of probe [default: 20, or as many as there are].",
)
def probe_command(db: Path, name: str, pairs: int | None) -> None:
    """Keyword stuffing, instruction injection and order probes; their rates join the model's gate."""
    from qrelkit.app.models.probes import run_probes
    from qrelkit.report.models import render_probes, render_run

    store, _ = _open(db)
    try:
        done = run_probes(store, name, pairs=pairs)
    finally:
        store.close()
    if done["probes"]:
        click.echo(render_probes(done["probes"]))
    click.echo(render_run({"model": name, "graded": 0, "asked": 0, "cached": 0, "failed_pairs": 0,
                           "failed_attempts": 0, "left": 0, "gate": done["gate"]}).split("; ")[-1])  # fmt: skip


@command.command(name="override")
@_DB
@_NAME
@click.option("--reason", required=True, help="Why the model may judge the pool although its gate failed.")
@click.option("--by", required=True, help="Who decides it (recorded).")
def override_command(db: Path, name: str, reason: str, by: str) -> None:
    """Open the model's full pool although its gate failed (recorded, and carried as a warning)."""
    from qrelkit.app.models.gate import override_model_gate

    store, _ = _open(db)
    try:
        done = override_model_gate(store, name, reason=reason, by=by)
    finally:
        store.close()
    click.echo(f"model labeller {name}: full pool opened by {done['by']} at {done['at']} although its gate "
               f"failed ({', '.join(done['failing'])}): {done['reason']}")  # fmt: skip


@command.command(name="predict")
@_DB
@_NAME
@click.option("--reason", required=True, help="Why the model only predicts (for instance: its gate failed).")
@click.option("--by", required=True, help="Who decides it (recorded).")
def predict_command(db: Path, name: str, reason: str, by: str) -> None:
    """Make a model labeller a predictor: it grades the whole pool, its grades never join the final qrels."""
    from qrelkit.app.models.roles import change_role

    store, _ = _open(db)
    try:
        done = change_role(store, name, "predictor", reason=reason, by=by)
    finally:
        store.close()
    click.echo(f"model labeller {name}: a predictor from now on (made so by {done['by']} at {done['at']}): its "
               f"grades are corrected by people's and never join the final qrels: {done['reason']}")  # fmt: skip


@command.command(name="retire")
@_DB
@_NAME
@click.option("--reason", required=True, help="Why the model is retired (recorded).")
@click.option("--by", default=None, help="Who decides it (recorded) [default: the project's admin].")
def retire_command(db: Path, name: str, reason: str, by: str | None) -> None:
    """Retire a model labeller: its events stay; it leaves the progress counts, the queue and the final export."""
    from qrelkit.app.models.roles import change_role

    store, _ = _open(db)
    try:
        done = change_role(store, name, "retired", reason=reason, by=by)
    finally:
        store.close()
    click.echo(f"model labeller {name}: retired by {done['by']} at {done['at']} (was a {done['was']}); its grades "
               f"leave the progress counts, the queue and the final export: {done['reason']}")  # fmt: skip
