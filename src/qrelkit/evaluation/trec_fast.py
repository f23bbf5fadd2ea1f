"""The fast path of ``qrelkit trec_eval``: trec_eval's ranked relevance lists straight from the native
scanner's blocks, in their sparse form, without a dataframe.

:func:`qrelkit.evaluation.trec_eval.trec_eval_files` tries this first. Both files are read by the native scanner
(:mod:`qrelkit._native`, the same blocks and checks as the streaming readers): the judgments go into a
table keyed by (query, document); each block of the run, cut where a query begins and scanned on one of
two threads, is ranked there in trec_eval's order (``qk_trec_rank``: score descending, then document id
descending) and joined with the table, and only the rows of judged documents are kept, at their ranks
(:class:`~qrelkit.engine.trec.kernels.RelLists` in its sparse form: a 1000-document ranking with 100 judged
documents costs 100 rows). The kernels then give the same floats as on the dense lists
(``tests/property/test_trec_sparse_lists.py``).

Whatever this path does not take raises :class:`~qrelkit.errors.StepAside`, and the readers take the files
the usual way, which also reports any error: a file that is not clean TREC text, gzip or not, a run whose
queries are not grouped (a query that comes back), two tags, a document twice in a query, a judgment given
twice, no scanner built. So it never changes a number or an error; ``tests/crosscheck`` compares both paths
on every option.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._native import JudgedTable, built, gather, scan_qrels, scan_run, trec_rank
from .._typing import detect_format
from ..engine.trec import kernels as tk
from ..errors import StepAside

#: The highest grade this path counts per level (a table of queries by grades); above it, the readers.
MAX_LEVELS = 1 << 10


def _ids(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Ids given by Arrow-style offsets into bytes, as a numpy bytes array (fixed width)."""
    lengths = offsets[1:] - offsets[:-1]
    width = max(int(lengths.max()) if len(lengths) else 1, 1)
    matrix = gather(data, offsets[:-1], offsets[1:], width)
    return matrix.view(f"S{width}").ravel()


def _concat_offsets(parts: list[np.ndarray]) -> np.ndarray:
    """Arrow-style offsets of blocks joined end to end."""
    out = [np.zeros(1, dtype=np.int64)]
    base = 0
    for off in parts:
        out.append(off[1:] + base)
        base += int(off[-1])
    return np.concatenate(out)


class _Judgments:
    """The judgments: sorted query vocabulary, each judgment's query code and grade, and the lookup table."""

    def __init__(self, path: Path):
        from ..formats.trec.blocks import _cut_at_line, _scanned

        q_off, q_data, d_off, d_data, grades = [], [], [], [], []
        # trec_eval 10 skips a line whose first character is '#' (get_qrels.c)
        for block in _scanned(path, None, _cut_at_line, lambda b: scan_qrels(b, comments=True), hashed=False):
            if isinstance(block, str):
                break  # the file's digest: the drop-in prints no fingerprint
            q_off.append(block.q_off)
            q_data.append(block.q_data)
            d_off.append(block.d_off)
            d_data.append(block.d_data)
            grades.append(block.grade)
        if not grades or not sum(len(g) for g in grades):
            raise StepAside
        queries = _ids(_concat_offsets(q_off), np.concatenate(q_data))
        change = np.ones(len(queries), dtype=bool)
        change[1:] = queries[1:] != queries[:-1]
        heads = queries[change]  # where the query id changes: looked up once per stretch
        self.vocabulary = np.unique(heads)  # byte order: code point order of UTF-8 ids
        self.query_ids = [q.decode() for q in self.vocabulary.tolist()]
        self.code = {q: i for i, q in enumerate(self.vocabulary.tolist())}
        self.qcode = np.searchsorted(self.vocabulary, heads).astype(np.int64)[np.cumsum(change) - 1]
        self.grade = np.concatenate(grades)
        table = JudgedTable.build(
            self.qcode, len(self.query_ids), _concat_offsets(d_off), np.concatenate(d_data)
        )
        if table is None:
            raise StepAside  # a judgment given twice: the reader reports it
        self.table = table
        judged = self.grade >= 0
        top = int(self.grade[judged].max()) + 1 if judged.any() else 1
        if top > MAX_LEVELS:
            raise StepAside
        n = len(self.query_ids)
        flat = np.bincount(self.qcode[judged] * top + self.grade[judged], minlength=n * top)
        self.levels = flat.reshape(n, top).astype(np.int64)


