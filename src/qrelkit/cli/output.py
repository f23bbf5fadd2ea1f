"""Where a command's output goes decides how it looks: the one rule every command follows.

**Results on stdout.** On a terminal a command prints its table, for people to read. When stdout is not
a terminal (a pipe, a redirect, a CI log) it prints TSV, for the next program: one line of column
names, one row per line, after a short ``#`` header of two lines (the tool version, the profile and
the fingerprints' first characters; then where the full provenance is). The full provenance (every
convention, every measure's definition, each input's fingerprint and reader counts) is in
``--format json``, or in the file named by ``--provenance FILE`` beside any format. ``-o FILE`` picks
its format by the suffix and writes the whole provenance into the file, which then stands alone.
``eval`` and ``compare`` offer the same formats: table, tsv, csv, json, markdown, latex, html (``eval``
adds trec, trec_eval's layout); ``conventions``, ``leverage`` and ``judge queue`` follow the same default
between their table and TSV, their TSV after ``#`` lines too. A command whose output is a report rather than rows (``agree``, ``pool``'s summary,
``rubric lint``) prints its text either way.

**Progress.** A long step (reading large runs, a long resampling draw, a model labeller's run) shows a
progress bar on stderr when stderr is a terminal, removed when done; otherwise one line per tenth
of the work (``qrelkit: <what>: 30% (3/10)``), so a CI log is not one long line of carriage returns.

**Notes.** Notes about the inputs that are not warnings (a manifest's signature not checked, the profile
in use) come after the result, once each, on stderr. A warning goes on stderr too, but once only: when
stderr is the same log as stdout (``2>&1``) and the printed result carries it (a ``# warning:`` line, a
field), it is not said again (:func:`echo_warnings`).

This module is the rule's owner: :func:`stdout_is_terminal`, :func:`default_format`,
:func:`progress`, :func:`resampling_progress`, :func:`write_provenance`, :func:`emit_notes` (the
short header itself is rendered by :func:`qrelkit.report.short_header_lines`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

#: Notes held until the command's result is out (:func:`note`, :func:`emit_notes`).
_NOTES: list[str] = []

#: The formats of results and comparisons (``eval`` also writes ``trec``): the same list for both commands.
SHARED_FORMATS = ("table", "tsv", "csv", "json", "markdown", "latex", "html")

#: A draw of at least this many sign vectors, resamples or trials reports its progress.
PROGRESS_DRAWS = 1_000_000


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed, or a test's captured stream
        return False


def stdout_is_terminal() -> bool:
    """Whether stdout is a terminal (people read it) rather than a pipe or a file (a program reads it)."""
    return _isatty(sys.stdout)


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal: progress bars go there, else one line per tenth."""
    return _isatty(sys.stderr)


