"""The ``qrelkit`` command: a thin click skin over the library.

It parses arguments, calls the library, and maps errors to exit codes, the same for every command:

- 0: success;
- 1: bad input or an error (one clear line on stderr, never a traceback), the server that could not start,
  a refused line of `judge decide --decisions`;
- 2: bad usage (click's own message);
- 3: a calibration gate that did not pass: `agree --min-kappa` below the threshold, `judge kappa` on a round
  whose gate failed or was not measurable (an override opens judging but does not make the gate pass),
  `judge model status --gate-ranking` whose ranking criterion failed or was not measurable.

(`qrelkit trec_eval` gives trec_eval's own exit codes instead: it is a drop-in.)

What every command prints follows one rule, owned by :mod:`qrelkit.cli.output`:

- stdout a terminal: the table, for people; stdout not a terminal (a pipe, a file, a CI log): TSV, one row a
  line, after a two-line ``#`` header (the version, the profile, the first 12 hex digits of each input's
  SHA-256; where the full provenance is), then any warning as a ``# warning:`` line;
- the full provenance (every convention, every measure's definition, each input's fingerprint and reader
  counts) in ``--format json``, or in ``--provenance FILE`` beside any format; ``-o FILE`` writes the format
  of its suffix with the whole provenance in the file;
- ``eval`` and ``compare`` offer the same formats: table, tsv, csv, json, markdown, latex, html (``eval``
  also trec, trec_eval's layout);
- progress: a bar on stderr when stderr is a terminal, otherwise one line per tenth of the work;
- notes about the inputs that are not warnings (a manifest's signature not checked) come once, on
  stderr, after the result; a command that fails prints its error alone.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import sys
from typing import Any

import click

from .._version import version_lines
from ..errors import QrelkitError

#: The exit status of a calibration gate that did not pass (the module docstring lists every status).
EXIT_GATE_FAILED = 3

#: Old command names kept as aliases for one release: old name -> new name (top level and under ``judge``).
#: ``qrelkit --help`` does not list them; running one works as the new name does, after a note on stderr.
ALIASES = {"adjudicate": "adjudicate-files", "judge adjudicate": "judge decide"}


def alias_of(command: click.Command, old: str, new: str) -> click.Command:
    """``command`` under its old name ``old``: hidden from the listings, saying on stderr that ``new`` is its
    name now (the alias stays for one release)."""
    import copy

    alias = copy.copy(command)
    alias.name = old.split()[-1]
    alias.hidden = True
    callback = command.callback
    assert callback is not None

    def noted(*args: Any, **kwargs: Any) -> Any:
        click.echo(
            f"note: `qrelkit {old}` is now `qrelkit {new}`; the old name works for one more release", err=True
        )
        return callback(*args, **kwargs)

    alias.callback = noted
    return alias


# Sub-command groups living in their own modules: name -> "module:attribute" (imported on first use).
LAZY_COMMANDS = {
    "eval": "qrelkit.cli.evaluate:eval_command",
    "explain": "qrelkit.cli.evaluate:explain_command",
    "conventions": "qrelkit.cli.conventions:command",
    "rubric": "qrelkit.cli.rubric:command",
    "pool": "qrelkit.cli.pool:command",
    "agree": "qrelkit.cli.agree:command",
    "leverage": "qrelkit.cli.agree:leverage_command",
    "adjudicate-files": "qrelkit.cli.agree:adjudicate_command",
    "adjudicate": "qrelkit.cli.agree:adjudicate_alias",
    "judge": "qrelkit.cli.judge:command",
    "compare": "qrelkit.cli.compare:command",
    "budget": "qrelkit.cli.budget:command",
    "report": "qrelkit.cli.report:command",
    "trec_eval": "qrelkit.cli.trec_eval:command",
}

#: Each lazy sub-command's one-line help, as ``qrelkit --help`` lists it (shortened to the terminal by click's
#: rule), so that listing them imports none: tests/cli/test_surface.py holds it to each command's own help.
#: ``trec_eval`` gives a ``short_help`` (never shortened); the others, the first sentence of their help.
SHORT_HELP = {
    "adjudicate-files": "Adjudicate two labellers' disagreements in their qrels files (a judging project: `judge "
    "decide`).",
    "agree": "Agreement between labellers' judgments: two files A.qrels B.qrels, or more.",
    "budget": "Judging budgets: replay ways of choosing which pairs people judge, on judgments you already have.",
    "compare": "Compare RUNS evaluated against QRELS: paired tests, corrected p-values, intervals, effect sizes.",
    "conventions": "Score each of RUNS under every profile and under each single-axis change from the default "
    "conventions.",
    "eval": "Evaluate RUNS against QRELS.",
    "explain": "Show the arithmetic of one query's nDCG: each rank's gain, discount and contribution, the ideal "
    "ordering, DCG, IDCG, nDCG, recall at the same cutoff, and how tied scores were resolved.",
    "judge": "Judge pooled pairs in a browser: project database, invites, server, progress, kappa, exports.",
    "leverage": "Rank the judgments of QRELS by the largest nDCG@k swing a one-step regrade would cause on RUNS.",
    "pool": "Pool the top documents of RUNS per query into the pairs to judge.",
    "report": "Write one HTML page for RUNS against QRELS: the bottom line, the comparison, the judgments, the "
    "conventions and the provenance.",
    "rubric": "Check and show relevance rubrics (rubric.toml).",
    "trec_eval": "trec_eval 10's command line and output (a drop-in replacement).",
}
VERBATIM_HELP = {"trec_eval"}

#: ``qrelkit --help``'s order: the steps of the chain from a rubric to the report, then the tools.
CHAIN = ("rubric", "pool", "budget", "judge", "agree", "adjudicate-files", "leverage", "eval", "explain", "compare", "report",
         "conventions", "trec_eval", "adjudicate")  # fmt: skip


class QrelkitGroup(click.Group):
    """A group that loads sub-commands lazily and turns QrelkitError into one line and exit code 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order of the chain (:data:`CHAIN`), then any other alphabetically."""
        names = {n for n in set(super().list_commands(ctx)) | set(LAZY_COMMANDS) if self._exists(n)}
        return [n for n in CHAIN if n in names] + sorted(names - set(CHAIN))

    @staticmethod
    def _exists(name: str) -> bool:
        if name not in LAZY_COMMANDS:
            return True
        return importlib.util.find_spec(LAZY_COMMANDS[name].split(":")[0]) is not None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing of the commands (``Group.format_commands``), the lazy ones' help read from
        :data:`SHORT_HELP` instead of importing each command."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in ALIASES:
                continue
            if name in SHORT_HELP:
                text = SHORT_HELP[name]
                stub = (
                    click.Command(name, short_help=text)
                    if name in VERBATIM_HELP
                    else click.Command(name, help=text)
                )
                rows.append((name, stub.get_short_help_str(limit)))
            elif (command := self.get_command(ctx, name)) is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            if not self._exists(name):
                return None
            module, attr = LAZY_COMMANDS[name].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        _notes("drop_notes")
        try:
            result = super().invoke(ctx)
            _notes("emit_notes")  # after the result: notes about the inputs (qrelkit.cli.output.note)
            return result
        except QrelkitError as exc:
            _notes("drop_notes")
            click.echo(f"qrelkit: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except BrokenPipeError:  # e.g. `qrelkit eval ... | head`
            sys.stderr.close()
            ctx.exit(0)
        except OSError as exc:
            if exc.filename is None:
                message = cannot_write(exc)
                if message is None:
                    raise
                click.echo(message, err=True)
                ctx.exit(1)
            click.echo(f"qrelkit: error: {file_error(exc)}", err=True)
            ctx.exit(1)
        except RecursionError:
            click.echo("qrelkit: error: an input nests arrays or objects too deeply to read", err=True)
            ctx.exit(1)


def _notes(action: str) -> None:
    """``qrelkit.cli.output``'s ``emit_notes`` or ``drop_notes``, when a command loaded it (no import)."""
    output = sys.modules.get("qrelkit.cli.output")
    if output is not None:
        getattr(output, action)()


