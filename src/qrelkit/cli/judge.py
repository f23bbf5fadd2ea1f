"""``qrelkit judge``: create a judging project, invite labellers, serve the app, and do every admin action.

Each admin page action has a command here: ``invite`` (one-time link), ``status`` (progress per labeller
and per query), ``kappa`` (calibration rounds, agreement and gate), ``revise`` (a new rubric version and
calibration round), ``override`` (open judging despite a failed or not measurable gate, with a reason),
``reassign`` (a labeller's calibration pairs of the round to another; the only action without a page), ``queue``
(adjudication queue),
``extend`` (a run that arrived after the pool closed: its new pairs as a segment, ``cli/judge_extend.py``),
``decide`` (record a final grade; ``adjudicate``, its old name, for one release), ``undo`` (undo a decision, itself recorded), ``export`` (per-labeller or final qrels with the manifest), and
``show`` (one pair's grade history).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from qrelkit.agreement.group import STATISTICS
from qrelkit.agreement.kappa import GATE_LOWER_BOUNDS, WEIGHTINGS

from . import alias_of
from .judge_plan import hold_after_init, order_options
from .options import labellers_option, seed_option

__all__ = ["command"]

_DB = click.argument("db", type=click.Path(path_type=Path, dir_okay=False))
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")


def _open(db: Path, *, read_only: bool = False) -> Any:
    """The project store and its rubric; ``read_only`` for commands that only read (SQLite ``mode=ro``:
    the file is never changed, not even migrated)."""
    from qrelkit.app.project import load_rubric_from_store
    from qrelkit.app.store import Store

    store = Store(db, read_only=read_only)
    for note in store.notes:  # files others can read: tightened, or (read-only) how to
        click.echo(f"warning: {note}", err=True)
    try:
        return store, load_rubric_from_store(store)
    except BaseException:
        store.close()
        raise


def _rubric_version(store: Any, wanted: str) -> Any:
    """The project's rubric whose version string is ``wanted`` or whose hash starts with it."""
    from qrelkit.app.phases import rounds_history, rubric_by_hash
    from qrelkit.errors import ValidationError

    history = store.read(rounds_history)
    found = [r["rubric"]["content_hash"] for r in history
             if wanted in (str(r["rubric"]["version"]),) or r["rubric"]["content_hash"].startswith(wanted)]  # fmt: skip
    if len(found) != 1:
        known = ", ".join(f"{r['rubric']['version']} ({r['rubric']['content_hash'][:12]})" for r in history)
        raise ValidationError(
            f"{'no' if not found else 'more than one'} rubric version of this project matches {wanted!r}",
            expected=known,
            fix="pass a version string or a longer hash prefix",
        )
    return store.read(lambda c: rubric_by_hash(c, found[0]))


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


@click.group(name="judge")
def command() -> None:
    """Judge pooled pairs in a browser: project database, invites, server, progress, kappa, exports."""


@command.command(name="init")
@_DB
@click.option("--rubric", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True)
@click.option("--pool", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True,
              help="pool.jsonl as written by `qrelkit pool`.")  # fmt: skip
@click.option("--docs", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True,
              help="docs.jsonl: doc_id, title, text per line.")  # fmt: skip
@click.option("--queries", type=click.Path(dir_okay=False), required=True,
              help="queries.tsv: query_id<TAB>text, no header; or irds:ID, a dataset's queries.")  # fmt: skip
@labellers_option("Comma-separated names, e.g. alice,bob (default: the pool's plan).")
@click.option("--calibration", type=click.IntRange(min=0), default=0, show_default=True,
              help="Calibration queries to draw when the pool marks none (as `qrelkit pool --calibration`).")  # fmt: skip
@click.option("--no-calibration", is_flag=True,
              help="Judge without calibration queries: judging opens at once, and the manifest and every result "
                   "say agreement was not measured.")  # fmt: skip
@click.option("--runs", "runs", multiple=True, type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="TREC runs, stored to order the adjudication queue by leverage (repeatable).")  # fmt: skip
@click.option("--admin", default="admin", show_default=True, help="Name of the admin user.")
@seed_option("Seed for the calibration draw and each labeller's order [default: a random one, printed].",
             default=None)  # fmt: skip