def stderr_joins_stdout() -> bool:
    """Whether stderr and stdout are the same file (``2>&1`` into a log, not a terminal): a warning the
    printed result already carries (a ``# warning:`` line, a JSON field) is then not said again on stderr."""
    import os

    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):  # a stream without a file descriptor (a test's buffer)
        return False
    return not _isatty(sys.stdout) and (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


def warn(warning: str) -> None:
    """``warning: ...`` on stderr, once per command: a line this command said already (the people's qrels'
    choice and the estimates carry the same manifest warning) is not said again."""
    import click

    context = click.get_current_context(silent=True)
    said: set[str] = context.meta.setdefault("qrelkit.warnings_said", set()) if context else set()
    if warning in said:
        return
    said.add(warning)
    click.echo(f"warning: {warning}", err=True)


def echo_warnings(warnings: Any, printed: bool) -> None:
    """Each warning on stderr (:func:`warn`), unless the result ``printed`` on stdout carries them and
    stderr is the same log (:func:`stderr_joins_stdout`): one place each."""
    if printed and stderr_joins_stdout():
        return
    for warning in warnings:
        warn(warning)


def default_format(out_format: str | None, file_format: str | None = None) -> str:
    """The format to print: the one named (``--format``), else the output file's (by its suffix), else
    ``table`` on a terminal and ``tsv`` otherwise."""
    return out_format or file_format or ("table" if stdout_is_terminal() else "tsv")


def write_provenance(path: str, provenance: dict[str, Any]) -> None:
    """``--provenance FILE``: the provenance as one JSON document (through the outputs' writer)."""
    import json

    from ..formats.outputs import write_output

    write_output(path, json.dumps(provenance, indent=2, allow_nan=False) + "\n")


class TenthLines:
    """Progress as one line per tenth of the work on ``stream``: ``qrelkit: what: 30% (3/10)``. Each tenth
    is written once, the first time the work reaches it (a jump over several tenths writes the last)."""

    def __init__(self, what: str, total: int, stream: IO[str] | None = None, unit: str = "") -> None:
        self.what = what
        self.total = total
        self.stream = stream
        self.unit = unit
        self._tenth = 0

    def update(self, done: int, what: str | None = None) -> None:
        if self.total <= 0:
            return
        tenth = min(10, 10 * done // self.total)
        if tenth <= self._tenth:
            return
        self._tenth = tenth
        stream = self.stream or sys.stderr
        unit = f" {self.unit}" if self.unit else ""
        stream.write(f"qrelkit: {what or self.what}: {tenth * 10}% ({done:,}/{self.total:,}{unit})\n")
        stream.flush()

    def close(self) -> None:
        pass


class _Bar:
    """A rich progress bar on stderr, removed when done."""

    def __init__(self, what: str, total: int, unit: str = "") -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        count = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), count, TimeRemainingColumn(),
                             console=Console(stderr=True), transient=True)  # fmt: skip
        self._bar.start()
        self._task = self._bar.add_task(what, total=total)

    def update(self, done: int, what: str | None = None) -> None:
        if what:
            self._bar.update(self._task, completed=done, description=what)
        else:
            self._bar.update(self._task, completed=done)

    def close(self) -> None:
        self._bar.stop()


Reporter = TenthLines | _Bar


def reporter(what: str, total: int, unit: str = "", terminal: bool | None = None) -> Reporter:
    """A bar on a terminal (``terminal`` None: stderr's), else :class:`TenthLines` on stderr."""
    on_terminal = stderr_is_terminal() if terminal is None else terminal
    return _Bar(what, total, unit) if on_terminal else TenthLines(what, total, unit=unit)


@contextmanager
def progress(what: str, total: int, unit: str = "") -> Iterator[Reporter]:
    """``with progress(what, total) as bar: bar.update(done)``: the rule above, closed at the end."""
    bar = reporter(what, total, unit)
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def resampling_progress() -> Iterator[None]:
    """Progress of each long draw of a comparison (:data:`PROGRESS_DRAWS` or more sign vectors, resamples
    or trials): a bar per draw on a terminal, one line per tenth otherwise."""
    from ..agreement.resample import resample_progress

    bars: dict[str, Reporter] = {}

    def tick(what: str, done: int, total: int) -> None:
        if total < PROGRESS_DRAWS:
            return
        if what not in bars:
            bars[what] = reporter(what, total)
        bars[what].update(done)

    try:
        with resample_progress(tick):
            yield
    finally:
        for bar in bars.values():
            bar.close()


def counting(what: str, total: int) -> tuple[Callable[[int], None], Callable[[], None]]:
    """``(update, close)`` of a reporter, for a caller that reports counts through a callback."""
    bar = reporter(what, total)
    return bar.update, bar.close


def note(text: str) -> None:
    """Hold a note about the inputs (not a warning: a manifest's signature not checked, say) to print on
    stderr once, after the command's result (:func:`emit_notes`); the same note twice is printed once."""
    if text not in _NOTES:
        _NOTES.append(text)


def emit_notes() -> None:
    """Print the held notes on stderr, once each, and forget them (``qrelkit.cli.QrelkitGroup`` calls it
    after a command succeeds; a command that fails drops them: its error is what matters)."""
    import click

    for text in _NOTES:
        click.echo(text, err=True)
    _NOTES.clear()


def drop_notes() -> None:
    _NOTES.clear()
