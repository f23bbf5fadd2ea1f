"""Evaluating files: :func:`evaluate_files` (paths in, :class:`~qrelkit.evaluation.results.Results`
out) and :func:`evaluate_inputs` (``qrelkit eval``'s way in: a rubric file, the local process or Spark).

Both read by the plan of :func:`qrelkit.evaluation.plan.plan_reading` (the one place that decides how
files are read, recorded as ``reading`` in the provenance): small clean TREC files are evaluated with
numpy alone; otherwise each run is read by streaming, whole, or through DuckDB under a memory limit, in the
order :mod:`qrelkit.formats.trec` lists. The dataframe libraries are imported only when a path needs them,
so a small evaluation loads numpy alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StepAside, Ungrouped, ValidationError
from ..fingerprint import Fingerprint, hash_ahead
from ..measures.conventions import DEFAULT, Conventions
from ..measures.grammar import DIVERSITY_DEFAULT_MEASURES, Measure, parse_measures
from ..naming import check_run_names
from .core import (
    check_gains,
    check_judgments_kind,
    evaluate,
    evaluate_run,
    evaluate_run_batches,
    tie_order_for,
)
from .plan import IN_MEMORY_FACTOR, ReadingPlan, check_limit, plan_reading
from .results import Results, RunValues, assemble

if TYPE_CHECKING:
    from ..data.values import Qrels, Run
    from ..engine.tie_order import TieOrder


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
    qrels = read_qrels(path, format=input_format, scale=scale, on_duplicate=on_duplicate, comments=comments)
    if rubric_hash is not None:
        qrels = Qrels(qrels.frame, qrels.fingerprint, qrels.name, qrels.scale, rubric_hash, qrels.meta)
    return qrels


def read_whole(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    conventions: Conventions,
    *,
    input_format: str = "auto",
    on_duplicate: str | None = None,
    comments: bool | None = None,
    scale: Sequence[int] | None = None,
    rubric_hash: str | None = None,
) -> tuple[Qrels, list[Run]]:
    """Judgments and runs read whole, for work that needs every row of every run (compare, report,
    explain, the conventions sweep), with the reader options of ``conventions``' profile
    (:func:`qrelkit.evaluation.plan.reader_options`) unless given."""
    from .plan import reader_options

    options = reader_options(conventions, on_duplicate, comments)
    qrels = read_judgments(
        qrels_path, input_format, options.on_duplicate, scale, rubric_hash, options.comments
    )
    return qrels, _read_runs_whole(run_paths, input_format, options.on_duplicate, options.comments)


def _read_runs_whole(
    run_paths: Sequence[str | Path], input_format: str, on_duplicate: str, comments: bool
) -> list[Run]:
    """Each run read whole by the readers of steps 2-4 of :mod:`qrelkit.formats.trec` (which check
    ``input_format`` and ``on_duplicate``)."""
    from ..formats import read_run

    return [read_run(p, format=input_format, on_duplicate=on_duplicate, comments=comments) for p in run_paths]


def _gzip_bounded(function: Callable[..., Results]) -> Callable[..., Results]:
    """Run ``function`` with its ``memory_limit`` as a bound on what a gzip file read whole may expand to
    (:func:`qrelkit.formats.trec.common.gzip_limit`): ``--memory-limit`` holds for compressed input too."""
    import functools

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Results:
        from ..formats.trec.common import gzip_limit
        from .plan import parse_limit

        with gzip_limit(parse_limit(kwargs.get("memory_limit"))):
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
    on_duplicate: str | None = None,
    scale: Sequence[int] | None = None,
    rubric_hash: str | None = None,
    memory_limit: int | str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
    strict: bool = False,
    comments: bool | None = None,
    diversity: bool = False,
) -> Results:
    """Read judgments once and evaluate every run file against them, two runs at a time.

    How the files are read is decided by :func:`qrelkit.evaluation.plan.plan_reading` and recorded in the
    provenance (``reading``). ``on_duplicate`` and ``comments`` left at ``None`` take the profile's reader
    options (``conventions.profile``: trec_eval skips lines beginning with ``#``), else the defaults (a
    document given twice is an error; no line is a comment): the command line and Spark resolve them the
    same way.

    ``qrels_path`` may name a dataset instead of a file (``"irds:ID"``, :mod:`qrelkit.formats.irds`): its
    judgments are read whole by name and the small path is left out.

    ``diversity`` reads ``qrels_path`` as diversity judgments (``query_id subtopic doc_id grade``, TREC
    text: :func:`qrelkit.formats.read_diversity_qrels`) and each run whole, for the diversity measures.

    The readers are tried in the order :mod:`qrelkit.formats.trec` lists: small clean TREC files are
    evaluated with numpy alone (``reader: small`` in each run's provenance), unless a run would not fit
    under ``memory_limit``; with small clean judgments and measures that all have cutoffs, so is a clean run
    of any size, read to their depth by the native scanner (``reader: fast``, as the streaming reader
    records it); otherwise each run is read only as deep as the measures need
    (:func:`qrelkit.measures.grammar.required_depth`): with cutoffs only, large runs stream through
    bounded memory, keeping each query's top documents and the tied block at the deepest cutoff, which
    gives the same numbers as reading everything. Runs too large for the small path are hashed on a thread
    of their own while the readers' libraries load (:func:`qrelkit.fingerprint.hash_ahead`).

    Runs in any order of lines stream the same way (see :mod:`qrelkit.formats.trec.streaming`). When a
    measure needs every document of a run whose lines are not grouped by query, the run is not held whole:
    DuckDB sorts it on disk (``reader: duckdb`` and ``sorted_on_disk`` in its provenance) and it is
    evaluated in batches of whole queries, with identical results. ``memory_limit`` (bytes, or a size such
    as ``"2GB"``) bounds the whole process, judgments, interpreter and libraries included: a run that would
    not fit beside what the process holds streams when the measures have cutoffs, and is sorted on disk
    by DuckDB otherwise, its memory limit set from what is left
    (:func:`qrelkit.formats.external.run_batches`); a route that cannot honour it (diversity judgments, a
    profile whose refusals read every row) refuses it. ``progress(done, total, name)`` is called as each
    run is finished, ``on_bytes(n)`` as bytes are read. ``strict`` refuses where the profile's tool would
    have stopped (see :func:`qrelkit.evaluation.core.evaluate`).
    """
    from ..formats.trec.small import SMALL_FILE_BYTES

    conv = conventions or DEFAULT
    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if diversity and measures is None else measures)
    check_judgments_kind(parsed, diversity)
    plan = plan_reading(
        conv,
        parsed,
        memory_limit=memory_limit,
        diversity=diversity,
        on_duplicate=on_duplicate,
        comments=comments,
        qrels=qrels_path if isinstance(qrels_path, str) else None,
    )
    from ..formats.trec.common import check_inputs

    check_inputs(qrels_path, run_paths, input_format)
    if plan.memory_limit is not None:
        check_limit(plan, qrels_path, run_paths)  # below what the process holds reading the runs: refused
    if plan.route == "diversity":
        return _evaluate_diversity_files(
            qrels_path, run_paths, measures, conv, input_format, plan, scale, rubric_hash, progress, strict
        )
    large = [Path(p) for p in run_paths if Path(p).is_file() and Path(p).stat().st_size > SMALL_FILE_BYTES]
    hash_ahead(large)  # runs too large for the small path, hashed while the readers' libraries load
    if plan.route == "whole":
        return _evaluate_whole_files(qrels_path, run_paths, parsed, conv, input_format, plan, scale,
                                     rubric_hash, progress, strict)  # fmt: skip
    counters = {
        str(Path(p)): _FileBytes(on_bytes, Path(p).stat().st_size)
        for p in run_paths
        if on_bytes is not None and Path(p).is_file()
    }  # each run's bytes, reported once whichever readers read it
    refused: set[str] = set()  # runs whose native pass stepped aside on the way: Arrow's parse is next
    if "small" in plan.readers:
        small = _evaluate_small(
            Path(qrels_path), [Path(p) for p in run_paths], parsed, conv, input_format, plan, scale,
            rubric_hash, progress, counters, refused,
        )  # fmt: skip
        if small is not None:
            if strict:
                small.check_strict()
            return small.with_reading(plan)
    qrels = read_judgments(qrels_path, input_format, plan.on_duplicate, scale, rubric_hash, plan.comments)
    check_gains(qrels, parsed, conv)
    done = 0

    def tracked(path_like: str | Path) -> tuple[str, RunValues]:
        nonlocal done
        path = Path(path_like)
        counted = counters.get(str(path))
        native = str(path) not in refused
        result = _evaluate_run_file(path, plan, qrels, parsed, conv, input_format, counted, native)
        done += 1
        if progress is not None:
            progress(done, len(run_paths), Path(path_like).name)
        return result

    workers = min(2, os.cpu_count() or 1, len(run_paths))
    if workers > 1 and plan.memory_limit is None:
        from concurrent.futures import ThreadPoolExecutor  # with logging, 9 ms one run does not need

        with ThreadPoolExecutor(workers) as pool:
            pairs = list(pool.map(tracked, run_paths))
    else:  # under a memory cap, one run at a time
        pairs = [tracked(p) for p in run_paths]
    check_run_names([item.name for _, item in pairs], [source for source, _ in pairs])
    results = assemble(qrels, parsed, conv, [item for _, item in pairs])
    if strict:
        results.check_strict()
    return results.with_reading(plan)


def _evaluate_whole_files(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    parsed: Sequence[Measure],
    conv: Conventions,
    input_format: str,
    plan: ReadingPlan,
    scale: Sequence[int] | None,
    rubric_hash: str | None,
    progress: Callable[[int, int, str], None] | None,
    strict: bool,
) -> Results:
    """The ``whole`` route: a profile whose refusals look at every row (gdeval, sklearn) reads each run
    whole and evaluates it with :func:`qrelkit.evaluation.core.evaluate`, which applies them."""
    qrels, runs = read_whole(
        qrels_path, run_paths, conv, input_format=input_format, on_duplicate=plan.on_duplicate,
        comments=plan.comments, scale=scale, rubric_hash=rubric_hash,
    )  # fmt: skip
    return evaluate(qrels, runs, parsed, conv, progress=progress, strict=strict).with_reading(plan)


def _too_big(path: Path, limit: int | None) -> bool:
    """Whether a run held whole would break the memory limit: reading a run whole costs about
    :data:`IN_MEMORY_FACTOR` bytes of memory per byte of its text (columns, join, sort), on top of what the
    process holds already (interpreter, libraries, judgments)."""
    if limit is None or not path.is_file():
        return False
    from ..formats.external import process_bytes
    from ..formats.trec.common import text_bytes

    return process_bytes() + text_bytes(path) * IN_MEMORY_FACTOR > limit


def _evaluate_run_file(
    path: Path,
    plan: ReadingPlan,
    qrels: Qrels,
    parsed: Sequence[Measure],
    conv: Conventions,
    input_format: str,
    counted: _FileBytes | None,
    native: bool = True,
) -> tuple[str, RunValues]:
    """One run file on the ``readers`` route, past the small path: streamed, sorted on disk by DuckDB, or
    read by the robust reader, in the order :mod:`qrelkit.formats.trec` gives; ``counted`` reports its
    bytes read; ``native=False``: the native scanner's pass at the plan's depth already stepped aside for
    this run (:class:`~qrelkit.formats.trec.small.ScannerRefused`), so streaming starts at Arrow's."""
    from ..formats import detect_format, read_run, read_run_streaming
    from ..formats.external import LayoutRefused, run_batches, sort_budget
    from ..formats.trec.small import SMALL_FILE_BYTES

    depth, on_duplicate = plan.depth, plan.on_duplicate
    trec = detect_format(path) == "trec" if input_format == "auto" else input_format == "trec"
    run = None
    external = None  # why the run is sorted on disk, when it is
    big = _too_big(path, plan.memory_limit)  # held whole, it would break the memory limit
    # what every reader is told: the duplicate policy, the depth the measures need, the precision of the
    # scores ranked, comment lines
    how = {"on_duplicate": on_duplicate, "keep_top": depth, "rank_single": plan.rank_single,
           "comments": plan.comments}  # fmt: skip
    if big:
        if depth is not None:
            run = read_run_streaming(path, on_bytes=counted, native=native, **how)
        if run is None:
            external = "the file would not fit under the memory limit"
    elif trec and path.is_file():
        try:
            run = read_run_streaming(path, on_bytes=counted, grouped_only=depth is None, native=native, **how)
        except Ungrouped:
            if find_spec("duckdb") is not None:
                external = "a measure needs every document and the lines are not grouped by query"
            else:  # without the optional DuckDB (qrelkit[scale]) the run is held whole by the streaming reader
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
                memory_limit=plan.memory_limit or sort_budget(),
                on_duplicate=on_duplicate,
                reason=external,
                on_bytes=counted,
                comments=plan.comments,
            )
        except LayoutRefused:
            if big:
                raise  # held whole, the run would break the memory limit
            run = read_run(path, reader="robust", **how)  # a layout only it takes
            external = None
    ties = tie_order_for(conv)
    if external is not None:
        queries, values = evaluate_run_batches(qrels, batches, parsed, conv, tie_order=ties)
        if counted is not None:
            counted.finish()
        return str(path), RunValues(name, fingerprint, meta, queries, values, _found(ties))
    if run is None:
        run = read_run(path, format=input_format, on_bytes=counted, **how)
    queries, values = evaluate_run(qrels, run, parsed, conv, tie_order=ties)
    if counted is not None:
        counted.finish()
    return str(path), RunValues(run.name, run.fingerprint, dict(run.meta), queries, values, _found(ties))