def fast_rel_lists(
    qrels_path: Path,
    run_path: Path,
    judged_only: bool,
    max_per_topic: int | None,
    rel_level: int,
    single: bool,
) -> tuple[tk.RelLists, list[str], np.ndarray, str]:
    """(sparse lists, query ids, mask of judged queries missing from the run, run name): the lists as
    :func:`qrelkit.evaluation.trec_eval.rel_lists` forms them (``-J``, ``-M``, ``-l``; scores rounded to single
    precision under ``single``), but without trec_eval's stand-in for missing queries, which the caller
    adds. Raises :class:`StepAside` for anything the readers must take."""
    from ..formats.trec.blocks import RunTag, _cut_at_query, _scanned

    if not built() or detect_format(qrels_path) != "trec" or detect_format(run_path) != "trec":
        raise StepAside
    from ..formats.trec.common import check_trec_input

    check_trec_input(qrels_path, "qrels")  # refused at once: not a file, past its bound, not text
    check_trec_input(run_path, "run")
    if not (qrels_path.is_file() and run_path.is_file()):
        raise StepAside
    judgments = _Judgments(qrels_path)
    code = judgments.code

    def scan(block):
        scanned = scan_run(block, None, False, comments=True)  # and so does get_trec_results.c
        if scanned is None:
            return None
        q_off, q_data = scanned.q_off, scanned.q_data
        heads = [q_data[q_off[g] : q_off[g + 1]].tobytes() for g in scanned.group_first.tolist()]
        group_qcode = np.array([code.get(h, -1) for h in heads], dtype=np.int64)
        pos, judged = trec_rank(scanned, group_qcode, single, judgments.table)
        sizes = np.diff(np.append(scanned.group_first, scanned.kept))
        rows = np.flatnonzero(judged >= 0)
        group_of = np.searchsorted(scanned.group_first, rows, side="right") - 1
        return heads, group_qcode, sizes, group_qcode[group_of], pos[rows], judged[rows], scanned.tag

    seen: set[bytes] = set()
    run_tag = RunTag()
    n = len(judgments.query_ids)
    num_ret = np.zeros(n, dtype=np.int64)
    in_run = np.zeros(n, dtype=bool)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for item in _scanned(run_path, None, _cut_at_query, scan, hashed=False):
        if isinstance(item, str):
            break
        heads, group_qcode, sizes, qcode, pos, judged, tag = item
        run_tag.add(tag, len(heads))  # two tags: the readers decide
        if not seen.isdisjoint(heads) or len(set(heads)) < len(heads):
            raise StepAside  # a query that comes back: the readers decide
        seen.update(heads)
        known = group_qcode >= 0
        num_ret[group_qcode[known]] = sizes[known]
        in_run[group_qcode[known]] = True
        parts.append((qcode, pos, judged))
    if not seen:
        raise StepAside  # an empty run: the readers report it
    qcode = np.concatenate([p[0] for p in parts])
    pos = np.concatenate([p[1] for p in parts])
    judged = np.concatenate([p[2] for p in parts])
    if max_per_topic is not None:
        top = max(max_per_topic, 0)
        keep = pos < top
        qcode, pos, judged = qcode[keep], pos[keep], judged[keep]
        num_ret = np.minimum(num_ret, top)
    grade = judgments.grade[judged]
    rel = np.where(grade >= 0, grade, tk.UNJUDGED).astype(np.int64)
    stride = int(num_ret.max()) + 1 if n else 1
    order = np.argsort(qcode * stride + pos, kind="stable")
    qcode, pos, rel = qcode[order], pos[order], rel[order]
    counts = np.bincount(qcode, minlength=n)
    if judged_only:  # only judged documents are ranked: ranks among them
        keep = rel >= 0
        qcode, rel = qcode[keep], rel[keep]
        counts = np.bincount(qcode, minlength=n)
        starts = np.concatenate(([0], np.cumsum(counts)))[:-1]
        pos = np.arange(len(rel), dtype=np.int64) - starts[qcode]
        num_ret = counts.astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    rl = tk.RelLists(offsets, rel, judgments.levels, rel_level, num_ret, pos)
    name = run_tag.text() or run_path.stem
    return rl, judgments.query_ids, ~in_run, name
