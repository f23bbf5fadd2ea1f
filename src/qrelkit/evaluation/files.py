"""Evaluating files: :func:`evaluate_files` (the API's door: paths in,
:class:`~qrelkit.evaluation.results.Results` out), :func:`plan_inputs` and :func:`evaluate_planned_on`
(``qrelkit eval``'s: the plan made once, then carried out here or on Spark), :func:`evaluate_bounded` (the
evaluation and its judgment bounds from one reading), and :func:`read_whole`.

Each carries out a plan of :func:`qrelkit.evaluation.plan.plan_reading` (the one place that decides how
files are read, recorded as ``reading`` in the provenance): small clean TREC files are evaluated with
numpy alone; otherwise each run is read by streaming, whole, or through DuckDB under a memory limit, in the
order :mod:`qrelkit.formats.trec` lists. The dataframe libraries are imported only when a path needs them,
so a small evaluation loads numpy alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import StepAside, ValidationError
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
from .plan import (
    Batches,
    Inputs,
    ReaderOptions,
    ReadingPlan,
    check_limit,
    plan_reading,
    read_judgments,
    read_run_file,
    read_runs_whole,
    small_runs,
)
from .plan import read_whole as read_whole_plan
from .results import Results, RunValues, assemble

if TYPE_CHECKING:
    from ..data.values import Qrels, Run
    from ..engine.tie_order import TieOrder


def read_whole(
    qrels_path: str | Path,
    run_paths: Sequence[str | Path],
    conventions: Conventions,
    reader: ReaderOptions | None = None,
) -> tuple[Qrels, list[Run]]:
    """Judgments and runs read whole, for work that needs every row of every run (compare, report,
    explain, the conventions sweep, the bounds, the estimates), by the plan for every row
    (:func:`qrelkit.evaluation.plan.plan_reading` with ``need="whole"``) with ``reader``'s options, those
    left unset taken from ``conventions``' profile."""
    from .plan import read_whole as read
    from .plan import whole_plan

    return read(whole_plan(qrels_path, run_paths, conventions, reader))


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
    profile: str | None = None,
) -> Results:
    """Read judgments once and evaluate every run file against them, two runs at a time.

    ``profile`` (a name, as ``--profile`` takes it) applies that tool's conventions and its reader rules
    exactly as ``qrelkit eval --profile`` does (give it or ``conventions``, not both):
    ``evaluate_files("qrels.txt", ["bm25.run"], ["ndcg_cut_10"], profile="trec_eval")``.

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
    if profile is not None:
        from ..measures.profiles import conventions_of

        conventions = conventions_of(profile, conventions)
    conv = conventions or DEFAULT
    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if diversity and measures is None else measures)
    check_judgments_kind(parsed, diversity)
    reader = ReaderOptions.given(input_format, on_duplicate, comments, scale, rubric_hash)
    inputs = Inputs.build(qrels_path, run_paths, parsed, conv, reader, memory_limit=memory_limit,
                          diversity=diversity)  # fmt: skip
    return evaluate_planned(plan_reading(inputs), progress=progress, on_bytes=on_bytes, strict=strict)


def evaluate_planned(
    plan: ReadingPlan,
    *,
    progress: Callable[[int, int, str], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
    strict: bool = False,
) -> Results:
    """Execute ``plan`` (:func:`qrelkit.evaluation.plan.plan_reading`) on this process: read its inputs'
    judgments and runs by its route and readers and evaluate them (see :func:`evaluate_files`), with
    ``memory_limit`` a bound on what a gzip file read whole may expand to too
    (:func:`qrelkit.formats.trec.common.gzip_limit`)."""
    from ..formats.trec.common import gzip_limit

    with gzip_limit(plan.memory_limit):
        return _evaluate_planned(plan, progress, on_bytes, strict)


def _evaluate_planned(
    plan: ReadingPlan,
    progress: Callable[[int, int, str], None] | None,
    on_bytes: Callable[[int], None] | None,
    strict: bool,
) -> Results:
    from ..formats.trec.common import check_inputs
    from ..formats.trec.small import SMALL_FILE_BYTES

    inputs = plan.inputs
    assert inputs is not None
    qrels_path, run_paths, parsed, conv = inputs.qrels, inputs.runs, list(inputs.measures), inputs.conventions
    check_judgments_kind(parsed, inputs.diversity)
    check_inputs(qrels_path, run_paths, plan.options.input_format)
    if plan.memory_limit is not None:
        check_limit(plan, qrels_path, run_paths)  # below what the process holds reading the runs: refused
    if plan.route == "diversity":
        return _evaluate_diversity_files(plan, progress, strict)
    large = [Path(p) for p in run_paths if Path(p).is_file() and Path(p).stat().st_size > SMALL_FILE_BYTES]
    hash_ahead(large)  # runs too large for the small path, hashed while the readers' libraries load
    if plan.route == "whole":
        return evaluate_whole(plan, read_whole_plan(plan), progress=progress, strict=strict)
    counters = {
        str(Path(p)): _FileBytes(on_bytes, Path(p).stat().st_size)
        for p in run_paths
        if on_bytes is not None and Path(p).is_file()
    }  # each run's bytes, reported once whichever readers read it
    refused: set[str] = set()  # runs whose native pass stepped aside on the way: Arrow's parse is next
    small = _evaluate_small(plan, progress, counters, refused)
    if small is not None:
        if strict:
            small.check_strict()
        return small.with_reading(plan)
    qrels = read_judgments(plan)
    check_gains(qrels, parsed, conv)
    done = 0

    def tracked(path_like: str | Path) -> tuple[str, RunValues]:
        nonlocal done
        path = Path(path_like)
        counted = counters.get(str(path))
        read = read_run_file(plan, path, counted, native=str(path) not in refused)
        result = str(path), _evaluate_read(read, qrels, parsed, conv)
        if counted is not None:
            counted.finish()
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


def evaluate_whole(
    plan: ReadingPlan,
    read: tuple[Qrels, list[Run]],
    *,
    progress: Callable[[int, int, str], None] | None = None,
    strict: bool = False,
) -> Results:
    """Judgments and runs read whole (``read``, by :func:`qrelkit.evaluation.plan.read_whole`) evaluated with
    :func:`qrelkit.evaluation.core.evaluate`, which applies a profile's refusals (the ``whole`` route:
    gdeval, sklearn), the plan recorded. What else needs every row (the judgment bounds) shares ``read``."""
    assert plan.inputs is not None
    qrels, runs = read
    parsed = list(plan.inputs.measures)
    results = evaluate(qrels, runs, parsed, plan.inputs.conventions, progress=progress, strict=strict)
    return results.with_reading(plan)


def evaluate_bounded(
    plan: ReadingPlan,
    *,
    progress: Callable[[int, int, str], None] | None = None,
    strict: bool = False,
) -> Results:
    """The evaluation of ``plan``'s inputs with each run's judgment bounds
    (:func:`qrelkit.evaluation.bounds.judgment_bounds`) attached. The bounds need every row of every run, so
    the runs are read whole once (the plan for every row, :func:`qrelkit.evaluation.plan.plan_reading` with
    ``need="whole"``, recorded as the reading) and the evaluation and the bounds share what was read."""
    from .bounds import judgment_bounds

    assert plan.inputs is not None
    whole = plan if plan.route == "whole" else plan_reading(plan.inputs, need="whole")
    read = read_whole_plan(whole)
    # the bounds first, as each run's are computed on its own: an error in a run is said before two runs' names
    found = judgment_bounds(read[0], read[1], list(plan.inputs.measures), plan.inputs.conventions)
    return evaluate_whole(whole, read, progress=progress, strict=strict).with_bounds(found)


def _evaluate_read(
    read: Run | Batches, qrels: Qrels, parsed: Sequence[Measure], conv: Conventions
) -> RunValues:
    """One run as the plan's chain read it (a Run, or batches sorted on disk by DuckDB), evaluated."""
    ties = tie_order_for(conv)
    if isinstance(read, Batches):
        queries, values = evaluate_run_batches(qrels, read.batches, parsed, conv, tie_order=ties)
        return RunValues(read.name, read.fingerprint, read.meta, queries, values, _found(ties))
    queries, values = evaluate_run(qrels, read, parsed, conv, tie_order=ties)
    return RunValues(read.name, read.fingerprint, dict(read.meta), queries, values, _found(ties))


