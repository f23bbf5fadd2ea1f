from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLE = ROOT / "examples" / "docsearch"


def on_a_terminal(
    command: list[str], *, stream: str = "stdout", env: dict[str, str] | None = None
) -> tuple[int, str]:
    """``command`` as a real process whose ``stream`` (stdout or stderr) is a real terminal (a pty), the
    other stream discarded: (exit status, what the terminal showed)."""
    import os
    import pty

    main, child = pty.openpty()
    os.set_inheritable(child, False)
    streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: child}
    proc = subprocess.Popen(command, stdout=streams["stdout"], stderr=streams["stderr"], env=env)
    os.close(child)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    return proc.wait(timeout=600), seen.decode("utf-8", "replace")


def data_path(*parts: str) -> Path:
    """A file of the real data the suite cross-checks against (``tests/data/``, see its README): it is in
    the repository, so a missing file is a failure, never a skip."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing: tests/data/ holds the suite's reference data")
    return path


class Cli:
    """The one way the tests run the command line: ``CLI("eval", QRELS, RUN)`` in this process with
    click's runner (stdout and stderr apart, ``exit_code``), ``CLI.process(...)`` as a real process
    (``python -m qrelkit``: what a shell sees, tracebacks and all). Arguments are turned into strings.
    ``CLI.under("compare")`` runs one command with its name given once."""

    def __init__(self, prefix: tuple[str, ...] = ()):
        self.prefix = prefix

    def __call__(self, *args: object, input: str | bytes | None = None):
        from click.testing import CliRunner

        from qrelkit.cli import main

        return CliRunner().invoke(main, [*self.prefix, *(str(a) for a in args)], input=input)

    def process(self, *args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "qrelkit", *self.prefix, *(str(a) for a in args)]
        return subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]

    def under(self, *prefix: str) -> Cli:
        return Cli((*self.prefix, *prefix))


CLI = Cli()


@pytest.fixture
def cli() -> Cli:
    """:class:`Cli`, as a fixture."""
    return CLI
