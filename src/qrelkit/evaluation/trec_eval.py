"""``qrelkit trec_eval``: trec_eval 10's command line, measures and summary rules, on qrelkit's readers.

:func:`trec_eval` evaluates one run file against one qrels file the way trec_eval 10 does and returns a
:class:`TrecEvalOutput` (per-query values and the summary); :mod:`qrelkit.report.trec_eval` prints it in
trec_eval's layout. What trec_eval does, and so what this does:

- the queries are those of the judgments, in byte order of their ids; run queries without judgments are
  ignored; a judged query missing from the run is an error unless ``complete`` (``-c``), which scores it
  on a one-document ranking of a document that is not judged (num_ret printed 0) and averages over every
  judged query;
- documents are ranked by score descending, ties by document id descending (``ties=docid_desc``); the
  first ``max_per_topic`` (``-M``) are kept; ``judged_only`` (``-J``) then drops documents without a
  judgment of 0 or more; a negative grade means "in the pool, unjudged" (``negative=unjudged``);
- a document is relevant at grade ``rel_level`` (``-l``) or more for the binary measures;
- summaries: counts (num_ret, num_rel, num_rel_ret, num_nonrel_judged_ret) are sums, gm_map and gm_bpref
  geometric means (each value floored at 0.00001), everything else the arithmetic mean; runid and num_q
  are summary lines only, relstring a per-query line only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.trec import kernels as tk
from ..engine.trec import registry as trec_registry
from ..errors import QrelkitError, StepAside, ValidationError
from ..measures.conventions import Conventions
from ..measures.trec_names import TrecMeasure, select

if TYPE_CHECKING:
    from ..data.values import Qrels, Run

#: The conventions the drop-in computes under (trec_eval 10's), written with its results.
TREC_EVAL_CONVENTIONS = Conventions.from_profile("trec_eval")


#: The bound on (judged queries) x (largest grade + 1), the grade-level counts trec_eval keeps per query:
#: 2**26 of them are 512 MB.
MAX_GRADE_COUNTS = 2**26


#: ``-N``'s bound: utility's arithmetic counts the collection in float64, exact to 2**53.
MAX_NUM_DOCS = 2**53


@dataclass(frozen=True)
class TrecOptions:
    per_query: bool = False  # -q
    complete: bool = False  # -c
    judged_only: bool = False  # -J
    summary: bool = True  # not -n
    rel_level: int = 1  # -l
    max_per_topic: int | None = None  # -M
    num_docs: int = 0  # -N
    measures: tuple[str, ...] = ()  # -m, as given
    trec_eval_parsing: bool = False  # --trec-eval-parsing: scores by atof, grades by atol

    def __post_init__(self) -> None:
        from ..errors import UsageError
        from ..measures.trec_names import MAX_CUTOFF

        if self.max_per_topic is not None and self.max_per_topic > MAX_CUTOFF:
            raise UsageError(
                f"-M {self.max_per_topic} is larger than {MAX_CUTOFF:,} (no ranking is that long)",
                fix=f"give -M at most {MAX_CUTOFF:,}, or leave it out to keep every document",
            )
        if abs(self.num_docs) > MAX_NUM_DOCS:
            raise UsageError(
                f"-N {self.num_docs} is larger than {MAX_NUM_DOCS:,} documents (utility counts them exactly"
                " in 64-bit floats only up to there)",
                fix="give the collection's size, e.g. -N 8841823",
            )


class TrecEvalStop(QrelkitError):
    """trec_eval stops, with its exit code: 2 when it cannot read a file (``trec_eval.c`` lines 302 and 319:
    "Quit in file"), 4 at a query it cannot evaluate (line 392: a judged query not in the run; line 411: a
    measure's ``te_form_res_rels`` fails). ``partial`` holds the queries before that one, which trec_eval
    has already printed under ``-q`` (the loop prints each query as it goes)."""

    def __init__(self, problem: str, *, exit_code: int, partial: TrecEvalOutput | None = None, **kw: Any):
        super().__init__(problem, **kw)
        self.exit_code = exit_code
        self.partial = partial


@dataclass
class TrecEvalOutput:
    """Per-query values and summaries of the selected measures, in trec_eval's printing order."""

    query_ids: list[str]
    run_id: str
    options: TrecOptions
    # (printed name, kind, per-query values (None: not printed per query), summary (None: not printed))
    lines: list[tuple[str, str, Any, Any]] = field(default_factory=list)


def rel_lists(qrels: Qrels, run: Run, options: TrecOptions) -> tuple[tk.RelLists, list[str], np.ndarray]:
    """trec_eval's ranked relevance lists (``form_res_rels.c``): (lists, query ids, mask of judged queries
    missing from the run, scored on trec_eval's one-document stand-in ranking)."""
    import polars as pl

    from ..engine.encoding.encode import encode

    judged_q = sorted(set(qrels.frame.get_column("query_id").unique().to_list()))
    conv = TREC_EVAL_CONVENTIONS.with_(missing_queries="zero", unjudged="zero", extra_queries="skip")
    negatives = qrels.frame.filter(pl.col("grade") < 0).select("query_id", "doc_id")
    enc = encode(qrels, run, conv, ranking=negatives.height > 0)
    assert enc.queries.query_ids == judged_q  # both sort query ids by code point (= byte order)
    rel = np.where(enc.judged, enc.grade, tk.NONPOOL).astype(np.int64)
    if negatives.height and enc.ranking is not None:
        pooled = (
            enc.ranking.select("query_id", "doc_id")
            .join(negatives.with_columns(pl.lit(True).alias("neg")), on=["query_id", "doc_id"], how="left")
            .get_column("neg")
            .is_not_null()
            .to_numpy()
        )
        rel = np.where(pooled, tk.UNJUDGED, rel)
    offsets = enc.offsets
    counts = np.diff(offsets)
    in_run = enc.queries.in_run
    if (~in_run).any():  # trec_eval's stand-in ranking: one document that is not judged
        new_counts = np.where(in_run, counts, 1)
        rows = np.full(int(new_counts.sum()), tk.NONPOOL, dtype=np.int64)
        new_offsets = np.concatenate(([0], np.cumsum(new_counts)))
        for q in np.flatnonzero(in_run).tolist():
            rows[new_offsets[q] : new_offsets[q + 1]] = rel[offsets[q] : offsets[q + 1]]
        rel, offsets, counts = rows, new_offsets, new_counts
    keep = np.ones(len(rel), dtype=bool)
    if options.max_per_topic is not None:
        pos = np.arange(len(rel)) - np.repeat(offsets[:-1], counts)
        keep &= pos < max(options.max_per_topic, 0)
    if options.judged_only:
        keep &= rel >= 0
    if not keep.all():
        qidx = np.repeat(np.arange(len(counts)), counts)
        counts = np.bincount(qidx[keep], minlength=len(counts))
        rel = rel[keep]
        offsets = np.concatenate(([0], np.cumsum(counts)))
    grades = qrels.frame.filter(pl.col("grade") >= 0)
    top = int(grades.get_column("grade").max() or 0) + 1 if grades.height else 1  # type: ignore[arg-type]  # an integer column's max
    if len(judged_q) * top > MAX_GRADE_COUNTS:
        raise _grade_too_large(qrels, grades, len(judged_q))
    levels = np.zeros((len(judged_q), top), dtype=np.int64)
    qcode = np.searchsorted(np.array(judged_q), grades.get_column("query_id").to_numpy())
    np.add.at(levels, (qcode, grades.get_column("grade").to_numpy()), 1)
    return tk.RelLists(offsets.astype(np.int64), rel, levels, options.rel_level), judged_q, ~in_run


def _grade_too_large(qrels: Qrels, grades: Any, n_queries: int) -> TrecEvalStop:
    """A grade so large that the count of each query's grade levels (``form_res_rels.c`` lines 153-156:
    ``max_rel + 1`` longs per query) would not fit: one line naming it, exit 2, instead of the allocation."""
    row = grades.sort("grade", descending=True).row(0, named=True)
    return TrecEvalStop(
        f"grade {row['grade']} is too large to count grade levels up to it over {n_queries:,} "
        f"quer{'y' if n_queries == 1 else 'ies'} (at most {MAX_GRADE_COUNTS:,} counts)",
        exit_code=2,
        source=str(qrels.meta.get("source", qrels.name)),
        line=row.get("line"),
        fix="number the grades 0, 1, 2, ... (trec_eval reads a grade as a count of levels)",
    )


def _missing_error(missing: list[str], source: str) -> TrecEvalStop:
    return TrecEvalStop(
        f"judged query {missing[0]!r} is not in the run ({len(missing)} judged "
        f"quer{'y is' if len(missing) == 1 else 'ies are'} missing); trec_eval 10 stops here",
        exit_code=4,
        source=source,
        fix="pass -c to score missing queries as empty rankings and average over every judged query",
    )


def first_fault(
    rl: tk.RelLists,
    query_ids: list[str],
    missing: np.ndarray,
    duplicated: tuple[set[str], set[str]],
    options: TrecOptions,
    sources: tuple[str, str],
) -> tuple[int, TrecEvalStop] | None:
    """The first query (in trec_eval's order) at which trec_eval 10 stops with exit 4, and the error.

    trec_eval's loop (``trec_eval.c`` lines 368-466) evaluates the judged queries one by one: a query not
    in the run stops it without ``-c`` (line 389); a document given twice in the query's ranking or in its
    judgments stops it in ``form_res_rels.c`` (lines 128-134 and 141-150); and on the very first query a
    query whose judgments are all negative stops it too: ``max_rel + 1`` is 0, so ``te_chk_and_malloc``
    (``utility_pool.c`` line 33) returns the still unallocated ``rel_levels``, NULL (``form_res_rels.c``
    lines 153-156). On a later query the same judgments make trec_eval read the previous query's grade
    counts (or crash); qrelkit evaluates such a query on its own judgments."""
    dup_qrels, dup_run = duplicated
    for i, qid in enumerate(query_ids):
        if missing[i] and not options.complete:
            absent = [q for q, m in zip(query_ids, missing.tolist(), strict=True) if m]
            return i, _missing_error(absent, sources[1])
        if qid in dup_run and not missing[i]:
            return i, TrecEvalStop(
                f"query {qid!r} ranks a document twice; trec_eval 10 stops here",
                exit_code=4,
                source=sources[1],
                fix="remove the duplicate lines",
            )
        if qid in dup_qrels:
            return i, TrecEvalStop(
                f"query {qid!r} judges a document twice; trec_eval 10 stops here",
                exit_code=4,
                source=sources[0],
                fix="remove the duplicate judgments",
            )
        if i == 0 and not rl.levels[0].any():
            return i, TrecEvalStop(
                f"query {qid!r}, the first, has only negative grades; trec_eval 10 stops here "
                "(form_res_rels.c allocates no grade counts for it)",
                exit_code=4,
                source=sources[0],
                fix="judge one of its documents 0 or more, or leave the query out",
            )
    return None


def stopped(out: TrecEvalOutput, at: int) -> TrecEvalOutput:
    """The output trec_eval has printed when it stops at query ``at``: the queries before it (under
    ``-q``), no summary."""
    lines = [(n, k, None if v is None else v[:at], s) for n, k, v, s in out.lines]
    options = dataclasses.replace(out.options, summary=False)
    return TrecEvalOutput(out.query_ids[:at], out.run_id, options, lines)


def measure_values(rl: tk.RelLists, m: TrecMeasure, num_docs: int = 0) -> list[tuple[str, Any]]:
    """(printed name, per-query values) for one trec_eval measure: its numpy kernel in
    :data:`qrelkit.engine.trec.registry.TREC_REGISTRY`."""
    return trec_registry.measure_values(trec_registry.NUMPY, rl, m, num_docs)


def trec_eval(qrels: Qrels, run: Run, options: TrecOptions) -> TrecEvalOutput:
    """trec_eval 10 on one run: see the module docstring."""
    rl, query_ids, stand_in = rel_lists(qrels, run, options)
    duplicated = (_duplicated(qrels.meta), _ranked_twice(run, options.max_per_topic))
    sources = (str(qrels.meta.get("source", qrels.name)), str(run.meta.get("source", run.name)))
    return _evaluate_or_stop(rl, query_ids, stand_in, run.name, options, duplicated, sources)


def _duplicated(meta: Any) -> set[str]:
    dups: Any = meta.get("duplicates")
    return set() if dups is None else set(dups.get_column("query_id").to_list())


def _ranked_twice(run: Run, max_per_topic: int | None) -> set[str]:
    """The queries whose ranking holds a document twice within its first ``-M``: ``form_res_rels.c``
    cuts the sorted ranking at ``-M`` (line 113) before it looks for duplicates (lines 128-134), so a copy
    ranked below the cut is never seen. The run was read keeping each document's highest score (its
    first place in the ranking): the other copies rank below it."""
    import polars as pl

    dups: Any = run.meta.get("duplicates")
    if dups is None:
        return set()
    queries = sorted(set(dups.get_column("query_id").to_list()))
    if max_per_topic is None:
        return set(queries)
    found = set()
    for qid in queries:
        copies = dups.filter(pl.col("query_id") == qid).select("doc_id", "score")
        kept = run.frame.filter(pl.col("query_id") == qid).select("doc_id", "score")
        full = pl.concat([kept.join(copies.select("doc_id").unique(), on="doc_id", how="anti"), copies])
        top = full.sort(["score", "doc_id"], descending=[True, True]).head(max(max_per_topic, 0))
        if top.get_column("doc_id").is_duplicated().any():
            found.add(qid)
    return found


def _evaluate_or_stop(
    rl: tk.RelLists,
    query_ids: list[str],
    stand_in: np.ndarray,
    run_name: str,
    options: TrecOptions,
    duplicated: tuple[set[str], set[str]],
    sources: tuple[str, str],
) -> TrecEvalOutput:
    out = evaluate_lists(rl, query_ids, stand_in, run_name, options)
    fault = first_fault(rl, query_ids, stand_in, duplicated, options, sources)
    if fault is not None:
        at, error = fault
        error.partial = stopped(out, at)
        raise error
    return out


def evaluate_lists(
    rl: tk.RelLists, query_ids: list[str], stand_in: np.ndarray, run_name: str, options: TrecOptions
) -> TrecEvalOutput:
    """trec_eval's measures and summaries over ranked relevance lists (either form): ``stand_in`` marks
    the judged queries missing from the run (scored on trec_eval's one-document stand-in ranking)."""
    measures = select(list(options.measures))
    out = TrecEvalOutput(query_ids, run_name, options)
    nq = len(query_ids)
    for m in measures:
        if m.kind == "runid":
            out.lines.append(("runid", "runid", None, run_name))
            continue
        if m.kind == "num_q":
            out.lines.append(("num_q", "long", None, nq))
            continue
        for name, values in measure_values(rl, m, options.num_docs):
            if m.kind == "string":
                strings = ["" if s else v for v, s in zip(values, stand_in.tolist(), strict=True)]
                out.lines.append((name, "string", strings, None))
                continue
            values = np.asarray(values, dtype=np.float64)
            if stand_in.any() and trec_registry.TREC_REGISTRY[m.name].reset_for_stand_in:
                values = np.where(stand_in, 0.0, values)
            # accumulated in query order, as trec_eval adds them (a running sum adds one by one; 0.0 +
            # makes an all -0.0 sum 0.0, as the C sum starting at 0 gives)
            total = 0.0 + float(np.cumsum(values)[-1]) if len(values) else 0.0
            if m.kind == "gm":
                out.lines.append((name, "double", None, math.exp(total / nq) if nq else 0.0))
            elif m.kind == "long":
                if m.name == "num_rel" and options.complete:
                    # m_num_rel.c lines 63-71: under -c the summary counts every judgment graded above 0,
                    # whatever -l says (the per-query values follow -l)
                    total = float(rl.levels[:, 1:].sum())
                out.lines.append((name, "long", values, total))
            else:
                out.lines.append((name, "double", values, total / nq if nq else total))
    return out


def trec_eval_files(qrels_path: str | Path, run_path: str | Path, options: TrecOptions) -> TrecEvalOutput:
    """Read the files with qrelkit's readers (duplicates are an error, as in trec_eval) and evaluate: clean
    TREC files through :mod:`qrelkit.evaluation.trec_fast` (the same numbers and errors), anything else the usual
    way. How is decided by :func:`qrelkit.evaluation.plan.plan_reading` (the ``trec_eval`` route: a
    document given twice is an error and lines beginning with ``#`` are skipped, as in trec_eval 10). The
    route's first readers, ``trec_native`` and ``trec_lean``, need no numpy and are run before this by the
    command (:func:`qrelkit.evaluation.trec_lean.lean_route`); this runs the readers from ``trec_fast`` on."""
    from .plan import Inputs, ReaderOptions, plan_reading
    from .trec_fast import fast_rel_lists

    reader = ReaderOptions.given(on_duplicate="error", comments=True)
    inputs = Inputs.build(qrels_path, (run_path,), (), TREC_EVAL_CONVENTIONS, reader, engine="trec_eval")
    plan = plan_reading(inputs)
    if options.trec_eval_parsing:  # atof/atol reading: qrelkit's readers only, no native scanner
        return _trec_eval_parsed(Path(qrels_path), Path(run_path), options, plan.comments)
    try:
        if "trec_fast" not in plan.readers:
            raise StepAside
        rl, query_ids, missing, name = fast_rel_lists(
            Path(qrels_path),
            Path(run_path),
            options.judged_only,
            options.max_per_topic,
            options.rel_level,
            TREC_EVAL_CONVENTIONS.precision == "single",
        )
    except StepAside:
        pass
    except QrelkitError as exc:
        raise _unreadable(exc) from None
    else:
        if missing.any():
            # trec_eval's stand-in ranking: one document that is not judged (none left under -J or -M 0)
            shown = (
                0
                if options.judged_only or (options.max_per_topic is not None and options.max_per_topic <= 0)
                else 1
            )
            rl = dataclasses.replace(rl, returned=np.where(missing, shown, rl.num_ret))
        if rl.rel_level <= tk.NONPOOL:
            rl = rl.dense()
        sources = (str(qrels_path), str(run_path))
        return _evaluate_or_stop(rl, query_ids, missing, name, options, (set(), set()), sources)
    from ..formats.trec import read_qrels, read_run

    try:
        # a document given twice stops trec_eval at its query (form_res_rels.c), not when reading: one
        # copy is kept and the copies are recorded (meta["duplicates"]), for first_fault
        qrels = read_qrels(Path(qrels_path), comments=plan.comments, on_duplicate="first")
        run = read_run(Path(run_path), comments=plan.comments, on_duplicate="max", mixed_tags=True)
        if not qrels.frame.height:
            raise ValidationError(
                "the judgments have no rows", source=str(qrels_path), fix="pass a non-empty file"
            )
        if not run.frame.height:
            raise ValidationError(
                "the run has no rows", source=str(run_path), fix="pass a non-empty run file"
            )
    except QrelkitError as exc:
        raise _unreadable(exc) from None
    return trec_eval(qrels, run, options)


def _trec_eval_parsed(
    qrels_path: Path, run_path: Path, options: TrecOptions, comments: bool
) -> TrecEvalOutput:
    """``--trec-eval-parsing``: the files read with trec_eval's ``atof`` scores and ``atol`` grades
    (:mod:`qrelkit.formats.trec.atof`), then evaluated as any other."""
    from ..formats.trec.atof import read_qrels_atof, read_run_atof

    try:
        qrels = read_qrels_atof(qrels_path, comments=comments, on_duplicate="first")
        run = read_run_atof(run_path, comments=comments, on_duplicate="max", mixed_tags=True)
    except QrelkitError as exc:
        raise _unreadable(exc) from None
    return trec_eval(qrels, run, options)


def _unreadable(exc: QrelkitError) -> QrelkitError:
    """A file trec_eval cannot read ends it with exit 2 and prints nothing (``trec_eval.c`` lines 296-327:
    "Quit in file"); qrelkit's reading errors, which refuse what trec_eval reads differently
    (docs/trec_eval.md), keep their message and take that exit code."""
    exc.exit_code = 2
    return exc