def _found(ties: TieOrder | None) -> dict[str, tuple[str, ...]]:
    """The queries a :class:`~qrelkit.engine.tie_order.TieOrder` found, per measure (none without one)."""
    return ties.queries() if ties is not None else {}


def evaluate_inputs(
    qrels: str,
    runs: Sequence[str],
    measures: Iterable[str | Measure] | None,
    conventions: Conventions,
    *,
    engine: str = "local",
    master: str | None = None,
    input_format: str = "auto",
    on_duplicate: str | None = None,
    scale: Sequence[int] | None = None,
    rubric_hash: str | None = None,
    memory_limit: str | None = None,
    comments: bool | None = None,
    diversity: bool = False,
    strict: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> Results:
    """``qrelkit eval``'s library call: judgments and runs by path (or, with ``engine="spark"``, Parquet
    folders and table names too), ``rubric`` a rubric file whose scale the grades must lie on and whose
    hash the results carry. Local evaluation is :func:`evaluate_files`; Spark's is
    :func:`qrelkit.evaluation.spark.evaluate_inputs`; both read by the same plan
    (:func:`qrelkit.evaluation.plan.plan_reading`), which refuses what the engine cannot honour."""
    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if diversity and measures is None else measures)
    folders = [p for p in (qrels, *runs) if Path(p).is_dir()]
    plan_reading(conventions, parsed, engine=engine, memory_limit=memory_limit, diversity=diversity,
                 on_duplicate=on_duplicate, comments=comments, folders=folders, qrels=qrels)  # fmt: skip
    if engine == "spark":
        from .spark import evaluate_inputs as on_spark

        results = on_spark(qrels, runs, parsed, conventions, master=master, input_format=input_format,
                           on_duplicate=on_duplicate, scale=scale, rubric_hash=rubric_hash, comments=comments)  # fmt: skip
        if strict:
            results.check_strict()
        return results
    return evaluate_files(
        qrels, runs, None if diversity and measures is None else parsed, conventions, input_format=input_format,
        on_duplicate=on_duplicate, scale=scale, rubric_hash=rubric_hash, memory_limit=memory_limit,
        progress=progress, on_bytes=on_bytes, strict=strict, comments=comments, diversity=diversity,
    )  # fmt: skip


