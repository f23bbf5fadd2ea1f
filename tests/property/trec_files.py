"""Generated trec_eval input for the property tests of ``qrelkit trec_eval``'s paths: a qrels text and a run
text of the given queries, documents, grades and scores (tied scores among them), with an optional comment
line and an optional final newline; and the two written to files for the readers."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hypothesis import strategies as st


def trec_files(
    *,
    queries: Sequence[str],
    docs: Sequence[str],
    grades: Sequence[int],
    scores: Sequence[float],
    most_judged_queries: int,
    most_judged: int,
    most_ranked_queries: int,
    most_retrieved: int,
) -> st.SearchStrategy[tuple[str, str]]:
    """(qrels text, run text): up to ``most_judged_queries`` judged queries of up to ``most_judged`` pairs
    each; up to ``most_ranked_queries`` queries in the run of up to ``most_retrieved`` documents each, each
    score drawn from ``scores``."""

    @st.composite
    def files(draw) -> tuple[str, str]:
        judged = draw(
            st.lists(st.sampled_from(queries), min_size=1, max_size=most_judged_queries, unique=True)
        )
        qrels = []
        if draw(st.booleans()):
            qrels.append("# a comment line")
        for q in judged:
            ids = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=most_judged, unique=True))
            qrels += [f"{q} 0 {d} {draw(st.sampled_from(grades))}" for d in ids]
        ranked = draw(
            st.lists(st.sampled_from(queries), min_size=1, max_size=most_ranked_queries, unique=True)
        )
        run = []
        for q in ranked:
            ids = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=most_retrieved, unique=True))
            run += [f"{q} Q0 {d} {i + 1} {draw(st.sampled_from(scores))!r} tagA" for i, d in enumerate(ids)]
        return "\n".join(qrels) + "\n", "\n".join(run) + ("\n" if draw(st.booleans()) else "")

    return files()


@contextmanager
def written(texts: tuple[str, str]) -> Iterator[tuple[Path, Path]]:
    """The qrels and run texts written to two files of a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = Path(tmp) / "qrels.txt", Path(tmp) / "run.txt"
        qrels.write_text(texts[0])
        run.write_text(texts[1])
        yield qrels, run
