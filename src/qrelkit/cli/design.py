"""The path of ``eval`` for qrels a live queue's design chose what people judged: the estimate under that
design (:func:`qrelkit.budget.queue.estimate_export`), with its estimator named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["design_values", "show_design_comparison", "show_design_estimates"]


def _records_design(qrels: str, manifest: str | None) -> bool:
    """Whether the manifest of ``qrels`` (or ``manifest``) records a live queue's design; read without
    importing the estimators, so an evaluation without one loads nothing more."""
    from ..judgments.manifest import manifest_beside

    beside = manifest_beside(qrels, manifest)
    return beside is not None and bool(beside[1].get("design"))


def _estimate(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], manifest: str | None) -> Any:
    from ..budget.queue import estimate_export

    return estimate_export(qrels, runs, measures or None, manifest)


def _format(out_format: str | None, output: str | None, what: str) -> str:
    """The format to write (``--format``, else JSON for a ``.json`` output, else a table); one the design's
    renderers do not write is a usage error naming ``what`` is written."""
    from ..report.design import FORMATS

    fmt = out_format or ("json" if output and output.endswith(".json") else "table")
    if fmt not in FORMATS:
        raise click.UsageError(f"{what} written as {'|'.join(FORMATS)}, not {fmt}")
    return fmt


def _emit(text: str, output: str | None, wrote: str | None) -> None:
    """``text`` to ``output`` (and the ``wrote`` line on stderr, when given), else to stdout."""
    if output:
        from ..formats.outputs import write_output

        write_output(Path(output), text)
        if wrote:
            click.echo(wrote, err=True)
    else:
        click.echo(text, nl=False)


def _say_estimator(found: Any, estimators: list[str]) -> None:
    """The estimators used, named on stderr, with the design they are valid under."""
    click.echo(f"estimator: {'; '.join(dict.fromkeys(estimators))}, valid under the design the manifest records "
               f"({found.design['strategy']}, seed {found.design['seed']})", err=True)  # fmt: skip
    if found.withheld:
        click.echo(f"no intervals: {found.withheld}", err=True)


def show_design_estimates(qrels: str, manifest: str | None, runs: tuple[str, ...], measures: tuple[str, ...],
                          out_format: str | None, output: str | None) -> bool:  # fmt: skip
    """Render the estimates when the manifest of ``qrels`` records a design; ``False`` (nothing done) when it
    records none or no manifest is beside them."""
    if not _records_design(qrels, manifest):
        return False
    from ..report.design import render_design_estimates

    fmt = _format(out_format, output, "estimates under a design are")
    found = _estimate(qrels, runs, measures, manifest)
    _say_estimator(found, [e.estimator for e in found.estimates])
    _emit(
        render_design_estimates(found.to_dict(), fmt),
        output,
        f"wrote {output} ({fmt}: estimates under the design)",
    )
    return True


def show_design_comparison(qrels: str, manifest: str | None, runs: tuple[str, ...], measures: tuple[str, ...],
                           baselines: tuple[str, ...], out_format: str | None, output: str | None) -> bool:  # fmt: skip
    """``compare`` of an export whose manifest records a design: each run against the baseline under the
    design's estimator, named; ``False`` (nothing done) without a design."""
    if not _records_design(qrels, manifest):
        return False
    from ..report.design import render_design_differences

    fmt = _format(out_format, output, "a comparison under a design is")
    found = _estimate(qrels, runs, measures, manifest)
    rows = found.differences(baselines or None)
    _say_estimator(found, [r["estimator"] for r in rows])
    _emit(render_design_differences(found.to_dict(), rows, fmt), output, None)
    return True


def design_values(dossier: Any, qrels: str, manifest: str | None, runs: tuple[str, ...], measures: tuple[str, ...],
                  baselines: tuple[str, ...]) -> Any:  # fmt: skip
    """``report``'s dossier with the estimates under the design the manifest of ``qrels`` records (in
    ``extra["design"]``), or as it was without one."""
    import dataclasses

    if not _records_design(qrels, manifest):
        return dossier
    found = _estimate(qrels, runs, measures, manifest)
    values = {**found.to_dict(), "differences": found.differences(baselines or None)}
    _say_estimator(found, [e.estimator for e in found.estimates])
    return dataclasses.replace(dossier, extra={**dossier.extra, "design": values})
