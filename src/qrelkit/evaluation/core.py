"""``evaluate(qrels, runs, measures, conventions) -> Results``: the one entry point for numbers.

:func:`evaluate_files` is the one place that chooses how files are read: it tries the small-input path
first (numpy alone), then reads each run by streaming, whole, or through DuckDB under a memory limit, in
the order :mod:`qrelkit.formats.trec` lists. The dataframe libraries are imported only when a path needs
them, so a small evaluation loads numpy alone.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.dispatch import compute
from ..engine.encoded import Encoded, QuerySet, encoding_key
from ..engine.registry import FRAME
from ..errors import StepAside, Ungrouped, ValidationError
from ..fingerprint import Fingerprint, hash_ahead
from ..measures.conventions import DEFAULT, Conventions
from ..measures.grammar import DIVERSITY_DEFAULT_MEASURES, Measure, parse_measures, required_depth
from ..naming import check_run_names
from .results import Results, RunValues, assemble

if TYPE_CHECKING:  # polars loads only on the paths that read frames
    import polars as pl

    from ..data.values import DiversityQrels, Qrels, Run


def _as_runs(runs: Run | Sequence[Run] | Mapping[str, Run]) -> list[Run]:
    from ..data.values import Run

    if isinstance(runs, Run):
        items = [runs]
    elif isinstance(runs, Mapping):
        items = [Run(r.frame, r.fingerprint, name, r.meta) for name, r in runs.items()]
    else:
        items = list(runs)
    if not items:
        raise ValidationError("no runs to evaluate", fix="pass at least one run")
    for run in items:
        if not isinstance(run, Run):
            raise ValidationError(
                f"expected a Run, got {type(run).__name__}",
                fix="read runs with qrelkit.read_run or build them with Run.from_dict / run_from_frame",
            )
    check_run_names([r.name for r in items], [str(r.meta.get("source", "")) for r in items])
    return items


def _check_depth(run: Run, measures: Sequence[Measure], conv: Conventions) -> None:
    kept = run.meta.get("kept_top")
    if kept is None:
        return
    needed = required_depth(measures, conv)
    if needed is None or needed > int(kept):  # type: ignore[call-overload]  # Run.meta values are typed object; read_run records kept_top as an int
        deeper = [str(m) for m in measures if required_depth([m], conv) is None or (m.k or 0) > int(kept)]  # type: ignore[call-overload]  # as above
        raise ValidationError(
            f"run {run.name!r} was read keeping only each query's top {kept} documents, "
            f"but {', '.join(deeper)} need{'s' if len(deeper) == 1 else ''} more",
            fix="read the run with keep_top=None (or at least the largest cutoff)",
        )
    if run.meta.get("kept_top_precision") == "double":
        single = [str(m) for m in measures if m.conventions(conv).precision == "single"]
        if single:
            raise ValidationError(
                f"run {run.name!r} was cut to each query's top {kept} by double-precision scores, but "
                f"{', '.join(single)} rank{'s' if len(single) == 1 else ''} by single precision, where "
                "more documents can tie at the cutoff",
                fix="read the run with rank_single=True (evaluate_files does this for you)",
            )


def evaluate_run(
    qrels: Qrels, run: Run, measures: Sequence[Measure], conv: Conventions, engine: str = FRAME
) -> tuple[QuerySet, dict[Measure, tuple[np.ndarray, np.ndarray]]]:
    """Evaluate one run: the query set, and per measure (values, undefined mask) over its queries, with
    the kernels of ``engine`` (:data:`qrelkit.engine.registry.ENGINES`; Spark's partitions name theirs).

    Runs with more than :data:`ENCODE_BATCH_ROWS` rows are encoded in batches of whole queries (the same
    numbers, with the memory of one batch at a time)."""
    if run.frame.height > ENCODE_BATCH_ROWS:
        _check_depth(run, measures, conv)  # also when no batch has judgments to score
        return evaluate_run_batches(qrels, _query_batches(run, ENCODE_BATCH_ROWS), measures, conv, engine)
    return _evaluate_whole(qrels, run, measures, conv, engine=engine)


def _evaluate_whole(
    qrels: Qrels,
    run: Run,
    measures: Sequence[Measure],
    conv: Conventions,
    subtopics: DiversityQrels | None = None,
    engine: str = FRAME,
) -> tuple[QuerySet, dict[Measure, tuple[np.ndarray, np.ndarray]]]:
    """:func:`evaluate_run` in one encoding, however large the run (a batch is never split again: one
    query may hold more rows than a batch). With ``subtopics`` (whose projection ``qrels`` is) each
    encoding carries the subtopic judgments the diversity measures read."""
    from ..engine.encode import encode, select_queries

    _check_depth(run, measures, conv)
    queries = select_queries(qrels, run, conv)
    cache: dict[tuple[str, ...], Encoded] = {}
    values: dict[Measure, tuple[np.ndarray, np.ndarray]] = {}
    for measure in measures:
        mconv = measure.conventions(conv)
        key = encoding_key(mconv)
        if key not in cache:
            if subtopics is None:
                cache[key] = encode(qrels, run, mconv, queries, ranking=False)
            else:
                from ..engine.diversity import attach

                cache[key] = attach(encode(qrels, run, mconv, queries, ranking=True), subtopics)
        values[measure] = compute(cache[key], measure, mconv, engine)
    return queries, values


def check_judgments_kind(measures: Sequence[Measure], diversity: bool) -> None:
    """Diversity measures read diversity judgments and nothing else does: refuse a mix, naming the fix."""
    from ..measures.grammar import DIVERSITY_MEASURES

    if diversity:
        other = [str(m) for m in measures if m.name not in DIVERSITY_MEASURES]
        if other:
            raise ValidationError(
                f"{', '.join(other)} read{'s' if len(other) == 1 else ''} one grade per (query, document), "
                "which diversity judgments do not give (a document has a grade per subtopic)",
                fix="with diversity judgments ask for alpha_nDCG@k or ERR_IA@k; evaluate other measures "
                "against ordinary judgments in a separate evaluation (without --diversity)",
            )
        return
    wanting = [str(m) for m in measures if m.name in DIVERSITY_MEASURES]
    if wanting:
        raise ValidationError(
            f"{', '.join(wanting)} need{'s' if len(wanting) == 1 else ''} diversity judgments "
            "(query_id subtopic doc_id grade), which ordinary judgments do not give",
            fix="pass diversity judgments: qrelkit eval --diversity QRELS RUN (read_diversity_qrels in Python)",
        )


#: Above this many rows a run is encoded in batches of whole queries, bounding the encode step's memory.
ENCODE_BATCH_ROWS = 250_000


def _stretches(ids: pl.Series) -> tuple[np.ndarray, list[str]]:
    """Where each stretch of equal ids begins, and its id."""
    from ..data.values import stretch_starts

    heads = stretch_starts(ids)
    return heads, ids.gather(heads).to_list()


def _query_batches(run: Run, rows: int) -> Iterable[Run]:
    """Split a run into batches of whole queries holding about ``rows`` rows each, one batch at a time.

    A run whose queries each fill one stretch of rows (every run read by streaming, and runs as written) is
    cut into slices, without copying; otherwise batches are gathered by query id."""
    import polars as pl

    from ..data.values import Run

    heads, ids = _stretches(run.frame.get_column("query_id"))
    if len(set(ids)) == len(ids):
        n = run.frame.height
        cuts = heads[np.minimum(np.searchsorted(heads, np.arange(rows, n, rows)), len(heads) - 1)]
        bounds = sorted({0, n, *cuts.tolist()})
        for lo, hi in itertools.pairwise(bounds):
            yield Run(run.frame.slice(lo, hi - lo), run.fingerprint, run.name, run.meta)
        return
    counts = run.frame.group_by("query_id").len().sort("query_id")
    batch_of = (counts.get_column("len").cum_sum() - 1) // rows
    plan = counts.with_columns(batch_of.alias("batch"))
    for _batch, queries in plan.group_by("batch", maintain_order=True).agg("query_id").iter_rows():
        frame = run.frame.filter(pl.col("query_id").is_in(queries))
        yield Run(frame, run.fingerprint, run.name, run.meta)


class _RowsByQuery:
    """The rows of a frame that belong to given query ids, in the frame's order, without a pass over the
    whole frame per request: each query's rows are found once (as stretches when the frame is grouped by
    query, as judgments files are; through one sort otherwise)."""

    def __init__(self, frame: pl.DataFrame):
        self.frame = frame
        ids = frame.get_column("query_id")
        heads, names = _stretches(ids)
        self.order: np.ndarray | None = None
        if len(set(names)) != len(names):  # not grouped: find the stretches in sorted order
            self.order = ids.arg_sort().to_numpy()
            heads, names = _stretches(ids.gather(self.order))
        ends = np.append(heads[1:], frame.height) if len(heads) else heads
        self.span = dict(zip(names, zip(heads.tolist(), ends.tolist(), strict=True), strict=True))

    def rows(self, queries: Iterable[str]) -> pl.DataFrame:
        spans = [self.span[q] for q in queries if q in self.span]
        if not spans:
            return self.frame.clear()
        starts = np.array([a for a, _ in spans], dtype=np.int64)
        lengths = np.array([b - a for a, b in spans], dtype=np.int64)
        first = np.cumsum(lengths) - lengths  # where each span begins in the index
        index = np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
        if self.order is not None:
            index = self.order[index]
        index.sort()  # the frame's own order, as a filter would give
        return self.frame[index]


def evaluate_run_batches(
    qrels: Qrels,
    run_batches: Iterable[Run],
    measures: Sequence[Measure],
    conv: Conventions,
    engine: str = FRAME,
) -> tuple[QuerySet, dict[Measure, tuple[np.ndarray, np.ndarray]]]:
    """Evaluate a run delivered as batches of whole queries (each query in exactly one batch).

    Gives the same values as :func:`evaluate_run` on the whole run: each batch is scored against the
    judgments of its own queries, and the query-set policies are applied once, at the end, over all batches.
    """
    import polars as pl

    from ..data.values import RUN_SCHEMA, Qrels, Run

    query_parts: list[list[str]] = []
    value_parts: dict[Measure, list[np.ndarray]] = {m: [] for m in measures}
    undefined_parts: dict[Measure, list[np.ndarray]] = {m: [] for m in measures}

    def keep(queries: QuerySet, values: dict[Measure, tuple[np.ndarray, np.ndarray]]) -> None:
        query_parts.append(queries.query_ids)
        for m in measures:
            value_parts[m].append(values[m][0])
            undefined_parts[m].append(values[m][1])

    seen: set[str] = set()
    judgments = _RowsByQuery(qrels.frame)
    judged_set = set(judgments.span)
    per_batch = conv.with_(missing_queries="skip", extra_queries="skip")
    for batch in run_batches:
        batch_queries = batch.frame.get_column("query_id").unique().to_list()
        if seen.intersection(batch_queries):
            raise ValidationError("a query appears in two batches", fix="deliver whole queries per batch")
        seen.update(batch_queries)
        sub = judgments.rows(batch_queries)
        if sub.height == 0:
            continue
        sub_qrels = Qrels(sub, qrels.fingerprint, qrels.name, qrels.scale, qrels.rubric_hash, qrels.meta)
        keep(*_evaluate_whole(sub_qrels, batch, measures, per_batch, engine=engine))
    extra = sorted(seen - judged_set)
    if extra and conv.extra_queries == "reject":
        raise ValidationError(
            f"the run has {len(extra)} quer{'y' if len(extra) == 1 else 'ies'} with no judgments (first: {extra[0]!r})",
            fix="judge those queries, remove them from the run, or use extra_queries=skip",
        )
    missing = sorted(judged_set - seen)
    if missing and conv.missing_queries == "zero":
        sub = judgments.rows(missing)
        sub_qrels = Qrels(sub, qrels.fingerprint, qrels.name, qrels.scale, qrels.rubric_hash, qrels.meta)
        empty = Run(pl.DataFrame(schema=dict(RUN_SCHEMA)), Fingerprint("", "", ""), "empty")
        keep(*_evaluate_whole(sub_qrels, empty, measures, conv, engine=engine))
    all_queries = [q for part in query_parts for q in part]
    order = (
        np.argsort(np.array(all_queries, dtype=object), kind="stable") if all_queries else np.zeros(0, int)
    )
    ordered = [all_queries[i] for i in order]
    queries = QuerySet(
        ordered,
        np.array([q in seen for q in ordered], dtype=bool),
        missing if conv.missing_queries == "zero" else [],
        missing if conv.missing_queries == "skip" else [],
        extra,
    )

    def joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(parts)[order] if parts else np.zeros(0, dtype=dtype)

    values = {m: (joined(value_parts[m], np.float64), joined(undefined_parts[m], bool)) for m in measures}
    return queries, values


def evaluate(
    qrels: Qrels | DiversityQrels,
    runs: Run | Sequence[Run] | Mapping[str, Run],
    measures: Iterable[str | Measure] | None = None,
    conventions: Conventions | None = None,
    *,
    workers: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    strict: bool = False,
) -> Results:
    """Evaluate runs against judgments.

    ``measures`` defaults to nDCG@10, R@100 and Judged@10 (ordering, coverage and judged depth together);
    for diversity judgments (:class:`qrelkit.data.values.DiversityQrels`, read by ``read_diversity_qrels``) to
    alpha_nDCG@20 and ERR_IA@20, and only diversity measures are taken then;
    ``conventions`` defaults to :data:`qrelkit.measures.conventions.DEFAULT`. Returns :class:`Results` holding the
    per-query values, the means, what each query-set policy did, and the provenance (conventions in full,
    fingerprints of every input, qrelkit's version). ``workers`` > 1 evaluates runs on that many threads
    (the kernels release the GIL); the results are identical. Where the profile's tool would have stopped
    (a judged query missing from the run for trec_eval 10 without -c, differing query sets for ranx) the
    results carry a warning; ``strict=True`` refuses instead.
    """
    from ..data.values import DiversityQrels

    conv = conventions or DEFAULT
    diverse = isinstance(qrels, DiversityQrels)
    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if diverse and measures is None else measures)
    check_judgments_kind(parsed, diverse)
    run_list = _as_runs(runs)
    judged = qrels.projection() if isinstance(qrels, DiversityQrels) else qrels
    if not diverse:  # diversity measures read no gain
        _check_gains(judged, parsed, conv)
    if conv.profile is not None:  # the inputs the tool refuses are refused under its profile too
        from ..measures.profiles import get_profile

        get_profile(conv.profile).check(judged, run_list)
    done = 0

    def one(run: Run) -> RunValues:
        nonlocal done
        if isinstance(qrels, DiversityQrels):
            queries, values = _evaluate_whole(judged, run, parsed, conv, subtopics=qrels)
        else:
            queries, values = evaluate_run(qrels, run, parsed, conv)
        done += 1
        if progress is not None:
            progress(done, len(run_list), run.name)
        return RunValues(run.name, run.fingerprint, dict(run.meta), queries, values)

    if workers > 1 and len(run_list) > 1:
        with ThreadPoolExecutor(min(workers, len(run_list))) as pool:
            items = list(pool.map(one, run_list))
    else:
        items = [one(run) for run in run_list]
    results = assemble(qrels, parsed, conv, items)
    if strict:
        results.check_strict()
    return results


def _check_gains(qrels: Qrels, measures: Sequence[Measure], conv: Conventions) -> None:
    """Refuse a grade whose gain would overflow under a measure's gain (never a NaN left out of a mean)."""
    from ..engine.kernels import MAX_EXPONENTIAL_GRADE, gain_overflows

    grade = qrels.frame.get_column("grade").to_numpy()
    for measure in measures:
        over = gain_overflows(grade, measure.conventions(conv).gain)
        if over.any():
            row = int(np.flatnonzero(over)[0])
            line = qrels.frame.item(row, "line") if "line" in qrels.frame.columns else None
            raise ValidationError(
                f"grade {int(grade[row])} overflows the exponential gain 2^g - 1 of {measure}",
                source=str(qrels.meta.get("source") or qrels.name),
                line=line,
                expected=f"grades up to {MAX_EXPONENTIAL_GRADE} under gain=exponential",
                fix="check the grade column, or use gain=linear (e.g. -m 'nDCG(gain=linear)@10')",
            )


def read_judgments(
    path: str | Path,
    input_format: str,
    on_duplicate: str,
    scale: Sequence[int] | None,
    rubric_hash: str | None,
    comments: bool = False,
) -> Qrels:
    """The judgments, read whole, carrying the rubric's hash when one was given."""
    from ..data.values import Qrels
    from ..formats import read_qrels

    # input_format and on_duplicate are checked by the reader (one of FORMAT_CHOICES/ON_DUPLICATE_CHOICES)
    qrels = read_qrels(path, format=input_format, scale=scale, on_duplicate=on_duplicate, comments=comments)  # type: ignore[arg-type]
    if rubric_hash is not None:
        qrels = Qrels(qrels.frame, qrels.fingerprint, qrels.name, qrels.scale, rubric_hash, qrels.meta)
    return qrels


def _gzip_bounded(function: Callable[..., Results]) -> Callable[..., Results]:
    """Run ``function`` with its ``memory_limit`` as a bound on what a gzip file read whole may expand to
    (:func:`qrelkit.formats.trec.common.gzip_limit`): ``--memory-limit`` holds for compressed input too."""
    import functools

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Results:
        from ..formats.trec.common import gzip_limit

        limit = kwargs.get("memory_limit")
        if isinstance(limit, str):
            from ..formats.external import parse_size

            limit = parse_size(limit)
        with gzip_limit(limit):
            return function(*args, **kwargs)

    return bounded


@_gzip_bounded
def evaluate_files(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    measures: Iterable[str | Measure] | None = None,
    conventions: Conventions | None = None,
    *,
    input_format: str = "auto",
    on_duplicate: str = "error",
    scale: Sequence[int] | None = None,
    rubric_hash: str | None = None,
    memory_limit: int | str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
    strict: bool = False,
    comments: bool = False,
    diversity: bool = False,
) -> Results:
    """Read judgments once and evaluate every run file against them, two runs at a time.

    ``diversity`` reads ``qrels_path`` as diversity judgments (``query_id subtopic doc_id grade``, TREC
    text: :func:`qrelkit.formats.read_diversity_qrels`) and each run whole, for the diversity measures.

    The readers are tried in the order :mod:`qrelkit.formats.trec` lists: small clean TREC files are
    evaluated with numpy alone (``reader: small`` in each run's provenance), unless a run would not fit
    under ``memory_limit``; otherwise each run is read only as deep as the measures need
    (:func:`qrelkit.measures.grammar.required_depth`): with cutoffs only, large runs stream through bounded memory,
    keeping each query's top documents and the tied block at the deepest cutoff, which gives the same
    numbers as reading everything. Runs too large for the small path are hashed on a thread of their own
    while the readers' libraries load (:func:`qrelkit.fingerprint.hash_ahead`).

    Runs in any order of lines stream the same way (see :mod:`qrelkit.formats.trec.streaming`). When a
    measure needs every document of a run whose lines are not grouped by query, the run is not held whole:
    DuckDB sorts it on disk (``reader: duckdb`` and ``sorted_on_disk`` in its provenance) and it is
    evaluated in batches of whole queries, with identical results. ``memory_limit`` (bytes, or a size such
    as ``"2GB"``) bounds the whole process, judgments, interpreter and libraries included: a run that would
    not fit beside what the process holds streams when the measures have cutoffs, and is sorted on disk
    by DuckDB otherwise, its memory limit set from what is left (:func:`qrelkit.formats.external.run_batches`).
    ``progress(done, total, name)`` is called as each run is finished, ``on_bytes(n)`` as bytes are read.
    ``strict`` refuses where the profile's tool would have stopped (see :func:`evaluate`). ``comments``
    skips TREC lines beginning with ``#`` (trec_eval 10) on every path (the readers that cannot skip them
    step aside).
    """
    from ..formats.trec.small import SMALL_FILE_BYTES

    if diversity:
        return _evaluate_diversity_files(
            qrels_path, run_paths, measures, conventions, input_format, on_duplicate, scale, rubric_hash,
            progress, strict, comments,
        )  # fmt: skip
    check_judgments_kind(parse_measures(measures), False)
    large = [Path(p) for p in run_paths if Path(p).is_file() and Path(p).stat().st_size > SMALL_FILE_BYTES]
    hash_ahead(large)  # runs too large for the small path, hashed while the readers' libraries load
    conv = conventions or DEFAULT
    parsed = parse_measures(measures)
    limit: int | None
    if isinstance(memory_limit, str):
        from ..formats.external import parse_size

        limit = parse_size(memory_limit)
    else:
        limit = memory_limit

    whole = False  # its refusals look at every row (gdeval, sklearn)
    if conv.profile is not None:
        from ..measures.profiles import get_profile

        whole = bool(get_profile(conv.profile).refuses)
    if whole:
        from ..formats import read_run

        qrels = read_judgments(qrels_path, input_format, on_duplicate, scale, rubric_hash, comments)
        # input_format and on_duplicate are checked by the readers (one of FORMAT_CHOICES/ON_DUPLICATE_CHOICES)
        runs = [
            read_run(p, format=input_format, on_duplicate=on_duplicate, comments=comments) for p in run_paths
        ]  # type: ignore[arg-type]
        return evaluate(qrels, runs, parsed, conv, progress=progress, strict=strict)

    def too_big(path: Path) -> bool:
        # reading a run whole costs about 8 bytes of memory per byte of file (columns, join, sort), on top
        # of what the process holds already (interpreter, libraries, judgments)
        if limit is None or not path.is_file():
            return False
        from ..formats.external import process_bytes

        return process_bytes() + path.stat().st_size * IN_MEMORY_FACTOR > limit

    if not any(too_big(Path(p)) for p in run_paths):
        small = _evaluate_small(
            Path(qrels_path), [Path(p) for p in run_paths], parsed, conv, input_format, on_duplicate, scale,
            rubric_hash, progress, on_bytes, comments,
        )  # fmt: skip
        if small is not None:
            if strict:
                small.check_strict()
            return small
    from ..formats import detect_format, read_run, read_run_streaming
    from ..formats.external import LayoutRefused, run_batches, sort_budget

    qrels = read_judgments(qrels_path, input_format, on_duplicate, scale, rubric_hash, comments)
    _check_gains(qrels, parsed, conv)
    depth = required_depth(parsed, conv)
    single = conv.precision == "single" or any(m.conventions(conv).precision == "single" for m in parsed)

    def one(path_like: str | Path) -> tuple[str, RunValues]:
        path = Path(path_like)
        counted = (
            _FileBytes(on_bytes, path.stat().st_size) if on_bytes is not None and path.is_file() else None
        )
        trec = detect_format(path) == "trec" if input_format == "auto" else input_format == "trec"
        run = None
        external = None  # why the run is sorted on disk, when it is
        big = too_big(path)  # held whole, it would break the memory limit
        # what every reader is told: the duplicate policy, the depth the measures need, the precision
        # of the scores ranked, comment lines
        how = {"on_duplicate": on_duplicate, "keep_top": depth, "rank_single": single, "comments": comments}
        if big:
            if depth is not None:
                run = read_run_streaming(path, on_bytes=counted, **how)
            if run is None:
                external = "the file would not fit under the memory limit"
        elif trec and path.is_file():
            try:
                run = read_run_streaming(path, on_bytes=counted, grouped_only=depth is None, **how)
            except Ungrouped:
                if find_spec("duckdb") is not None:
                    external = "a measure needs every document and the lines are not grouped by query"
                else:  # without the optional DuckDB (qrelkit[scale]) the run is held whole by the streaming
                    # reader
                    run = read_run_streaming(path, on_bytes=counted, **how)
            if (
                run is None
                and external is None
                and on_duplicate != "error"
                and path.stat().st_size > SMALL_FILE_BYTES
                and find_spec("duckdb") is not None
            ):  # a document given twice, perhaps: the policy is applied on disk rather than holding the run
                external = f"documents given twice are resolved on disk (--on-duplicate {on_duplicate})"
            elif run is None and external is None:
                run = read_run(path, reader="robust", **how)
        if external is not None:
            try:
                batches, fingerprint, name, meta = run_batches(
                    path,
                    memory_limit=limit or sort_budget(),
                    on_duplicate=on_duplicate,
                    reason=external,
                    on_bytes=counted,
                    comments=comments,
                )
            except LayoutRefused:
                if big:
                    raise  # held whole, the run would break the memory limit
                run = read_run(path, reader="robust", **how)  # a layout only it takes
                external = None
        if external is not None:
            queries, values = evaluate_run_batches(qrels, batches, parsed, conv)
            if counted is not None:
                counted.finish()
            return str(path), RunValues(name, fingerprint, meta, queries, values)
        if run is None:
            run = read_run(path, format=input_format, on_bytes=counted, **how)
        queries, values = evaluate_run(qrels, run, parsed, conv)
        if counted is not None:
            counted.finish()
        return str(path), RunValues(run.name, run.fingerprint, dict(run.meta), queries, values)

    done = 0

    def tracked(path_like: str | Path) -> tuple[str, RunValues]:
        nonlocal done
        result = one(path_like)
        done += 1
        if progress is not None:
            progress(done, len(run_paths), Path(path_like).name)
        return result

    workers = min(2, os.cpu_count() or 1, len(run_paths))
    if workers > 1 and limit is None:
        with ThreadPoolExecutor(workers) as pool:
            pairs = list(pool.map(tracked, run_paths))
    else:  # under a memory cap, one run at a time
        pairs = [tracked(p) for p in run_paths]
    check_run_names([item.name for _, item in pairs], [source for source, _ in pairs])
    results = assemble(qrels, parsed, conv, [item for _, item in pairs])
    if strict:
        results.check_strict()
    return results


def _evaluate_diversity_files(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    measures: Iterable[str | Measure] | None,
    conventions: Conventions | None,
    input_format: str,
    on_duplicate: str,
    scale: Sequence[int] | None,
    rubric_hash: str | None,
    progress: Callable[[int, int, str], None] | None,
    strict: bool,
    comments: bool,
) -> Results:
    """:func:`evaluate_files` for diversity judgments: the judgments by their one reader, each run whole."""
    from ..data.values import DiversityQrels
    from ..formats import read_diversity_qrels, read_run

    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if measures is None else measures)
    check_judgments_kind(parsed, True)
    if input_format not in ("auto", "trec"):
        raise ValidationError(
            f"diversity judgments are TREC text (query_id subtopic doc_id grade), not {input_format}",
            fix="convert them to TREC text, or pass --input-format trec",
        )
    judgments = read_diversity_qrels(qrels_path, scale=scale, on_duplicate=on_duplicate, comments=comments)
    if rubric_hash is not None:
        judgments = DiversityQrels(
            judgments.frame, judgments.fingerprint, judgments.name, judgments.meta, rubric_hash
        )
    runs = [read_run(p, format=input_format, on_duplicate=on_duplicate, comments=comments) for p in run_paths]  # type: ignore[arg-type]  # checked by the reader
    return evaluate(judgments, runs, parsed, conventions, progress=progress, strict=strict)


