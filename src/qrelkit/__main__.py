"""``python -m qrelkit`` and the ``qrelkit`` command. ``qrelkit --version`` is answered here, before the
command line (click) and any subcommand load; everything else goes to :func:`qrelkit.cli.main`."""

import sys


def run() -> None:
    if sys.argv[1:] == ["--version"]:
        from ._version import version_lines

        print("\n".join(version_lines()))
        return
    from .cli import main

    main(prog_name="qrelkit")


if __name__ == "__main__":
    run()
