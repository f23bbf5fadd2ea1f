"""``qrelkit trec_eval``'s options are one table (:data:`qrelkit.evaluation.trec_options.OPTIONS`): the
click command and the reader before click are both built from it, and its defaults are
:class:`~qrelkit.evaluation.trec_eval.TrecOptions`'."""

from __future__ import annotations

import dataclasses

from qrelkit.cli.trec_eval import command
from qrelkit.evaluation.trec_eval import TrecOptions
from qrelkit.evaluation.trec_options import ARGUMENTS, OPTIONS, trec_options


def test_the_defaults_are_trec_options_defaults() -> None:
    assert TrecOptions(**trec_options({})) == TrecOptions()
    fields = {f.name for f in dataclasses.fields(TrecOptions)}
    assert set(trec_options({})) == fields


def test_the_click_command_has_the_tables_options_in_its_order() -> None:
    params = [(p.name, p.opts) for p in command.params]
    assert params == [(o.dest, [o.flag]) for o in OPTIONS] + [(a, [a]) for a in ARGUMENTS]


def test_the_reader_before_click_takes_every_short_option() -> None:
    assert [o.flag for o in OPTIONS if o.short] == ["-q", "-c", "-J", "-n", "-l", "-m", "-M", "-N"]