def _found(ties: TieOrder | None) -> dict[str, tuple[str, ...]]:
    """The queries a :class:`~qrelkit.engine.tie_order.TieOrder` found, per measure (none without one)."""
    return ties.queries() if ties is not None else {}


def plan_inputs(
    qrels: str | Path,
    runs: Sequence[str | Path],
    measures: Iterable[str | Measure] | None,
    conventions: Conventions,
    reader: ReaderOptions | None = None,
    *,
    engine: str = "local",
    memory_limit: int | str | None = None,
    diversity: bool = False,
    bounds: bool = False,
) -> ReadingPlan:
    """The plan of an evaluation of files given by path (or, on Spark, folders and tables): the measures
    parsed (the diversity measures by default with ``diversity``), the inputs built once, the plan made.
    ``bounds``: the evaluation will want its judgment bounds (:func:`evaluate_bounded`), so every input is
    read whole as a file."""
    parsed = parse_measures(DIVERSITY_DEFAULT_MEASURES if diversity and measures is None else measures)
    # with the bounds every input is read whole here, as a file: a folder is its reader's error, as before
    folders = [] if bounds else [str(p) for p in (qrels, *runs) if Path(p).is_dir()]
    inputs = Inputs.build(qrels, runs, parsed, conventions, reader, engine=engine, memory_limit=memory_limit,
                          diversity=diversity)  # fmt: skip
    return plan_reading(inputs, folders=folders)