@click.option("--calibration-labellers", type=click.IntRange(min=2), default=None,
              help="Labellers who judge each calibration query, blind to each other [default: the pool's plan, "
                   "else 2]; as many as there are labellers gives every calibration pair to every labeller.")  # fmt: skip
@click.option("--min-kappa", type=click.FloatRange(-1, 1), default=0.6, show_default=True,
              help="Gate threshold for the lower end of the chosen statistic's interval.")  # fmt: skip
@click.option("--weights", type=click.Choice(WEIGHTINGS), default="linear",
              show_default=True, help="Weights of Cohen's kappa (pairwise and their mean).")  # fmt: skip
@click.option("--statistic", type=click.Choice(list(STATISTICS)), default=None,
              help="What the gate compares: kappa (every two labellers pass), mean_kappa (mean pairwise weighted "
                   "kappa), alpha_interval, alpha_ordinal (Krippendorff), fleiss [default: kappa with 2 labellers "
                   "per calibration query, mean_kappa with more].")  # fmt: skip
@click.option("--gate-on", type=click.Choice(GATE_LOWER_BOUNDS), default=None,
              help="Which lower end the gate compares: of the normal interval (kappa only) or of the query "
                   "bootstrap [default: ci_low for kappa, bootstrap_low for the others].")  # fmt: skip
@order_options
def init_command(db: Path, rubric: Path, pool: Path, docs: Path, queries: str, labellers: tuple[str, ...],
                 calibration: int, no_calibration: bool, runs: tuple[Path, ...], admin: str, seed: int | None,
                 calibration_labellers: int | None, min_kappa: float, weights: str, statistic: str | None,
                 gate_on: str | None, order: str | None, budget_text: str | None, measure: str | None) -> None:  # fmt: skip
    """Create the project database DB from a rubric, a pool, documents and queries.

    Judging starts in calibration: labellers see only their calibration pairs until the gate passes.
    """
    from qrelkit.app.project import init_project

    if no_calibration and calibration:
        raise click.UsageError("--calibration N and --no-calibration contradict each other; pass one")
    from .judge_plan import check_order

    check_order(order, budget_text, runs=bool(runs))
    names = list(labellers)
    summary = init_project(
        db, rubric=rubric, pool=pool, docs=docs, queries=queries, labellers=names, calibration=calibration,
        no_calibration=no_calibration, runs=runs, admin=admin, seed=seed, min_kappa=min_kappa,
        weights=weights, gate_use=gate_on, calibration_labellers=calibration_labellers, gate_statistic=statistic,
    )  # fmt: skip
    from qrelkit.report.judging import render_init

    for line, to_stderr in render_init(db, summary, min_kappa):
        click.echo(line, err=to_stderr)
    held = hold_after_init(db, order, budget_text, int(summary["seed"]), measure)
    if held:
        click.echo(held)
    from qrelkit.rubric import lint, load_rubric

    errors = sum(f.severity == "error" for f in lint(load_rubric(rubric)))
    if errors:
        click.echo(
            f"warning: the rubric has {errors} lint error(s); see `qrelkit rubric lint {rubric}` "
            "before anyone grades with it",
            err=True,
        )


@command.command(name="invite")
@_DB
@click.argument("name")
@click.option("--base-url", default=None,
              help="Where the server is reachable, as labellers will open it (default: the URL `judge serve` "
                   "recorded, else http://127.0.0.1:8000).")  # fmt: skip
@click.option("--hours", type=click.FloatRange(min=0.01, max=2160), default=72, show_default=True,
              help="How long the link stays valid.")  # fmt: skip
def invite_command(db: Path, name: str, base_url: str | None, hours: float) -> None:
    """Print a one-time sign-in link for user NAME (a labeller or the admin)."""
    from qrelkit.app.project import DEFAULT_BASE_URL, create_invite, recorded_base_url

    store, _ = _open(db)
    try:
        token = create_invite(store, name, hours=hours)
        recorded = None if base_url else recorded_base_url(store)
    finally:
        store.close()
    if base_url is None and recorded:
        base_url = recorded
        click.echo(
            f"using the URL recorded by `qrelkit judge serve`: {recorded} (--base-url to change)", err=True
        )
    elif base_url is None:
        base_url = DEFAULT_BASE_URL
        click.echo(
            f"no server URL recorded (`qrelkit judge serve` records one): using {DEFAULT_BASE_URL}; "
            "pass --base-url URL for another",
            err=True,
        )
    click.echo(f"{base_url.rstrip('/')}/invite/{token}")


