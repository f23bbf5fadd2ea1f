"""Markdown and LaTeX outputs show a name as text, never as markup: a run named like an HTML element, a link
or a table cell's end, and provenance that would end its comment, through the real command line."""

from __future__ import annotations

from pathlib import Path

from ..conftest import CLI

EVIL = "<img/src=x/onerror=alert(1)>"
LINK = "b|![x](http://e)-->"


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n")
    evil, link = tmp_path / "evil.run", tmp_path / "link.run"
    evil.write_text("".join(f"{q} Q0 {d} {r} {5 - r}.0 {EVIL}\n" for q, d, r in (("q1", "d1", 1), ("q1", "d2", 2),
                                                                               ("q2", "d1", 1))))  # fmt: skip
    link.write_text("".join(f"{q} Q0 {d} {r} {5 - r}.0 {LINK}\n" for q, d, r in (("q1", "d2", 1), ("q1", "d1", 2),
                                                                               ("q2", "d1", 1))))  # fmt: skip
    return qrels, evil, link


def _outside_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("<!-- "))


def test_markdown_escapes_names_as_the_html_outputs_do(tmp_path: Path) -> None:
    qrels, evil, link = _files(tmp_path)
    for args in (("eval", qrels, evil, link, "-m", "P@1", "-f", "markdown", "--per-query"),
                 ("compare", qrels, evil, link, "-m", "P@1", "-f", "markdown")):  # fmt: skip
        out = CLI(*args)
        assert out.exit_code == 0, out.output
        text = out.stdout
        assert "<img" not in text and "&lt;img/src=x/onerror=alert(1)&gt;" in _outside_comments(text)
        shown = _outside_comments(text)
        assert "![x](" not in shown and "b\\|![x]\\(http://e)--&gt;" in shown
        comments = [line for line in text.splitlines() if line.startswith("<!-- ")]
        assert comments and all(line.endswith(" -->") and line.count("-->") == 1 for line in comments), (
            comments
        )
        assert any("\\u003cimg/src=x/onerror=alert(1)\\u003e" in line for line in comments)


def test_latex_escapes_names_in_cells(tmp_path: Path) -> None:
    qrels, evil, _ = _files(tmp_path)
    tex = tmp_path / "tex.run"
    tex.write_text("q1 Q0 d1 1 2.0 a\\input{x}%_$\nq2 Q0 d1 1 1.0 a\\input{x}%_$\n")
    out = CLI("compare", qrels, evil, tex, "-m", "P@1", "-f", "latex")
    assert out.exit_code == 0, out.output
    body = [line for line in out.stdout.splitlines() if not line.startswith("%")]
    assert any("a\\textbackslash{}input\\{x\\}\\%\\_\\$" in line for line in body), body
    assert not any("\\input{" in line for line in body)