#: Bytes of memory per byte of run file when a run is read whole (measured on a 7M-line run).
IN_MEMORY_FACTOR = 8


@dataclass(frozen=True)
class _SmallQrels:
    """What :func:`qrelkit.evaluation.results.assemble` records of judgments read by the small path."""

    name: str
    fingerprint: Fingerprint
    meta: dict[str, Any] = field(default_factory=dict)
    rubric_hash: str | None = None


class _FileBytes:
    """``on_bytes`` for one run file: the bytes reported stay within the file's size and reach it when the
    run is done. A reader that steps aside, a run found ungrouped and sorted by DuckDB, or one the robust
    reader reads again reads bytes twice, and gzip text is larger than its file: a progress bar over the
    files' sizes never passes 100%."""

    def __init__(self, on_bytes: Callable[[int], None], size: int):
        self.on_bytes = on_bytes
        self.size = size
        self.reported = 0

    def __call__(self, n: int) -> None:
        n = min(n, self.size - self.reported)
        if n > 0:
            self.reported += n
            self.on_bytes(n)

    def finish(self) -> None:
        self(self.size - self.reported)


def _evaluate_small(
    qrels_path: Path,
    run_paths: list[Path],
    parsed: Sequence[Measure],
    conv: Conventions,
    input_format: str,
    on_duplicate: str,
    scale: Sequence[int] | None,
    rubric_hash: str | None,
    progress: Callable[[int, int, str], None] | None,
    on_bytes: Callable[[int], None] | None,
    comments: bool = False,
) -> Results | None:
    """Step 1 of :mod:`qrelkit.formats.trec`: every file small and clean, evaluated with numpy alone;
    ``None`` when any input steps aside (nothing was reported then: the caller starts again)."""
    from ..engine.kernels import gain_overflows
    from ..engine.small import Judgments, evaluate_columns, grades_within
    from ..formats.trec.small import eligible, read_columns

    if not run_paths or not eligible([qrels_path, *run_paths], input_format):
        return None
    try:
        qcols = read_columns(qrels_path, "qrels", comments)
        if scale is not None and not grades_within(qcols, scale):
            raise StepAside  # a grade outside the rubric: the robust reader names its line
        if any(gain_overflows(qcols.number, m.conventions(conv).gain).any() for m in parsed):
            raise StepAside  # a gain that overflows: the whole-frame path names its line
        judged = Judgments.build(qcols)

        def one(path: Path) -> RunValues:
            run = read_columns(path, "run", comments)
            queries, values = evaluate_columns(qcols, judged, run, parsed, conv)
            meta = {
                "source": run.source,
                "duplicates_removed": 0,
                "on_duplicate": on_duplicate,
                "rows_read": run.rows,
                "reader": "small",
            }
            if run.trailing:
                meta["lines_with_trailing_fields_ignored"] = run.trailing
            return RunValues(
                run.tag.decode() if run.tag else path.stem, run.fingerprint, meta, queries, values
            )

        if len(run_paths) > 1:
            with ThreadPoolExecutor(min(2, len(run_paths))) as pool:
                items = list(pool.map(one, run_paths))
        else:
            items = [one(run_paths[0])]
    except StepAside:
        return None
    check_run_names([i.name for i in items], [str(p) for p in run_paths])
    for done, path in enumerate(run_paths, start=1):
        if on_bytes is not None:
            on_bytes(path.stat().st_size)
        if progress is not None:
            progress(done, len(run_paths), path.name)
    qrels = _SmallQrels(
        qrels_path.name,
        qcols.fingerprint,
        {"source": str(qrels_path), "duplicates_removed": 0, "on_duplicate": on_duplicate},
        rubric_hash,
    )
    return assemble(qrels, parsed, conv, items)
