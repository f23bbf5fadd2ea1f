"""``python -m qrelkit`` and the ``qrelkit`` command. ``qrelkit --version`` is answered here, before the
command line (click) and any subcommand load; everything else goes to :func:`qrelkit.cli.main`."""

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
    from .cli import main

    main(prog_name="qrelkit")


if __name__ == "__main__":
    run()
