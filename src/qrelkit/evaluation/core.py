"""``evaluate(qrels, runs, measures, conventions) -> Results``: the one entry point for numbers over
values in memory (:class:`~qrelkit.data.values.Qrels` and :class:`~qrelkit.data.values.Run`).

Files are evaluated by :mod:`qrelkit.evaluation.files`, read by the plan of
:mod:`qrelkit.evaluation.plan`, and scored by the functions here: :func:`evaluate_run` for one run held
whole (encoded in batches of whole queries when it is large), :func:`evaluate_run_batches` for a run
delivered in batches of whole queries.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..engine.dispatch import compute
from ..engine.encoding.encoded import Encoded, QuerySet, encoding_key, query_set
from ..engine.registry import FRAME
from ..errors import ValidationError
from ..fingerprint import Fingerprint
from ..measures.conventions import DEFAULT, Conventions
from ..measures.grammar import DIVERSITY_DEFAULT_MEASURES, Measure, parse_measures, required_depth
from ..naming import check_run_names
from .results import Results, RunValues, assemble

if TYPE_CHECKING:  # polars loads only on the paths that read frames
    import polars as pl

    from ..data.values import DiversityQrels, Qrels, Run
    from ..engine.encoding.encode import Judgments
    from ..engine.tie_order import TieOrder


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
    qrels: Qrels,
    run: Run,
    measures: Sequence[Measure],
    conv: Conventions,
    engine: str = FRAME,
    judgments: Judgments | None = None,
    tie_order: TieOrder | None = None,
) -> tuple[QuerySet, dict[Measure, tuple[np.ndarray, np.ndarray]]]:
    """Evaluate one run: the query set, and per measure (values, undefined mask) over its queries, with
    the kernels of ``engine`` (:data:`qrelkit.engine.registry.ENGINES`; Spark's partitions name theirs).
    ``judgments`` (:func:`qrelkit.engine.encoding.encode.judgments_of`) shares the judgments' side of the encoding
    between runs; ``tie_order`` (:func:`qrelkit.engine.tie_order.tie_order_of`) gathers the queries whose
    value the profile's tool takes from its order of tied scores.

    Runs with more than :data:`ENCODE_BATCH_ROWS` rows are encoded in batches of whole queries (the same
    numbers, with the memory of one batch at a time)."""
    if run.frame.height > ENCODE_BATCH_ROWS:
        _check_depth(run, measures, conv)  # also when no batch has judgments to score
        batches = _query_batches(run, ENCODE_BATCH_ROWS)
        return evaluate_run_batches(qrels, batches, measures, conv, engine, tie_order=tie_order)
    return _evaluate_whole(
        qrels, run, measures, conv, engine=engine, judgments=judgments, tie_order=tie_order
    )


def _evaluate_whole(
    qrels: Qrels,
    run: Run,
    measures: Sequence[Measure],
    conv: Conventions,
    subtopics: DiversityQrels | None = None,
    engine: str = FRAME,
    judgments: Judgments | None = None,
    tie_order: TieOrder | None = None,
) -> tuple[QuerySet, dict[Measure, tuple[np.ndarray, np.ndarray]]]:
    """:func:`evaluate_run` in one encoding, however large the run (a batch is never split again: one
    query may hold more rows than a batch). With ``subtopics`` (whose projection ``qrels`` is) each
    encoding carries the subtopic judgments the diversity measures read."""
    from ..engine.encoding.encode import Judgments, Stretches, encode, select_queries

    _check_depth(run, measures, conv)
    judgments = judgments or Judgments(qrels)
    stretches = Stretches.of(run.frame.get_column("query_id"))  # read once, for both
    queries = select_queries(qrels, run, conv, judgments, stretches)
    depth = required_depth(measures, conv)  # each run cut to it before the join and the sort
    cache: dict[tuple[str, ...], Encoded] = {}
    values: dict[Measure, tuple[np.ndarray, np.ndarray]] = {}
    for measure in measures:
        mconv = measure.conventions(conv)
        key = encoding_key(mconv)
        if key not in cache:
            if subtopics is None:
                cache[key] = encode(
                    qrels,
                    run,
                    mconv,
                    queries,
                    ranking=False,
                    depth=depth,
                    judgments=judgments,
                    stretches=stretches,
                )
            else:
                from ..engine.kernels.diversity import attach

                enc = encode(qrels, run, mconv, queries, ranking=True, judgments=judgments)
                cache[key] = attach(enc, subtopics)
        values[measure] = compute(cache[key], measure, mconv, engine)
        if tie_order is not None:
            tie_order.record(cache[key], measure, mconv)
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
    *,
    tie_order: TieOrder | None = None,
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
    firsts: list[tuple[int, int, str]] = []  # (first line, batch, query): the run's order of its queries
    judgments = _RowsByQuery(qrels.frame)
    judged_set = set(judgments.span)
    per_batch = conv.with_(missing_queries="skip", extra_queries="skip")
    run_name = source = ""  # for the query set's error: the run's name and file, from its batches
    for batch in run_batches:
        run_name, source = batch.name, str(batch.meta.get("source", batch.name))
        batch_queries = batch.frame.get_column("query_id").unique(maintain_order=True).to_list()
        if seen.intersection(batch_queries):
            raise ValidationError("a query appears in two batches", fix="deliver whole queries per batch")
        seen.update(batch_queries)
        frame = batch.frame
        if "line" in frame.columns:  # batches sorted on disk come by query: each query's first line says
            first = frame.group_by("query_id").agg(pl.col("line").min())
            firsts += [(line, len(firsts), q) for q, line in first.iter_rows()]
        else:
            firsts += [(0, len(firsts), q) for q in batch_queries]
        sub = judgments.rows(batch_queries)
        if sub.height == 0:
            continue
        sub_qrels = Qrels(sub, qrels.fingerprint, qrels.name, qrels.scale, qrels.rubric_hash, qrels.meta)
        keep(*_evaluate_whole(sub_qrels, batch, measures, per_batch, engine=engine, tie_order=tie_order))
    # the query set's rule, applied once over all batches (before the empty rankings are scored)
    in_order = [q for _, _, q in sorted(firsts)]
    queries = query_set(sorted(judged_set), in_order, sorted(seen - judged_set), conv, run_name, source)
    missing = queries.missing_scored_zero
    if missing:
        sub = judgments.rows(missing)
        sub_qrels = Qrels(sub, qrels.fingerprint, qrels.name, qrels.scale, qrels.rubric_hash, qrels.meta)
        empty = Run(pl.DataFrame(schema=dict(RUN_SCHEMA)), Fingerprint("", "", ""), "empty")
        keep(*_evaluate_whole(sub_qrels, empty, measures, conv, engine=engine))
    all_queries = [q for part in query_parts for q in part]
    order = (
        np.argsort(np.array(all_queries, dtype=object), kind="stable") if all_queries else np.zeros(0, int)
    )
    assert [all_queries[i] for i in order] == queries.query_ids  # every scored query, once

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
    profile: str | None = None,
) -> Results:
    """Evaluate runs against judgments.

    ``profile`` (a name: ``"trec_eval"``, ``"pytrec_eval"``, ``"ir_measures"``, ``"ranx"``, ...) takes that
    tool's conventions, as ``--profile`` does (give it or ``conventions``, not both); read the files with
    the same ``profile=`` (:func:`qrelkit.read_qrels`, :func:`qrelkit.read_run`) for its reader rules, or
    call :func:`qrelkit.evaluate_files`, which does both.

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

    if profile is not None:
        from ..measures.profiles import conventions_of

        conventions = conventions_of(profile, conventions)
    conv = conventions or DEFAULT
    diverse = isinstance(qrels, DiversityQrels)
    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if diverse and measures is None else measures)
    check_judgments_kind(parsed, diverse)
    run_list = _as_runs(runs)
    judged = qrels.projection() if isinstance(qrels, DiversityQrels) else qrels
    if not diverse:  # diversity measures read no gain
        check_gains(judged, parsed, conv)
    tool = None
    if conv.profile is not None:
        from ..measures.profiles import tool_of

        tool = tool_of(conv)
    if tool is not None:  # the inputs the tool refuses are refused under its profile too
        tool.check(judged, run_list)
    from ..engine.encoding.encode import judgments_of

    shared = judgments_of(judged)  # the judgments' side: once for every run, and kept for the next call
    done = 0

    def one(run: Run) -> RunValues:
        nonlocal done
        ties = tie_order_for(conv)
        if isinstance(qrels, DiversityQrels):
            queries, values = _evaluate_whole(judged, run, parsed, conv, subtopics=qrels, judgments=shared)
        else:
            queries, values = evaluate_run(qrels, run, parsed, conv, judgments=shared, tie_order=ties)
        done += 1
        if progress is not None:
            progress(done, len(run_list), run.name)
        found = ties.queries() if ties is not None else {}
        return RunValues(run.name, run.fingerprint, dict(run.meta), queries, values, found)

    if workers > 1 and len(run_list) > 1:
        from concurrent.futures import ThreadPoolExecutor  # with logging, 9 ms one run does not need

        with ThreadPoolExecutor(min(workers, len(run_list))) as pool:
            items = list(pool.map(one, run_list))
    else:
        items = [one(run) for run in run_list]
    results = assemble(qrels, parsed, conv, items)
    if strict:
        results.check_strict()
    return results


def tie_order_for(conv: Conventions) -> TieOrder | None:
    """What gathers, for one run, the queries whose value the profile's tool takes from its order of
    tied scores (:func:`qrelkit.engine.tie_order.tie_order_of`); ``None`` without a profile, and nothing
    more imported then."""
    if conv.profile is None:
        return None
    from ..engine.tie_order import tie_order_of

    return tie_order_of(conv)


def check_gains(qrels: Qrels, measures: Sequence[Measure], conv: Conventions) -> None:
    """Refuse a grade whose gain would overflow under a measure's gain (never a NaN left out of a mean)."""
    from ..engine.kernels.ranked import MAX_EXPONENTIAL_GRADE, gain_overflows

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
