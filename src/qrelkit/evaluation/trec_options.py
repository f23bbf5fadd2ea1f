"""``qrelkit trec_eval``'s options, defined once: :data:`OPTIONS` is the table both readers of the command
line are built from, the click command (:mod:`qrelkit.cli.trec_eval`, which adds ``-h``/``--help`` and the
two files) and the reader that runs before click loads (:func:`qrelkit.evaluation.trec_lean.lean_argv`,
which reads the short spellings, each a token of its own or with its value attached, and leaves anything
else to click). :func:`trec_options` turns what either read into the keywords of
:class:`~qrelkit.evaluation.trec_eval.TrecOptions` (``tests/evaluation/test_trec_options.py`` holds the
defaults equal).

Imports nothing: ``qrelkit trec_eval``'s start-up reads it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs this path's start-up a few milliseconds
if TYPE_CHECKING:
    from typing import Any


class Option:
    """One option: its spelling, where its value goes, its type (``"flag"``: present or not; ``"int"``; a
    ``"text"`` given any number of times when ``multiple``), its default and its help."""

    __slots__ = ("default", "dest", "flag", "help", "metavar", "multiple", "show_default", "type")

    def __init__(
        self,
        flag: str,
        dest: str,
        type: str,
        default: object,
        help: str,
        *,
        metavar: str | None = None,
        multiple: bool = False,
        show_default: bool = False,
    ) -> None:
        self.flag, self.dest, self.type, self.default, self.help = flag, dest, type, default, help
        self.metavar, self.multiple, self.show_default = metavar, multiple, show_default

    @property
    def short(self) -> bool:
        """A one-letter spelling (``-q``), which the reader before click takes."""
        return len(self.flag) == 2 and self.flag[0] == "-" and self.flag[1] != "-"


#: trec_eval 10's options, in the order ``--help`` lists them.
OPTIONS: tuple[Option, ...] = (
    Option("-q", "per_query", "flag", False, "also print each query's values"),
    Option("-c", "complete", "flag", False, "average over every judged query; missing ones score 0"),
    Option("-J", "judged_only", "flag", False, "drop returned documents that are not judged"),
    Option("-n", "no_summary", "flag", False, "print no summary lines"),
    Option("-l", "rel_level", "int", 1, "lowest relevant grade", show_default=True),
    Option(
        "-m",
        "measures",
        "text",
        (),
        "measure or nickname (official, set, all_trec), e.g. -m map -m P.5,10 [default: official]",
        metavar="MEASURE[.PARAMS]",
        multiple=True,
    ),
    Option("-M", "max_per_topic", "int", None, "keep the first N documents per query"),
    Option("-N", "num_docs", "int", 0, "documents in the collection (for utility)"),
    Option(
        "--trec-eval-parsing",
        "trec_eval_parsing",
        "flag",
        False,
        "read scores with C's atof and grades with atol, as trec_eval does (nan, inf, 0x1p3, 1.5abc, "
        "abc as 0, a grade 1.5 as 1) instead of refusing them",
    ),
)

#: The two files, after the options (or among them).
ARGUMENTS = ("qrels", "run")


def defaults() -> dict[str, object]:
    """Every option's destination and its default."""
    return {o.dest: o.default for o in OPTIONS}


def trec_options(values: dict[str, Any]) -> dict[str, Any]:
    """The keywords of :class:`~qrelkit.evaluation.trec_eval.TrecOptions` for the options' values (by
    destination; the ones not given take their default): ``-n`` is ``summary=False``, ``-m`` a tuple."""
    out = {**defaults(), **values}
    out["summary"] = not out.pop("no_summary")
    out["measures"] = tuple(out["measures"])
    return out
