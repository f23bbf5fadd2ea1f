"""Help that starts short: a command's ``--help`` opens with its one-line purpose, the five options most
people use (a short line each) and one example, then the rest of its description and the other options
grouped (measures and statistics, conventions, inputs, outputs, scale). tests/cli/test_help.py holds the
opening block under :data:`USAGE_BLOCK_LINES` lines."""

from __future__ import annotations

from typing import Any

import click

#: The opening block of a command's help (usage, purpose, the five options, the example) stays under this.
USAGE_BLOCK_LINES = 25

#: The title each option is listed under after the opening block; an option not named here is "Other options".
_STATISTICS = ("measures", "per_query", "baselines", "all_pairs", "test", "permutations", "seed", "resamples",
               "correction", "family", "alpha", "multi", "noise", "labellers", "replicates", "smoothing", "power",
               "power_delta")  # fmt: skip
_INPUTS = ("input_format", "on_duplicate", "comments", "rubric", "manifest", "project", "human", "estimator",
           "run_model", "diversity", "strict")  # fmt: skip
GROUPS: dict[str, str] = {
    **dict.fromkeys(_STATISTICS, "Measures and statistics"),
    **dict.fromkeys(_INPUTS, "Inputs"),
    **dict.fromkeys(("out_format", "output", "provenance", "bounds"), "Outputs"),
    **dict.fromkeys(("memory_limit", "engine", "master"), "Scale"),
}
ORDER = ("Measures and statistics", "Conventions (--profile, then one flag per axis)", "Inputs", "Outputs", "Scale",
         "Other options")  # fmt: skip
CONVENTIONS = ORDER[1]


def _names(param: click.Parameter) -> str:
    """An option's names as the opening block shows them: ``-o, --output FILE``, ``--profile NAME`` (no list of
    choices: its short line names them)."""
    names = ", ".join(param.opts)
    if isinstance(param, click.Option) and param.is_flag:
        return names
    if isinstance(param.type, click.Choice):
        return f"{names} NAME"
    if isinstance(param.type, click.Path):
        return f"{names} FILE"
    return f"{names} {param.metavar or 'TEXT'}"


class ShortHelp(click.Command):
    """A command whose help opens with ``common`` (option name -> one short line, five of them) and
    ``example``; its other options are listed by :data:`GROUPS` (the convention axes and ``--profile``
    together)."""

    def __init__(
        self, *args: Any, common: dict[str, str] | None = None, example: str = "", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.common = common or {}
        self.example = example

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        import inspect

        text = inspect.cleandoc(self.help or "")
        first, _, rest = text.partition("\n\n")
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(first)
        by_name = {p.name: p for p in self.get_params(ctx)}
        rows = []
        for name, line in self.common.items():
            rows.append((_names(by_name[name]), line))
        with formatter.section("Most used"):
            formatter.write_dl(rows)
        if self.example:
            with formatter.section("Example"):  # verbatim: a command wrapped mid-way would not paste
                for line in self.example.splitlines():
                    formatter.write(f"{'':>{formatter.current_indent}}{line}\n")
        if rest:
            with formatter.section("Details"):
                for i, paragraph in enumerate(rest.split("\n\n")):
                    if i:
                        formatter.write_paragraph()
                    formatter.write_text(paragraph)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from .options import CONVENTION_FLAGS

        axes = {axis for axis, *_ in CONVENTION_FLAGS} | {"profile"}
        groups: dict[str, list[tuple[str, str]]] = {title: [] for title in ORDER}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            title = CONVENTIONS if param.name in axes else GROUPS.get(param.name or "", "Other options")
            groups[title].append(record)
        for title in ORDER:
            if groups[title]:
                with formatter.section(title):
                    formatter.write_dl(groups[title])
