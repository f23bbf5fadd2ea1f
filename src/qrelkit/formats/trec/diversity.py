"""Diversity judgments as TREC text: ``query_id subtopic doc_id grade`` per line (the TREC Web track's
diversity qrels, as ndeval reads them), plain or gzipped.

The layout is the one of ordinary judgments, with the second field naming a subtopic (an intent) instead of
trec_eval's unused iteration: the two cannot be told apart from the text, so these files are read only when
asked for (:func:`read_diversity_qrels`; ``qrelkit eval --diversity``), never by guessing. They are read by
the robust reader (:mod:`qrelkit.formats.trec.robust`), under the same rules as every TREC file: layout, the
id rule for query, subtopic and document ids, integer grades, gzip bounded by ``--memory-limit``, comment
lines only when asked. Its errors name the file, the line, the value and the fix. A document listed twice
for one (query, subtopic) follows ``on_duplicate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..._typing import ON_DUPLICATE_CHOICES
from ...data.values import DiversityQrels, check_choice, finish_diversity_qrels
from .common import check_trec_input
from .robust import read_bytes, split_columns

DIVERSITY_COLUMNS = ("query_id", "subtopic", "doc_id", "grade")
DIVERSITY_LAYOUT = "query_id subtopic doc_id grade"


def read_diversity_qrels(
    path: str | Path,
    *,
    name: str | None = None,
    scale: Sequence[int] | None = None,
    on_duplicate: str = "error",
    comments: bool = False,
) -> DiversityQrels:
    """Read diversity judgments (``query_id subtopic doc_id grade``) from a TREC text file; with a rubric's
    ``scale``, a grade outside it is an error naming its line."""
    check_choice(on_duplicate, ON_DUPLICATE_CHOICES, "on_duplicate")
    path = Path(path)
    source = str(path)
    check_trec_input(path, "qrels")
    raw, fingerprint = read_bytes(path, "qrels")
    frame = split_columns(raw, source, DIVERSITY_COLUMNS, DIVERSITY_LAYOUT, "run", comments=comments)
    return finish_diversity_qrels(frame, fingerprint, name, source, on_duplicate, "--on-duplicate", scale)
