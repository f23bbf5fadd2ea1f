"""The option sets of :mod:`qrelkit._typing`: each is spelled twice, as the tuple used at run time and as
the ``Literal`` alias a type checker reads (under ``TYPE_CHECKING``, so that importing the module loads no
:mod:`typing`); the two spellings must name the same values in the same order, and the alias built at run
time from the tuple must be that ``Literal``."""

from __future__ import annotations

import ast
import typing

from qrelkit import _typing

from .conftest import ROOT


def _spelled_for_type_checkers() -> dict[str, tuple[str, ...]]:
    """Every ``Name = Literal[...]`` of the module's source, with its values (read from the text)."""
    tree = ast.parse((ROOT / "src" / "qrelkit" / "_typing.py").read_text())
    found: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
            sub = node.value
            if isinstance(sub.value, ast.Name) and sub.value.id == "Literal":
                items = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
                target = node.targets[0]
                assert isinstance(target, ast.Name)
                found[target.id] = tuple(ast.literal_eval(item) for item in items)
    return found


def test_each_alias_names_the_values_of_its_tuple() -> None:
    spelled = _spelled_for_type_checkers()
    assert set(spelled) == set(_typing._ALIASES) and len(spelled) == 8
    for alias, choices in _typing._ALIASES.items():
        assert spelled[alias] == getattr(_typing, choices), alias
        built = getattr(_typing, alias)
        assert typing.get_origin(built) is typing.Literal and typing.get_args(built) == spelled[alias]
    assert _typing.FORMAT_CHOICES == ("auto", "trec", "jsonl", "csv", "tsv", "parquet")


def test_the_suffix_rule_reads_paths_as_pathlib_does() -> None:
    from pathlib import Path

    cases = {"a.jsonl": "jsonl", "b.NDJSON.gz": "jsonl", "c.tar.gz": "trec", "d": "trec", "e.parquet/": "parquet",
             ".csv": "trec", "f..csv": "csv", "g.csv.": "trec", "/x/y.TSV": "tsv", "x.gz": "trec",
             "runs/bm25.run": "trec", "dir.csv/run": "trec"}  # fmt: skip
    for path, want in cases.items():
        assert _typing.detect_format(path) == want, path
        assert _typing.detect_format(Path(path)) == want, path