@command.command(name="revoke")
@_DB
@click.argument("name")
def revoke_command(db: Path, name: str) -> None:
    """Sign NAME out everywhere and cancel their unused invite links (a new invite lets them back in)."""
    from qrelkit.app.project import revoke_user

    store, _ = _open(db)
    try:
        _, invites = revoke_user(store, name)
    finally:
        store.close()
    click.echo(f"{name}: signed out of every session; {invites} unused invite link(s) cancelled")


@command.command(name="serve")
@_DB
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="TCP port to listen on (0: any free port).")  # fmt: skip
@click.option("--base-url", default=None,
              help="Public URL for invite links, on the admin page and from `judge invite` (recorded in DB; "
                   "default: http://HOST:PORT).")  # fmt: skip
@click.option("--signin-limit", default="10/60", show_default=True,
              help="Failed sign-in attempts allowed per client address: ATTEMPTS/SECONDS.")  # fmt: skip
@click.option("--idle-timeout", default="12h", show_default=True,
              help="Sign a session out after this long unused: 12h, 30m, 90s.")  # fmt: skip
@click.option("--trusted-proxy", "trusted_proxies", multiple=True, metavar="IP",
              help="A reverse proxy (address or network) whose X-Forwarded-For/-Proto are believed; repeat "
                   "for more. Default: none, the connection's address is the client's.")  # fmt: skip
@click.option("--request-timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds a client has to send a whole request; slower connections are closed.")  # fmt: skip
@click.option("--max-connections", type=click.IntRange(min=1), default=512, show_default=True,
              help="Open connections in all.")  # fmt: skip
@click.option("--max-connections-per-client", type=click.IntRange(min=1), default=128, show_default=True,
              help="Open connections from one client address (trusted proxies exempt).")  # fmt: skip
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))  # fmt: skip
def serve_command(db: Path, host: str, port: int, base_url: str | None, signin_limit: str, idle_timeout: str,
                  trusted_proxies: tuple[str, ...], request_timeout: float, max_connections: int,
                  max_connections_per_client: int, log_level: str) -> None:  # fmt: skip
    """Serve the judging app for DB with uvicorn (one process: the store has one writer).

    A second `serve` of the same DB is refused in one line. The port is bound before anything is
    announced: a busy port is one line and exit status 1. The URL labellers open (--base-url, else
    http://HOST:PORT) is recorded in DB for `qrelkit judge invite`. The limits on clients are printed at
    start (docs/judging.md, "Safety and durability").
    """
    import sys

    try:
        import qrelkit.app.web  # noqa: F401  # starlette and uvicorn: the web extra
        from qrelkit.app.security import parse_duration, parse_limit
        from qrelkit.app.web.server import ServerLimits, serve_project
    except ImportError as exc:
        raise click.ClickException(
            f"the judging app needs the web extra ({exc.name} is missing): pip install 'qrelkit[web]'"
        ) from None

    try:
        limit = parse_limit(signin_limit)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--signin-limit") from None
    try:
        idle = parse_duration(idle_timeout)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--idle-timeout") from None
    try:
        limits = ServerLimits(request_timeout=request_timeout, max_connections=max_connections,
                              per_client=max_connections_per_client, trusted_proxies=trusted_proxies)  # fmt: skip
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--trusted-proxy") from None
    started = serve_project(db, host=host, port=port, base_url=base_url, signin_limit=limit, idle_timeout=idle,
                            idle_text=idle_timeout, limits=limits, log_level=log_level,
                            say=lambda line: click.echo(line, err=True))  # fmt: skip
    if not started:  # the app failed to start (the reason was logged): an error, status 1 (cli's table)
        sys.exit(1)


