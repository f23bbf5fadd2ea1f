"""The ``qrelkit`` command: a thin click skin over the library.

It parses arguments, calls the library, and maps errors to exit codes: 0 success, 1 bad input (one clear
line on stderr, never a traceback), 2 bad usage (click's own message).
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import sys
from typing import Any

import click

from .._version import __version__
from ..errors import QrelkitError

# Sub-command groups living in their own modules: name -> "module:attribute" (imported on first use).
LAZY_COMMANDS = {
    "eval": "qrelkit.cli.evaluate:eval_command",
    "explain": "qrelkit.cli.evaluate:explain_command",
    "conventions": "qrelkit.cli.conventions:command",
    "rubric": "qrelkit.cli.rubric:command",
    "pool": "qrelkit.cli.pool:command",
    "agree": "qrelkit.cli.agree:command",
    "leverage": "qrelkit.cli.agree:leverage_command",
    "adjudicate": "qrelkit.cli.agree:adjudicate_command",
    "judge": "qrelkit.cli.judge:command",
    "compare": "qrelkit.cli.compare:command",
    "report": "qrelkit.cli.report:command",
    "trec_eval": "qrelkit.cli.trec_eval:command",
}


class QrelkitGroup(click.Group):
    """A group that loads sub-commands lazily and turns QrelkitError into one line and exit code 1."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in set(super().list_commands(ctx)) | set(LAZY_COMMANDS) if self._exists(n))

    @staticmethod
    def _exists(name: str) -> bool:
        if name not in LAZY_COMMANDS:
            return True
        return importlib.util.find_spec(LAZY_COMMANDS[name].split(":")[0]) is not None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            if not self._exists(name):
                return None
            module, attr = LAZY_COMMANDS[name].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except QrelkitError as exc:
            click.echo(f"qrelkit: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except BrokenPipeError:  # e.g. `qrelkit eval ... | head`
            sys.stderr.close()
            ctx.exit(0)
        except OSError as exc:
            if exc.filename is None:
                if exc.errno not in _FULL:
                    raise
                _silence_stdout()  # or its flush at exit fails again, with a traceback
                click.echo(
                    f"qrelkit: error: cannot write the output ({exc.strerror}). Fix: free space on the disk, "
                    "or send the output elsewhere",
                    err=True,
                )
                ctx.exit(1)
            click.echo(f"qrelkit: error: {file_error(exc)}", err=True)
            ctx.exit(1)
        except RecursionError:
            click.echo("qrelkit: error: an input nests arrays or objects too deeply to read", err=True)
            ctx.exit(1)


#: Write errors of a full or failing disk (stdout redirected to /dev/full, a full file system, a quota).
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


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


def version_lines() -> list[str]:
    """What ``qrelkit --version`` prints: the version, the Python running it, and whether the native
    scanner (:mod:`qrelkit._native`) is in use or why not."""
    import os
    import platform
    from pathlib import Path

    from .. import _native

    library = Path(_native.__file__).with_name(_native.LIBRARY)
    if _native.lib is not None:
        scanner = f"in use ({library})"
    elif os.environ.get("QRELKIT_NATIVE", "1") == "0":
        scanner = "not in use (turned off: QRELKIT_NATIVE=0)"
    elif not library.is_file():
        scanner = (
            "not built (no C compiler when qrelkit was installed); files are parsed with Arrow, same numbers"
        )
    else:
        scanner = f"not in use ({library} did not load or is from another version of its C sources)"
    return [
        f"qrelkit {__version__}",
        f"Python {platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        f"native scanner: {scanner}",
    ]


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
