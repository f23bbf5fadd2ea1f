"""LaTeX escaping, shared by the LaTeX renderings of results and comparisons."""

from __future__ import annotations


def tex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped, for a table cell or a caption."""
    text = " ".join(str(text).splitlines()).replace("\\", "\x00")
    for a, b in (("&", "\\&"), ("%", "\\%"), ("$", "\\$"), ("#", "\\#"), ("_", "\\_"), ("{", "\\{"),
                 ("}", "\\}"), ("~", "\\textasciitilde{}"), ("^", "\\^{}")):  # fmt: skip
        text = text.replace(a, b)
    return text.replace("\x00", "\\textbackslash{}").replace("–", "--")