@command.command(name="status")
@_DB
@_JSON
def status_command(db: Path, as_json: bool) -> None:
    """Progress per labeller and per query, and each labeller's pace (pairs per hour, median time per pair;
    gaps over 10 minutes between grades are breaks)."""
    from qrelkit.app.grades import progress
    from qrelkit.app.pace import labeller_pace

    from .judge_plan import status_lines

    store, _ = _open(db, read_only=True)
    try:
        status, pace = store.read(lambda c: (progress(c), labeller_pace(c)))
        status["live_queue"], lines = status_lines(store)
    finally:
        store.close()
    status["pace"] = {name: p.to_dict() for name, p in pace.items()}
    if as_json:
        _echo_json(status)
        return
    from qrelkit.report.judging import render_status

    click.echo(render_status(status), nl=False)
    for line in lines:
        click.echo(line)


@command.command(name="kappa")
@_DB
@_JSON
@click.option("--round", "round_number", type=click.IntRange(min=1), default=None,
              help="The calibration round to show (default: the current one).")  # fmt: skip
def kappa_command(db: Path, as_json: bool, round_number: int | None) -> None:
    """Calibration agreement (kappa, interval, gate) per round, and the phase the project is in.

    The gate of a round is decided when every calibration pair has all its grades; with the statistic
    kappa it passes when every two labellers sharing calibration pairs pass, with a group statistic when
    the lower end of its query-bootstrap interval reaches the threshold. Each round uses only the grades
    given under its rubric. The group's statistics (alpha, Fleiss' kappa, the pairwise kappa matrix) are
    shown with more than two labellers.

    Exit status: 3 when the round shown did not pass its gate (failed, or not measurable; an override
    opens judging but the gate still did not pass), as `qrelkit agree` exits 3; else 0.
    """
    from qrelkit.app.grades import calibration_status, group_status
    from qrelkit.app.phases import ensure_gate, rounds_history
    from qrelkit.judgments.adjudication import group_calibration_fields

    store, rubric = _open(db)
    try:
        phase = ensure_gate(store)
        history = store.read(rounds_history)
        if round_number is not None and round_number > len(history):
            raise click.BadParameter(f"the project has {len(history)} round(s)", param_hint="--round")
        states = calibration_status(store, rubric, round=round_number)
        group = group_calibration_fields(group_status(store, round=round_number))
    finally:
        store.close()
    if as_json:
        _echo_json({"phase": phase.to_dict(), "rounds": history, "calibration": [s.to_dict() for s in states],
                    "group": group})  # fmt: skip
    else:
        from qrelkit.report.judging import render_kappa

        click.echo(render_kappa(phase, history, states, group), nl=False)
    shown = history[(round_number or len(history)) - 1] if history else None
    if shown is not None and shown["status"] in ("failed", "not measurable", "overridden"):
        from . import EXIT_GATE_FAILED

        click.echo(f"gate: round {shown['round']} did not pass ({shown['status']}); exit status {EXIT_GATE_FAILED}",
                   err=True)  # fmt: skip
        sys.exit(EXIT_GATE_FAILED)


@command.command(name="revise")
@_DB
@click.option("--rubric", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True,
              help="The revised rubric: a new version whose lint passes.")  # fmt: skip
@click.option("--same-queries", is_flag=True,
              help="Measure the new round on the previous round's calibration pairs [default: draw fresh queries].")  # fmt: skip
@click.option("--calibration", type=click.IntRange(min=1), default=None,
              help="Fresh calibration queries to draw [default: as many as the previous round].")  # fmt: skip
@click.option("--by", default=None, help="Who revised the rubric (recorded).")
@click.option("--note", default=None, help="What changed (recorded).")
def revise_command(db: Path, rubric: Path, same_queries: bool, calibration: int | None, by: str | None,
                   note: str | None) -> None:  # fmt: skip
    """Record a revised rubric and start a new calibration round; earlier rounds stay as history.

    Fresh queries are drawn from those no earlier round used, with a seed derived from the project seed
    and the round number. Labellers see only the new round's calibration pairs until its gate passes.
    """
    from qrelkit.app.phases import revise

    if same_queries and calibration is not None:
        raise click.UsageError("--same-queries keeps the previous queries; drop --calibration")
    store, _ = _open(db)
    try:
        done = revise(store, rubric, same_queries=same_queries, calibration=calibration, by=by, note=note)
    finally:
        store.close()
    r = done["rubric"]
    how = "the same queries as before" if done["query_rule"] == "same" else f"drawn with seed {done['seed']}"
    click.echo(f"round {done['round']}: rubric {r['name']} {r['version']} ({r['content_hash'][:12]}), "
               f"{len(done['queries'])} calibration queries ({how}): {', '.join(done['queries'])}; "
               f"{done['pairs']} pairs")  # fmt: skip
    for n in done["notes"]:
        click.echo(f"warning: {n}", err=True)


