"""``qrelkit.__main__``: the commands that read and evaluate end without the interpreter's teardown when it
has nothing left to do, with the same output, files and exit status as the usual exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import CLI, EXAMPLE

QRELS = EXAMPLE / "qrels.txt"
RUN = EXAMPLE / "runs" / "bm25.run"

#: A process that runs ``qrelkit ARGV`` as the installed command does, holding an object whose finalizer
#: writes "teardown" to stderr when the interpreter's teardown frees it (a module global is freed only
#: there); with ``HANDLER``, an exit handler is registered first.
PROGRAM = """
import os, sys
class Witness:
    def __del__(self):
        os.write(2, b"teardown\\n")
witness = Witness()
if HANDLER:
    import atexit
    atexit.register(lambda: os.write(2, b"handler\\n"))
sys.argv = ["qrelkit", *ARGV]
from qrelkit.__main__ import run
run()
"""


def _program(argv: list[str], handler: bool = False) -> subprocess.CompletedProcess[str]:
    code = f"HANDLER = {handler!r}\nARGV = {argv!r}\n" + PROGRAM
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_eval_ends_without_the_teardown_with_its_output_and_status() -> None:
    args = ["eval", str(QRELS), str(RUN), "-f", "tsv", "-q"]
    done = _program(args)
    assert done.returncode == 0 and done.stderr == ""  # no teardown: the witness was never freed
    assert done.stdout == CLI(*args).output


def test_an_exit_handler_keeps_the_usual_exit() -> None:
    """Something registered to run at exit (coverage, a temporary folder's clean-up) runs, as before."""
    done = _program(["eval", str(QRELS), str(RUN), "-f", "tsv"], handler=True)
    assert done.returncode == 0
    assert done.stderr == "handler\nteardown\n"


def test_an_error_ends_with_its_line_and_status_1() -> None:
    done = _program(["eval", str(QRELS), "no-such.run"])
    assert done.returncode == 1
    assert done.stderr == CLI("eval", str(QRELS), "no-such.run").stderr  # the one line, no teardown
    assert done.stderr.startswith("qrelkit: error: no-such.run: ")


def test_a_usage_error_ends_with_status_2() -> None:
    done = _program(["eval", str(QRELS)])
    assert done.returncode == 2 and "Missing argument 'RUNS...'" in done.stderr
    assert "teardown" not in done.stderr


def test_the_file_written_with_o_is_whole(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = _program(["eval", str(QRELS), str(RUN), "-o", str(out)])
    assert done.returncode == 0 and "teardown" not in done.stderr
    expected = tmp_path / "expected.json"
    assert CLI("eval", str(QRELS), str(RUN), "-o", str(expected)).exit_code == 0
    assert out.read_text() == expected.read_text()


def test_other_commands_keep_the_usual_exit(tmp_path: Path) -> None:
    done = _program(["rubric", "--help"])
    assert done.returncode == 0 and done.stderr == "teardown\n"


def test_trec_eval_and_help_end_without_the_teardown() -> None:
    done = _program(["trec_eval", "-m", "ndcg_cut.10", str(QRELS), str(RUN)])
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == CLI("trec_eval", "-m", "ndcg_cut.10", str(QRELS), str(RUN)).output
    done = _program(["--help"])
    assert done.returncode == 0 and done.stderr == "" and "Commands:" in done.stdout


def test_a_closed_pipe_keeps_the_usual_exit() -> None:
    """The reader went away: stderr is closed by the command (no traceback), so the usual exit ends it."""
    code = f"HANDLER = False\nARGV = {['eval', str(QRELS), str(RUN), '-q', '-f', 'tsv']!r}\n" + PROGRAM
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "Traceback" not in err, err