def _evaluate_diversity_files(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    measures: Iterable[str | Measure] | None,
    conventions: Conventions | None,
    input_format: str,
    plan: ReadingPlan,
    scale: Sequence[int] | None,
    rubric_hash: str | None,
    progress: Callable[[int, int, str], None] | None,
    strict: bool,
) -> Results:
    """:func:`evaluate_files` for diversity judgments: the judgments by their one reader, each run whole."""
    from ..data.values import DiversityQrels
    from ..formats import read_diversity_qrels

    on_duplicate, comments = plan.on_duplicate, plan.comments
    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if measures is None else measures)
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
    runs = _read_runs_whole(run_paths, input_format, on_duplicate, comments)
    return evaluate(judgments, runs, parsed, conventions, progress=progress, strict=strict).with_reading(plan)


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
    plan: ReadingPlan,
    scale: Sequence[int] | None,
    rubric_hash: str | None,
    progress: Callable[[int, int, str], None] | None,
    counters: dict[str, _FileBytes],
    refused: set[str] | None = None,
) -> Results | None:
    """Step 1 of :mod:`qrelkit.formats.trec`, evaluated with numpy alone: small clean judgments, and each
    run a small clean file read whole (``reader: small``) or, when every measure has a cutoff, a clean run
    of any size read only to that depth by the native scanner, with the rows and the provenance the
    streaming reader gives it (:func:`qrelkit.formats.trec.small.top_columns`); under a memory limit one
    run at a time. ``None`` when any input steps aside (nothing was reported then but bytes read, through
    ``counters``, and the runs whose native pass stepped aside, added to ``refused``: the caller starts
    again)."""
    from ..engine.kernels import gain_overflows
    from ..engine.small import Judgments, evaluate_columns, grades_within
    from ..formats.trec.small import ScannerRefused, eligible, read_columns, readable, top_columns

    if not run_paths or not eligible([qrels_path], input_format):
        return None
    whole = {p for p in run_paths if eligible([p], input_format) and not _too_big(p, plan.memory_limit)}
    to_depth = plan.depth is not None and "native" in plan.readers  # the rest read to the depth
    if len(whole) < len(run_paths) and not (to_depth and readable(run_paths, input_format)):
        return None
    try:
        qcols = read_columns(qrels_path, "qrels", plan.comments)
        if scale is not None and not grades_within(qcols, scale):
            raise StepAside  # a grade outside the rubric: the robust reader names its line
        if any(gain_overflows(qcols.number, m.conventions(conv).gain).any() for m in parsed):
            raise StepAside  # a gain that overflows: the whole-frame path names its line
        if (qcols.number < 0).any() and any(m.conventions(conv).negative == "reject" for m in parsed):
            raise StepAside  # a negative grade refused: the columnar path names its line (before any run is read)
        judged = Judgments.build(qcols)

        def one(path: Path) -> RunValues:
            if path in whole:
                run = read_columns(path, "run", plan.comments)
                meta: dict[str, Any] = {"source": str(path), "duplicates_removed": 0,
                                        "on_duplicate": plan.on_duplicate, "rows_read": run.rows,
                                        "reader": "small"}  # fmt: skip
                if run.trailing:
                    meta["lines_with_trailing_fields_ignored"] = run.trailing
                name = run.tag.decode() if run.tag else path.stem
            else:  # named and recorded as the streaming reader would (read_run_streaming)
                from ..formats.trec.blocks import run_provenance  # (with threads: not for small files)

                assert plan.depth is not None
                counted = counters.get(str(path))
                try:
                    run, scanned = top_columns(path, plan.depth, plan.rank_single, counted, plan.comments)
                except ScannerRefused:
                    if refused is not None:
                        refused.add(str(path))
                    raise
                name, meta = run_provenance(path, scanned, plan.on_duplicate)
            ties = tie_order_for(conv)
            queries, values = evaluate_columns(qcols, judged, run, parsed, conv, tie_order=ties)
            return RunValues(name, run.fingerprint, meta, queries, values, _found(ties))

        if len(run_paths) > 1 and plan.memory_limit is None:  # under a memory limit, one run at a time
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(2, len(run_paths))) as pool:
                items = list(pool.map(one, run_paths))
        else:
            items = [one(path) for path in run_paths]
    except StepAside:
        return None
    check_run_names([i.name for i in items], [str(p) for p in run_paths])
    for done, path in enumerate(run_paths, start=1):
        counted = counters.get(str(path))
        if counted is not None:
            counted.finish()
        if progress is not None:
            progress(done, len(run_paths), path.name)
    qrels = _SmallQrels(
        qrels_path.name,
        qcols.fingerprint,
        {"source": str(qrels_path), "duplicates_removed": 0, "on_duplicate": plan.on_duplicate},
        rubric_hash,
    )
    return assemble(qrels, parsed, conv, items)