@command.command(name="override")
@_DB
@click.option("--reason", required=True, help="Why judging may go on although the gate failed (recorded).")
@click.option("--by", required=True, help="Who decides it (recorded).")
def override_command(db: Path, reason: str, by: str) -> None:
    """Open full judging although the calibration gate failed.

    The reason, who and when go into the manifest of every export, and every result computed from those
    qrels shows them as a warning."""
    from qrelkit.app.phases import override_gate

    store, _ = _open(db)
    try:
        done = override_gate(store, reason=reason, by=by)
    finally:
        store.close()
    click.echo(
        f"round {done['round']}: full judging opened by {done['by']} at {done['at']}: {done['reason']}"
    )


@command.command(name="reassign")
@_DB
@click.option(
    "--from", "source", required=True, help="The labeller whose calibration pairs of the round move."
)
@click.option("--to", "targets", required=True, multiple=True,
              help="A labeller who grades them instead; repeat it: each pair goes to the first not already on it.")  # fmt: skip
@click.option("--by", required=True, help="Who decides it (recorded).")
def reassign_command(db: Path, source: str, targets: tuple[str, ...], by: str) -> None:
    """Give a labeller's calibration pairs of the current round to another, while the round measures or
    after its gate was not measurable (one labeller marked every pair unsure, say); the round measures
    again with the new labeller's grades."""
    from qrelkit.app.phases import reassign

    store, _ = _open(db)
    try:
        done = reassign(store, source=source, targets=targets, by=by)
    finally:
        store.close()
    click.echo(
        f"round {done['round']}: {done['reason']} (by {done['by']} at {done['at']}); the round measures again"
    )


@command.command(name="queue")
@_DB
@_JSON
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show the first N pairs only.")
@click.option("-f", "--format", "out_format", type=click.Choice(["table", "tsv", "json", "text"]), default=None,
              help="table (text: its old name); tsv: the file to fill for `judge decide DB --decisions FILE` "
                   "(grade and note empty, context columns after them) [default: by -o's suffix (.tsv, .json, "
                   "else table), a table on a terminal, tsv otherwise].")  # fmt: skip
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write to this file instead of standard output.")  # fmt: skip
def queue_command(
    db: Path, as_json: bool, limit: int | None, out_format: str | None, output: Path | None
) -> None:
    """The adjudication queue: disagreements and unsure pairs, highest leverage first."""
    from qrelkit._version import __version__
    from qrelkit.app.bulk import queue_tsv
    from qrelkit.app.grades import adjudication_queue

    from .output import default_format

    if output is not None:
        out_format = out_format or {".tsv": "tsv", ".json": "json"}.get(output.suffix.lower(), "table")
    out_format = "table" if out_format == "text" else default_format(out_format)

    store, rubric = _open(db, read_only=True)
    try:
        queue = adjudication_queue(store, rubric)
    finally:
        store.close()
    items = queue["items"][:limit] if limit else queue["items"]
    if as_json or out_format == "json":
        text = json.dumps({"method": queue["method"], "items": items}, indent=2, ensure_ascii=False) + "\n"
    elif out_format == "tsv":
        text = f"# qrelkit {__version__} · project {db.name}\n" + queue_tsv(queue, items, db=str(db))
    else:
        from qrelkit.report.judging import render_queue

        text = render_queue(queue, items)
    if output is None:
        click.echo(text, nl=False)
        return
    from qrelkit.formats.outputs import write_output

    write_output(output, text)
    click.echo(f"wrote {len(items)} pairs to {output}", err=True)


