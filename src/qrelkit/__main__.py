"""``python -m qrelkit`` and the ``qrelkit`` command. ``qrelkit --version`` is answered here, before the
command line (click) and any subcommand load, and so is ``qrelkit trec_eval`` on small clean files
(:mod:`qrelkit.evaluation.trec_lean`); everything else goes to :func:`qrelkit.cli.main`."""

import sys


def run() -> None:
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
    from .report.trec_eval import render_trec_eval

    try:
        text = render_trec_eval(lean_argv(argv))
    except StepAside:
        return False
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