#: Write errors of a full or failing disk (stdout redirected to /dev/full, a full file system, a quota).
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def cannot_write(exc: OSError) -> str | None:
    """For a failed write to stdout of a full or failing disk: stdout pointed at /dev/null (or its flush at
    exit fails again, with a traceback) and the one line to print; ``None`` for any other error."""
    if exc.errno not in _FULL:
        return None
    _silence_stdout()
    return (
        f"qrelkit: error: cannot write the output ({exc.strerror}). Fix: free space on the disk, "
        "or send the output elsewhere"
    )


def _silence_stdout() -> None:
    """Point stdout at /dev/null, dropping what it holds, so the interpreter's last flush succeeds."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a test's captured stdout
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def file_error(exc: OSError) -> str:
    """One line for a file that could not be read or written (``-o`` into a missing folder, say)."""
    from pathlib import Path

    path = Path(exc.filename)
    reason = exc.strerror or type(exc).__name__
    if isinstance(exc, FileNotFoundError) and not path.parent.is_dir():
        return f"{path}: the folder {str(path.parent)!r} does not exist. Fix: create it first, or choose another path"
    if isinstance(exc, PermissionError):
        return f"{path}: {reason}. Fix: choose a path this user may write, or change its permissions"
    return f"{path}: {reason}"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo("\n".join(version_lines()))
    ctx.exit()


@click.group(cls=QrelkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version, the Python version and whether the native scanner is in use, and exit.",
)
def main() -> None:
    """qrelkit: trustworthy graded-relevance evaluation for search and RAG retrieval.

    Every number qrelkit writes carries its conventions, the fingerprints of its inputs and the tool
    version. Run `qrelkit COMMAND --help` for each command.
    """