@command.command(name="decide")
@_DB
@click.argument("query_id", required=False)
@click.argument("doc_id", required=False)
@click.argument("grade", type=int, required=False)
@click.option("--decisions", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A file of decisions, query_id<TAB>doc_id<TAB>grade[<TAB>note] a line (`judge queue --format "
                   "tsv` writes it to fill), applied in one transaction.")  # fmt: skip
@click.option("--partial", is_flag=True,
              help="With --decisions: apply the lines that pass although others are refused [default: a refused "
                   "line applies nothing].")  # fmt: skip
@click.option("--note", default=None, help="Why this grade.")
@click.option("--by", default=None, help="Name of the user deciding (default: none recorded).")
@click.option("--allow-override", is_flag=True,
              help="Decide a pair the labellers did not dispute (agreed, or one labeller); counted in the manifest.")  # fmt: skip
def adjudicate_command(db: Path, query_id: str | None, doc_id: str | None, grade: int | None,
                       decisions: Path | None, partial: bool, note: str | None, by: str | None,
                       allow_override: bool) -> None:  # fmt: skip
    """Record GRADE as the final grade of (QUERY_ID, DOC_ID), or every decision of --decisions FILE;
    earlier decisions are kept in history.

    Only disputed pairs (graded differently, or marked unsure) are adjudicated unless --allow-override; a
    calibration pair waits for its round's gate. With --decisions, every line is checked first: a refused
    line (printed as FILE:LINE and the reason) applies nothing unless --partial; the exit status is 1 when
    any line is refused.

    `qrelkit judge adjudicate`, its old name, works for one more release."""
    from qrelkit.app.grades import adjudicate

    if decisions is not None:
        if query_id is not None or note is not None:
            raise click.UsageError("pass QUERY_ID DOC_ID GRADE for one pair, or --decisions FILE, not both")
        _adjudicate_file(db, decisions, by=by, allow_override=allow_override, partial=partial)
        return
    if grade is None or partial:
        raise click.UsageError(
            "pass QUERY_ID DOC_ID GRADE for one pair, or --decisions FILE (--partial goes with it)"
        )
    store, rubric = _open(db)
    try:
        event = adjudicate(store, rubric, query_id or "", doc_id or "", grade, by=by, note=note,
                           allow_override=allow_override)  # fmt: skip
    finally:
        store.close()
    click.echo(
        f"{query_id} {doc_id}: final grade {grade} (decision {event}; `qrelkit judge undo DB {event}` undoes it)"
    )


# the old name, for one release (qrelkit.cli.ALIASES)
command.add_command(alias_of(adjudicate_command, "judge adjudicate", "judge decide"))


def _adjudicate_file(db: Path, path: Path, *, by: str | None, allow_override: bool, partial: bool) -> None:
    from qrelkit.app.bulk import apply_decisions

    store, rubric = _open(db)
    try:
        done = apply_decisions(store, rubric, path, by=by, allow_override=allow_override, partial=partial)
    finally:
        store.close()
    for refused in done.refused:
        click.echo(f"refused: {refused}", err=True)
    if done.refused.more:
        click.echo(f"refused: and {done.refused.more:,} more line(s) (the first {len(done.refused)} are listed)",
                   err=True)  # fmt: skip
    events = [event for _, event in done.applied]
    if done.refused and not partial:
        click.echo(f"{path}: nothing applied: {done.refused.total} line(s) refused; fix them, or pass --partial "
                   "to apply the others", err=True)  # fmt: skip
    elif not events:  # only undecided, comment or refused lines (--partial): no decision number to name
        also = f", {done.refused.total} line(s) refused" if done.refused else ""
        click.echo(f"{path}: nothing applied: {done.undecided} undecided line(s){also}")
    else:
        numbers = f"decision {events[0]}" if len(events) == 1 else f"decisions {events[0]} to {events[-1]}"
        click.echo(f"{path}: applied {len(events)} decision(s) ({numbers}; `qrelkit judge undo DB N` undoes one), "
                   f"refused {done.refused.total}, left undecided {done.undecided}")  # fmt: skip
    if done.refused:
        sys.exit(1)


@command.command(name="undo")
@_DB
@click.argument("decision", type=int)
@click.option("--by", default=None, help="Name of the user undoing it (default: none recorded).")
@click.option("--note", default=None, help="Why.")
def undo_command(db: Path, decision: int, by: str | None, note: str | None) -> None:
    """Undo DECISION (the number `decide` printed; `show` lists them): the pair's decision before it
    counts again, or none. The undo is recorded; nothing is deleted."""
    from qrelkit.app.decisions import undo_adjudication

    store, _ = _open(db)
    try:
        undo_adjudication(store, decision, by=by, note=note)
    finally:
        store.close()
    click.echo(f"decision {decision} undone")


@command.command(name="export")
@_DB
@click.option("--labeller", default=None, help="Export this labeller's current grades.")
@click.option("--final", "final", is_flag=True, help="Export the final qrels and their manifest.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True)
@click.option("--relevance-threshold", type=int, default=1, show_default=True,
              help="Lowest grade binary measures count as relevant, recorded in the manifest.")  # fmt: skip
@click.option("--allow-unresolved", type=click.Choice(["leave-out"]), default=None,
              help="With --final: export although disputed pairs have no decision, leaving them out (they "
              "score as unjudged); the count is recorded [default: refuse, naming them].")  # fmt: skip
@click.option("--rubric-version", default=None,
              help="Export the grades given under this rubric version (its version string or the start of its "
              "hash) [default: the current rubric]. Versions are never mixed.")  # fmt: skip
def export_command(
    db: Path, labeller: str | None, final: bool, output: Path, relevance_threshold: int,
    allow_unresolved: str | None, rubric_version: str | None,
) -> None:  # fmt: skip
    """Write TREC qrels: one labeller's (--labeller NAME) or the final ones (--final, with a manifest)."""
    from qrelkit.app.grades import export_final, export_labeller

    if bool(labeller) == final:
        raise click.UsageError("pass exactly one of --labeller NAME and --final")
    if allow_unresolved and not final:
        raise click.UsageError("--allow-unresolved goes with --final")
    store, rubric = _open(db, read_only=not final)  # --final may record a gate decided since (a write)
    try:
        if rubric_version is not None:
            rubric = _rubric_version(store, rubric_version)
        if final:
            info = export_final(store, rubric, output, relevance_threshold=relevance_threshold,
                                undecided=allow_unresolved or "refuse")  # fmt: skip
            c = info["counts"]
            click.echo(
                f"wrote {info['judgments']} judgments to {output} and {info['manifest']} "
                f"({c['adjudicated']} adjudicated, {c['overridden']} overridden, {c['agreed']} agreed, "
                f"{c['single_labeller']} single; {c['unresolved_left_out']} unresolved and "
                f"{c['ungraded_left_out']} ungraded left out)"
            )
            if info["also"]:  # model labellers' grades count: the inputs of a prediction-powered estimate
                click.echo(
                    "also wrote the model's and the people's calibration qrels: " + ", ".join(info["also"])
                )
        else:
            info = export_labeller(store, labeller or "", output, rubric_hash=rubric.content_hash)
            side = info.get("probabilities")
            click.echo(f"wrote {info['judgments']} judgments by {labeller} to {output}"
                       + ("" if side is None else f" and {side['pairs']} pairs' grade probabilities to {side['path']}"))  # fmt: skip
    finally:
        store.close()


@command.command(name="show")
@_DB
@click.argument("query_id")
@click.argument("doc_id")
def show_command(db: Path, query_id: str, doc_id: str) -> None:
    """Every grade event and adjudication of one pair, oldest first."""
    from qrelkit.app.queries import pair_history
    from qrelkit.report.judging import render_history

    store, _ = _open(db, read_only=True)
    try:
        _, events, adjudications = store.read(lambda c: pair_history(c, query_id, doc_id))
    finally:
        store.close()
    click.echo(render_history(query_id, doc_id, events, adjudications), nl=False)


def _add_model_commands() -> None:
    from .judge_model import command as model_command

    command.add_command(model_command)


_add_model_commands()


def _add_extend_command() -> None:
    from .judge_extend import command as extend_command
    from .judge_plan import command as plan_command

    command.add_command(extend_command)
    command.add_command(plan_command)


_add_extend_command()
