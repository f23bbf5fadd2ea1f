"""``python -m qrelkit`` and the ``qrelkit`` command. ``qrelkit --version`` is answered here, before the
command line (click) and any subcommand load, and so is ``qrelkit trec_eval`` on small clean files
(:mod:`qrelkit.evaluation.trec_lean`); everything else goes to :func:`qrelkit.cli.main`. The commands
that read and evaluate end without the interpreter's teardown when it has nothing left to do
(:func:`_end`)."""

import sys

#: The commands whose OpenBLAS threads (loaded with numpy) go to sleep at once when idle
#: (:func:`_idle_blas_threads`).
IDLE_BLAS_THREADS = {"eval", "trec_eval"}

#: The commands whose process ends without the interpreter's teardown (:func:`_end`): they write their
#: outputs whole (``formats.outputs``) and leave no file, connection or thread behind.
QUICK_EXIT = {"eval", "trec_eval", "--help", "-h"}


def run() -> None:
    try:
        _run()
    except SystemExit as done:
        if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT:
            _end(done.code)
        raise
    if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT:
        _end(0)


def _end(code: object) -> None:
    """End the process now with ``code``, its output flushed, skipping the interpreter's teardown (freeing
    every module, numpy's and OpenBLAS's included: 30-60 ms after an evaluation, more than the evaluation
    of a TREC-sized run). Only when that teardown would do nothing the user can see: the process's own
    stdout and stderr (not a caller's replacement), both flushed without error, one thread, no exit handler
    registered, no DuckDB or SQLite module loaded; otherwise it returns and the process exits as usual."""
    import atexit
    import os

    if code is not None and type(code) is not int:
        return  # a message for SystemExit to print
    out, err = sys.stdout, sys.stderr
    if out is not sys.__stdout__ or err is not sys.__stderr__:
        return
    if out is None or err is None:
        return
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() != 1:
        return
    if getattr(atexit, "_ncallbacks", lambda: 1)() != 0:  # (CPython's count; elsewhere: the usual exit)
        return
    if "duckdb" in sys.modules or "sqlite3" in sys.modules:
        return
    try:
        out.flush()
        err.flush()
    except (OSError, ValueError):
        return  # the usual exit reports it as before
    os._exit(code if isinstance(code, int) else 0)


def _idle_blas_threads() -> None:
    """Let OpenBLAS's threads, started at numpy's import, sleep at once when they have no work instead of
    spinning for about 2^28 cycles: 20-45 ms of a 2-core machine's CPU in a command that takes 100-150 ms
    on a TREC-sized run (``benchmarks/startup.py``). The number of threads is kept, so every product sums
    in the same order as in any other process on the machine (a dot product of more than 10,000 elements
    is split between them); a timeout set in the environment is kept."""
    import os

    if not any(name in os.environ for name in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")):
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = "4"  # 2^4 cycles, OpenBLAS's least


def _run() -> None:
    if sys.argv[1:2] and sys.argv[1] in IDLE_BLAS_THREADS:
        _idle_blas_threads()
    if sys.argv[1:] == ["--version"]:
        import os

        from ._version import version_lines

        try:
            print("\n".join(version_lines()), flush=True)
        except BrokenPipeError:  # `qrelkit --version | head -c0`, as the commands do: no traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    if sys.argv[1:2] == ["trec_eval"] and _lean_trec_eval(sys.argv[2:]):
        return
    from .cli import main

    main(prog_name="qrelkit")


def _lean_trec_eval(argv: list[str]) -> bool:
    """``qrelkit trec_eval`` on small clean files with the options it fully understands, before click and
    numpy load (:func:`qrelkit.evaluation.trec_lean.lean_argv`); False when it steps aside to the command."""
    from .errors import StepAside
    from .evaluation.trec_lean import lean_argv

    try:
        out = lean_argv(argv)
    except StepAside:
        return False
    text = getattr(out, "text", None)  # laid out by the native reader (evaluation.trec_native)
    if text is None:
        from .report.trec_eval import render_trec_eval

        text = render_trec_eval(out)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # as the commands do (cli.QrelkitGroup.invoke)
        sys.stderr.close()
        raise SystemExit(0) from None
    except OSError as exc:
        from .cli import cannot_write

        message = cannot_write(exc)
        if message is None:
            raise
        print(message, file=sys.stderr)
        raise SystemExit(1) from None
    return True


if __name__ == "__main__":
    run()
