"""Starting the command costs only what the command uses: ``--version`` is answered before click loads,
``--help`` lists the commands without importing them, and ``eval`` of small clean files imports the
modules of its path and nothing else (each list below is the whole allowed set: a new import on these
paths fails here until it is added on purpose)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import click
import pytest

from qrelkit.cli import ALIASES, LAZY_COMMANDS, SHORT_HELP, VERBATIM_HELP, main

from ..conftest import CLI, EXAMPLE

QRELS = EXAMPLE / "qrels.txt"
RUN = EXAMPLE / "runs" / "bm25.run"

#: What ``qrelkit --version`` may import: the loader of the native scanner, and the standard library.
VERSION_MODULES = {"qrelkit", "qrelkit.__main__", "qrelkit._version", "qrelkit._native"}

#: What ``qrelkit --help`` may import: click and the command group, no command.
HELP_MODULES = {"qrelkit", "qrelkit.__main__", "qrelkit._version", "qrelkit.cli", "qrelkit.errors"}

#: What ``qrelkit eval`` of small clean TREC files with the default measures may import.
SMALL_EVAL_MODULES = HELP_MODULES | {
    "qrelkit._native",
    "qrelkit._typing",
    "qrelkit.cli.evaluate",
    "qrelkit.cli.options",  # --run-model
    "qrelkit.cli.help",  # help that starts short (click only)
    "qrelkit.cli.output",  # the output rule: table on a terminal, TSV otherwise
    "qrelkit.data",
    "qrelkit.data.columns",
    "qrelkit.engine",
    "qrelkit.engine.encoding",
    "qrelkit.engine.kernels",
    "qrelkit.engine.kernels.cascade",
    "qrelkit.engine.dispatch",
    "qrelkit.engine.encoding.encoded",
    "qrelkit.engine.kernels.ranked",
    "qrelkit.engine.registry",
    "qrelkit.engine.encoding.small",
    "qrelkit.engine.trec",
    "qrelkit.engine.trec.libm",  # DCG's logarithms, the C library's
    "qrelkit.evaluation",
    "qrelkit.evaluation.core",
    "qrelkit.evaluation.files",
    "qrelkit.evaluation.plan",
    "qrelkit.evaluation.results",
    "qrelkit.evaluation.routes",  # plan.ROUTES' table
    "qrelkit.fingerprint",
    "qrelkit.formats",
    "qrelkit.formats.inputs",
    "qrelkit.formats.trec",
    "qrelkit.formats.trec.common",
    "qrelkit.formats.trec.small",
    "qrelkit.judgments",
    "qrelkit.judgments.manifest",  # is there a manifest beside the qrels?
    "qrelkit.measures",
    "qrelkit.measures.conventions",
    "qrelkit.measures.grammar",
    "qrelkit.measures.irm_names",  # the grammar's aliases
    "qrelkit.measures.trec_names",  # `eval -m P_10`
    "qrelkit.naming",
    "qrelkit.report",
}


def _imported(*args: str) -> tuple[str, set[str], set[str]]:
    """Run ``qrelkit ARGS`` as the installed command does (``qrelkit.__main__.run``) in a fresh interpreter:
    (its stdout, the qrelkit modules it imported, the top-level packages from outside the standard library
    it imported)."""
    code = (
        "import contextlib, io, sys\n"
        "before = set(sys.modules)\n"
        f"sys.argv = ['qrelkit', *{list(args)!r}]\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        from qrelkit.__main__ import run\n"
        "        run()\n"
        "    except SystemExit as exit:\n"
        "        assert not exit.code, exit.code\n"
        "new = set(sys.modules) - before\n"
        "print(out.getvalue(), end='\\x00')\n"
        "print(sorted(m for m in new if m.split('.')[0] == 'qrelkit'), end='\\x00')\n"
        "print(sorted({m.split('.')[0] for m in new} - set(sys.stdlib_module_names) - {'qrelkit'}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out, ours, theirs = proc.stdout.split("\x00")
    return out, set(eval(ours)), set(eval(theirs))


def test_version_is_answered_before_click_and_numpy_load() -> None:
    out, ours, theirs = _imported("--version")
    assert ours == VERSION_MODULES
    assert theirs == set()  # neither click nor numpy
    assert out == CLI("--version").output  # the same lines as through click
    assert out.splitlines()[0].startswith("qrelkit ") and out.splitlines()[2].startswith("native scanner: ")


def test_version_into_a_closed_pipe_prints_no_traceback() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "qrelkit", "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader went away before the first line
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "Traceback" not in err, err


def test_help_imports_no_command() -> None:
    """(The listing itself is click's, from the table: the two tests below.)"""
    out, ours, theirs = _imported("--help")
    assert ours == HELP_MODULES
    assert theirs == {"click"}
    listed = out.split("Commands:\n")[1].splitlines()
    # the order of the chain, from a rubric to the report, then the tools; no old name (an alias)
    assert [line.split()[0] for line in listed if not line.startswith("    ")] == [
        "rubric", "pool", "budget", "judge", "agree", "adjudicate-files", "leverage", "eval", "explain", "compare", "report",
        "conventions", "trec_eval",
    ]  # fmt: skip
    assert any(line.split(None, 1) == ["eval", "Evaluate RUNS against QRELS."] for line in listed)


def test_eval_of_small_clean_files_imports_only_its_path() -> None:
    out, ours, theirs = _imported("eval", str(QRELS), str(RUN), "-f", "tsv")
    assert "nDCG@10" in out
    assert ours == SMALL_EVAL_MODULES, (sorted(ours - SMALL_EVAL_MODULES), sorted(SMALL_EVAL_MODULES - ours))
    assert theirs == {"click", "numpy"}


def test_a_small_evaluation_imports_no_thread_pool() -> None:
    """concurrent.futures (with logging, about 9 ms) loads only where a second run or a large file needs it."""
    code = (
        "import sys\n"
        "from qrelkit.cli import main\n"
        f"main(['eval', {str(QRELS)!r}, {str(RUN)!r}, '-f', 'tsv'], standalone_mode=False)\n"
        "print(sorted(m for m in ('concurrent.futures', 'logging') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_the_help_table_is_each_commands_own_short_help() -> None:
    assert set(SHORT_HELP) == set(LAZY_COMMANDS) - set(ALIASES) and set(SHORT_HELP) >= VERBATIM_HELP
    ctx = click.Context(main)
    for name in SHORT_HELP:
        command = main.get_command(ctx, name)
        assert command is not None
        assert (name in VERBATIM_HELP) == bool(command.short_help), name
        for limit in (20, 45, 74, 120, 400):
            stub = (
                click.Command(name, short_help=SHORT_HELP[name])
                if name in VERBATIM_HELP
                else click.Command(name, help=SHORT_HELP[name])
            )
            assert stub.get_short_help_str(limit) == command.get_short_help_str(limit), (name, limit)


@pytest.mark.parametrize("width", [40, 80, 200])
def test_the_help_lists_the_commands_as_click_would(width: int) -> None:
    """The listing from the table, beside click's own listing of the imported commands."""
    ctx = click.Context(main, terminal_width=width, max_content_width=width)
    ours = click.HelpFormatter(width=width, max_width=width)
    main.format_commands(ctx, ours)
    theirs = click.HelpFormatter(width=width, max_width=width)
    click.Group.format_commands(main, ctx, theirs)
    assert ours.getvalue() == theirs.getvalue() and "eval" in ours.getvalue()


#: What ``qrelkit trec_eval`` of small clean TREC files may import: no click, no numpy.
TREC_EVAL_MODULES = VERSION_MODULES | {
    "qrelkit._typing",
    "qrelkit.engine",
    "qrelkit.engine.trec",
    "qrelkit.engine.trec.lean_kernels",  # trec_eval's measures in plain Python
    "qrelkit.engine.trec.registry",  # which engine computes each trec_eval measure
    "qrelkit.errors",
    "qrelkit.evaluation",
    "qrelkit.evaluation.routes",  # the plan's route table: trec_eval's first readers need no numpy
    "qrelkit.evaluation.trec_lean",
    "qrelkit.evaluation.trec_native",  # tried first: it leaves measures with parameters to trec_lean
    "qrelkit.evaluation.trec_options",  # the command's options, one table for click and the lean reader
    "qrelkit.formats",
    "qrelkit.formats.inputs",
    "qrelkit.formats.trec",
    "qrelkit.formats.trec.common",  # the input checks every TREC reader makes first
    "qrelkit.measures",
    "qrelkit.measures.trec_names",
    "qrelkit.naming",
    "qrelkit.report",
    "qrelkit.report.trec_eval",  # trec_eval's layout
}


#: What ``qrelkit trec_eval -m all_trec`` (measures by name, in one native call) of small clean TREC files
#: may import: the measures' names, the option table, the route and the native library.
NATIVE_TREC_EVAL_MODULES = VERSION_MODULES | {
    "qrelkit._typing",  # the format a file's suffix names
    "qrelkit.errors",
    "qrelkit.evaluation",
    "qrelkit.evaluation.routes",
    "qrelkit.evaluation.trec_lean",  # its reader of the command line and its route
    "qrelkit.evaluation.trec_native",
    "qrelkit.evaluation.trec_options",
    "qrelkit.measures",
    "qrelkit.measures.trec_names",
}


def test_trec_eval_by_measure_names_takes_the_native_path_and_imports_only_its_modules() -> None:
    """``-m all_trec`` laid out in C (:mod:`qrelkit.evaluation.trec_native`): neither the plain-Python
    kernels, nor the layout module, nor the standard library's ``re``, ``collections`` or ``importlib``
    (each a millisecond or more of a command whose whole time is about 15 ms, benchmarks/startup_floor.py)."""
    from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
    from qrelkit.report.trec_eval import render_trec_eval

    args = ["-q", "-c", "-m", "all_trec", str(QRELS), str(RUN)]
    out, ours, theirs = _imported("trec_eval", *args)
    assert ours == NATIVE_TREC_EVAL_MODULES, (
        sorted(ours - NATIVE_TREC_EVAL_MODULES),
        sorted(NATIVE_TREC_EVAL_MODULES - ours),
    )
    assert theirs == set()
    options = TrecOptions(per_query=True, complete=True, measures=("all_trec",))
    assert out == render_trec_eval(trec_eval_files(QRELS, RUN, options))  # the numpy path's bytes
    assert _loaded_by_lean_trec_eval(args, ("re", "collections", "importlib", "typing", "pathlib")) == []


def test_trec_eval_of_small_clean_files_imports_neither_click_nor_numpy() -> None:
    from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
    from qrelkit.report.trec_eval import render_trec_eval

    # gains given to ndcg: the lean path's (the native path takes measures by name and cutoffs)
    args = ["-q", "-c", "-m", "ndcg.1=3,2=7", "-m", "official", str(QRELS), str(RUN)]
    out, ours, theirs = _imported("trec_eval", *args)
    assert ours == TREC_EVAL_MODULES, (sorted(ours - TREC_EVAL_MODULES), sorted(TREC_EVAL_MODULES - ours))
    assert theirs == set()
    options = TrecOptions(per_query=True, complete=True, measures=("ndcg.1=3,2=7", "official"))
    assert out == render_trec_eval(trec_eval_files(QRELS, RUN, options))  # the numpy path's bytes
    assert out == CLI("trec_eval", *args).output


def test_trec_eval_of_small_clean_files_loads_neither_typing_nor_pathlib() -> None:
    """Each costs several milliseconds of a command whose whole time on a small run is about 30 ms
    (benchmarks/startup_floor.py): the path checks, reads and names files with os alone. (Modules loaded
    before it, by site or a coverage hook, are not counted.)"""
    # ndcg's gains: the lean path (the native path's own test is above)
    args = ["-q", "-c", "-m", "all_trec", "-m", "ndcg.1=3", str(QRELS), str(RUN)]
    assert _loaded_by_lean_trec_eval(args, ("typing", "pathlib", "urllib.parse")) == []


def _loaded_by_lean_trec_eval(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Which of the modules ``names`` ``qrelkit trec_eval ARGS`` loads before click (``_lean_trec_eval``),
    in a fresh interpreter; it must take the files. (Modules loaded before it, by site or a coverage hook,
    are not counted; the output is caught with io, loaded at the interpreter's start: contextlib would
    load collections.)"""
    code = (
        "import io, sys\n"
        "before = set(sys.modules)\n"
        "shown, sys.stdout = sys.stdout, io.StringIO()\n"
        "from qrelkit.__main__ import _lean_trec_eval\n"
        f"assert _lean_trec_eval({args!r}), 'stepped aside'\n"
        "sys.stdout = shown\n"
        f"print(sorted(m for m in {names!r} if m in set(sys.modules) - before))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.strip())


def test_trec_eval_with_a_measure_it_does_not_compute_goes_through_click() -> None:
    measure = "G.1=0.5"  # fractional gains: summed rank by rank on the numpy path
    out, ours, theirs = _imported("trec_eval", "-m", measure, str(QRELS), str(RUN))
    assert "qrelkit.cli.trec_eval" in ours and {"click", "numpy"} <= theirs
    assert out == CLI("trec_eval", "-m", measure, str(QRELS), str(RUN)).output and out.startswith("G_1=0.5")


def test_trec_eval_into_a_closed_pipe_or_a_full_disk() -> None:
    """As the commands through click: a closed pipe ends it quietly (exit 0), a full disk with one line."""
    command = [sys.executable, "-m", "qrelkit", "trec_eval", "-q", str(QRELS), str(RUN)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "Traceback" not in err, err
    with open("/dev/full", "w") as full:
        done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr == (
        "qrelkit: error: cannot write the output (No space left on device). Fix: free space on the disk, "
        "or send the output elsewhere\n"
    )


def test_eval_of_a_run_past_the_small_paths_size_imports_no_dataframe_library() -> None:
    """A run too large for the small path, with measures that have cutoffs, is read to their depth by the
    native scanner and ranked by numpy (the small path's size is lowered below the run's here, above the
    judgments, as for a run of millions of lines); the numbers are the streaming reader's."""
    from qrelkit._native import built

    if not built():
        pytest.skip("the native scanner is not built: the streaming readers read such a run")
    assert QRELS.stat().st_size < RUN.stat().st_size
    code = (
        "import sys\n"
        "from qrelkit.formats.trec import small\n"
        f"small.SMALL_FILE_BYTES = {QRELS.stat().st_size}\n"
        "from qrelkit.cli import main\n"
        f"main(['eval', {str(QRELS)!r}, {str(RUN)!r}, '-f', 'json'], standalone_mode=False)\n"
        "print(sorted(m for m in ('polars', 'pyarrow', 'duckdb') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    *out, imported = proc.stdout.strip().splitlines()
    assert imported == "[]"
    assert '"reader": "fast"' in "\n".join(out)  # read by the native scanner to the depth


@pytest.mark.parametrize("given", [None, "6"])
def test_eval_lets_idle_blas_threads_sleep_and_keeps_their_number(given: str | None) -> None:
    """OpenBLAS's threads spin after numpy's import: eval lets them sleep at once (a timeout set in the
    environment is kept) and starts as many as a process of its own would, so a product sums as there."""
    pytest.importorskip("threadpoolctl")
    code = (
        "import contextlib, io, os, sys\n"
        "from threadpoolctl import threadpool_info\n"
        "def threads():\n"
        "    return [i['num_threads'] for i in threadpool_info() if i['internal_api'] == 'openblas']\n"
        "if sys.argv[1] == 'numpy':\n"
        "    import numpy\n"
        "    print(threads())\n"
        "    sys.exit(0)\n"
        f"sys.argv = ['qrelkit', 'eval', {str(QRELS)!r}, {str(RUN)!r}, '-f', 'tsv']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        from qrelkit.__main__ import run\n"
        "        run()\n"
        "    except SystemExit as exit:\n"
        "        assert not exit.code, exit.code\n"
        "print(threads(), os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n"
    )
    names = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")
    env = {k: v for k, v in os.environ.items() if k not in names}
    if given is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = given

    def out(which: str) -> str:
        command = [sys.executable, "-c", code, which]
        return subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout.strip()

    alone = out("numpy")
    assert out("eval") == f"{alone} {given or '4'}"