def evaluate_planned_on(
    plan: ReadingPlan,
    *,
    master: str | None = None,
    strict: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
    bounds: bool = False,
) -> Results:
    """Execute ``plan`` where its engine computes: Spark (:func:`qrelkit.evaluation.spark.evaluate_planned`)
    or this process (:func:`evaluate_planned`); with ``bounds``, each run's judgment bounds too, from the
    same reading (:func:`evaluate_bounded`)."""
    if bounds:  # every row of every run: read whole once, for the evaluation and the bounds alike
        return evaluate_bounded(plan, progress=progress, strict=strict)
    if plan.route == "spark":
        from .spark import evaluate_planned as on_spark

        results = on_spark(plan, master=master)
        if strict:
            results.check_strict()
        return results
    return evaluate_planned(plan, progress=progress, on_bytes=on_bytes, strict=strict)


def _evaluate_diversity_files(
    plan: ReadingPlan, progress: Callable[[int, int, str], None] | None, strict: bool
) -> Results:
    """:func:`evaluate_files` for diversity judgments: the judgments by their one reader, each run whole."""
    from ..formats import read_diversity_qrels

    inputs, options = plan.inputs, plan.options
    assert inputs is not None
    if options.input_format not in ("auto", "trec"):
        raise ValidationError(
            f"diversity judgments are TREC text (query_id subtopic doc_id grade), not {options.input_format}",
            fix="convert them to TREC text, or pass --input-format trec",
        )
    judgments = read_diversity_qrels(inputs.qrels, scale=options.scale, on_duplicate=plan.on_duplicate,
                                     comments=plan.comments)  # fmt: skip
    if options.rubric_hash is not None:
        judgments = judgments.replace(rubric_hash=options.rubric_hash)
    runs = read_runs_whole(plan)
    results = evaluate(
        judgments, runs, list(inputs.measures), inputs.conventions, progress=progress, strict=strict
    )
    return results.with_reading(plan)


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
    plan: ReadingPlan,
    progress: Callable[[int, int, str], None] | None,
    counters: dict[str, _FileBytes],
    refused: set[str] | None = None,
) -> Results | None:
    """Step 1 of :mod:`qrelkit.formats.trec`, evaluated with numpy alone, when the plan takes it
    (:func:`qrelkit.evaluation.plan.small_runs`): small clean judgments, and each run a small clean file read
    whole (``reader: small``) or, when every measure has a cutoff, a clean run of any size read only to that
    depth by the native scanner, with the rows and the provenance the streaming reader gives it
    (:func:`qrelkit.formats.trec.small.top_columns`); under a memory limit one run at a time. ``None`` when
    any input steps aside (nothing was reported then but bytes read, through ``counters``, and the runs whose
    native pass stepped aside, added to ``refused``: the caller starts again)."""
    from ..engine.encoding.small import Judgments, evaluate_columns, grades_within
    from ..engine.kernels.ranked import gain_overflows
    from ..formats.trec.small import ScannerRefused, read_columns, top_columns

    inputs = plan.inputs
    assert inputs is not None
    qrels_path, run_paths = Path(inputs.qrels), [Path(p) for p in inputs.runs]
    parsed, conv, scale = list(inputs.measures), inputs.conventions, plan.options.scale
    whole = small_runs(plan, qrels_path, run_paths)
    if whole is None:
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
        plan.options.rubric_hash,
    )
    return assemble(qrels, parsed, conv, items)
