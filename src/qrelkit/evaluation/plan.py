"""How a set of files is read: one decision, made here, recorded in the provenance, and carried out here.

Three values, in the order a door builds them (the command line through
:func:`qrelkit.evaluation.files.plan_inputs`, :func:`qrelkit.evaluation.files.evaluate_files`,
:func:`qrelkit.compare.compare_files`, :func:`qrelkit.evaluation.spark.evaluate`, ``qrelkit trec_eval``):

* :class:`ReaderOptions`: the five options every reader is told (input format, duplicate rule, comment
  lines, the rubric's scale and hash) as one value; :meth:`ReaderOptions.resolved` fills what was not given
  from the profile (``--profile trec_eval`` skips lines beginning with ``#``) or the default;
* :class:`Inputs`: the judgments, runs, measures, conventions with their profile resolved beside them, the
  reader options resolved, the engine and the memory limit, built once (:meth:`Inputs.build`);
* :class:`ReadingPlan`: :func:`plan_reading` decides the route and its readers for what is needed
  (``need="depth"``: an evaluation; ``"whole"``: every row of every run, :func:`whole_plan`), refusing
  with the reason a limit the route cannot honour. It is written into every result's provenance
  (``reading``).

A plan is then carried out, never decided again: :func:`read_run_file` takes one run through the chain of
:class:`RunReader` objects (:attr:`ReadingPlan.chain`), :func:`small_runs` says whether the small path
takes the files, :func:`read_whole`, :func:`read_judgments` and :func:`read_runs_whole` read a ``whole``
plan; :func:`fits_whole` is the one formula for whether a run fits in memory.

The routes:

* ``readers``: the order of :mod:`qrelkit.formats.trec` (``small``, then ``native`` and ``arrow``
  streaming, then ``robust``; ``duckdb`` for a run sorted on disk), each run read only as deep as the
  measures need;
* ``whole``: a profile whose refusals look at every row (gdeval, sklearn, ...): each run read whole by
  the readers of steps 2-4;
* ``diversity``: diversity judgments by their one reader, each run read whole;
* ``spark``: Spark (:mod:`qrelkit.evaluation.spark`): TREC files read on the driver by the readers of
  steps 2-4, Parquet and tables by Spark;
* ``trec_eval``: ``qrelkit trec_eval``'s two paths without numpy for small files (one native call,
  :mod:`qrelkit.evaluation.trec_native`, then :mod:`qrelkit.evaluation.trec_lean`), its fast path (:mod:`qrelkit.evaluation.trec_fast`), stepping
  aside to the readers of steps 2-4 (the table is :mod:`qrelkit.evaluation.routes`, which imports nothing).

Judgments named by dataset (``irds:ID``, :mod:`qrelkit.formats.irds`) are a value, not a file: they are
read whole by their resolver, the small path (which reads judgments as a file) is left out of the
``readers`` route, and ``--diversity`` and Spark refuse them; the plan records the name as ``judgments``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._typing import DEFAULT_COMMENTS, DEFAULT_ON_DUPLICATE, ON_DUPLICATE_CHOICES
from ..errors import UsageError
from ..measures.conventions import Conventions
from ..measures.grammar import Measure, required_depth
from .routes import ROUTES as _ROUTES

if TYPE_CHECKING:
    from ..data.values import Qrels, Run
    from ..measures.profiles import Profile

#: The readers each route tries, in order: :data:`qrelkit.evaluation.routes.ROUTES` (a table importing
#: nothing, for ``qrelkit trec_eval``'s start-up).
ROUTES = _ROUTES


@dataclass(frozen=True)
class ReaderOptions:
    """The five options every reader of an evaluation is told, as one value: the input format, the rule for a
    document given twice, whether lines beginning with ``#`` are comments, the rubric's scale the grades must
    lie on and the rubric's hash the judgments carry. As given at the door, ``on_duplicate`` and ``comments``
    may be ``None`` (the profile's choice, else the default); :meth:`resolved` fills them in and records where
    each came from (``source``)."""

    input_format: str = "auto"
    on_duplicate: str | None = None
    comments: bool | None = None
    scale: tuple[int, ...] | None = None
    rubric_hash: str | None = None
    source: tuple[tuple[str, str], ...] = ()  # (option, "given" | "profile NAME" | "default"), once resolved

    @classmethod
    def given(
        cls,
        input_format: str = "auto",
        on_duplicate: str | None = None,
        comments: bool | None = None,
        scale: Sequence[int] | None = None,
        rubric_hash: str | None = None,
    ) -> ReaderOptions:
        """The options as a caller gives them (keywords at a door: the API, the command line, Spark)."""
        return cls(input_format, on_duplicate, comments, None if scale is None else tuple(scale), rubric_hash)

    def resolved(self, profile: Profile | None) -> ReaderOptions:
        """Each option given wins, else ``profile``'s (``--profile trec_eval`` skips lines beginning with
        ``#`` as trec_eval 10 does; a profile whose tool keeps the last line of a document given twice keeps
        it too), else the default (a document given twice is an error; no line is a comment)."""
        if self.source:
            return self
        label = f"profile {profile.name}" if profile is not None else "default"
        source = [(axis, "given" if given is not None else label)
                  for axis, given in (("on_duplicate", self.on_duplicate), ("comments", self.comments))]  # fmt: skip
        if profile is not None:
            from ..measures.profiles import reader_rules

            on_duplicate, comments = reader_rules(profile, self.on_duplicate, self.comments)
        else:  # the defaults, without loading the profiles' table
            on_duplicate = DEFAULT_ON_DUPLICATE if self.on_duplicate is None else self.on_duplicate
            comments = DEFAULT_COMMENTS if self.comments is None else self.comments
        if on_duplicate not in ON_DUPLICATE_CHOICES:
            from ..data.values import check_choice

            check_choice(on_duplicate, ON_DUPLICATE_CHOICES, "on_duplicate")
        return replace(self, on_duplicate=on_duplicate, comments=bool(comments), source=tuple(source))

    def to_dict(self) -> dict[str, Any]:
        return {"on_duplicate": self.on_duplicate, "comments": self.comments, "from": dict(self.source)}


def reader_options(
    conventions: Conventions, on_duplicate: str | None = None, comments: bool | None = None
) -> ReaderOptions:
    """The reader options of ``conventions``' profile, each one given winning (:meth:`ReaderOptions.resolved`)."""
    return ReaderOptions.given(on_duplicate=on_duplicate, comments=comments).resolved(_profile(conventions))


def _profile(conventions: Conventions) -> Profile | None:
    """The profile ``conventions`` name (:func:`qrelkit.measures.profiles.tool_of`), its module loaded only
    when they name one."""
    if conventions.profile is None:
        return None
    from ..measures.profiles import tool_of

    return tool_of(conventions)


@dataclass(frozen=True)
class Inputs:
    """Everything an evaluation of files is asked, as one value built once at the door (the command line,
    :func:`qrelkit.evaluation.files.evaluate_files`, Spark, ``qrelkit trec_eval``) and handed over: the
    judgments (a path, or a dataset name ``irds:ID``), the runs, the measures, the conventions with their
    profile resolved beside them, the reader options resolved, the engine and the memory limit."""

    qrels: Any  # a path or a dataset name; on Spark, a DataFrame or a table's name too
    runs: tuple[Any, ...]
    measures: tuple[Measure, ...]
    conventions: Conventions
    profile: Profile | None
    reader: ReaderOptions
    engine: str = "local"
    memory_limit: int | None = None  # bytes for the whole process
    diversity: bool = False

    @classmethod
    def build(
        cls,
        qrels: Any,
        runs: Sequence[Any],
        measures: Sequence[Measure],
        conventions: Conventions,
        reader: ReaderOptions | None = None,
        *,
        engine: str = "local",
        memory_limit: int | str | None = None,
        diversity: bool = False,
    ) -> Inputs:
        """The inputs, each option resolved once: the profile (:func:`qrelkit.measures.profiles.tool_of`), the reader options
        (:meth:`ReaderOptions.resolved`) and the memory limit (:func:`parse_limit`)."""
        profile = _profile(conventions)
        options = (reader or ReaderOptions()).resolved(profile)
        return cls(qrels, tuple(runs), tuple(measures), conventions, profile, options, engine,
                   parse_limit(memory_limit), diversity)  # fmt: skip


@dataclass(frozen=True)
class ReadingPlan:
    """How an evaluation's files are read (see the module's docstring for the routes)."""

    route: str
    readers: tuple[str, ...]
    options: ReaderOptions
    memory_limit: int | None  # bytes for the whole process, or None
    depth: int | None  # each query's rows the measures need (None: every row)
    rank_single: bool  # scores ranked in single precision by some measure
    reason: str  # why this route
    judgments: str | None = None  # judgments named by dataset (irds:ID), read by their resolver
    inputs: Inputs | None = field(default=None, compare=False, repr=False)  # what the plan was made for

    @property
    def on_duplicate(self) -> str:
        assert self.options.on_duplicate is not None
        return self.options.on_duplicate

    @property
    def comments(self) -> bool:
        return bool(self.options.comments)

    @property
    def chain(self) -> tuple[RunReader, ...]:
        """The readers one run of the ``readers`` route tries, in order, past the small path: each
        :meth:`RunReader.accepts` it or not, and one that accepts reads it or steps aside (``None``)."""
        return RUN_CHAIN

    def to_dict(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "readers": list(self.readers),
            "memory_limit": self.memory_limit,
            "depth": self.depth,
            "rank_single": self.rank_single,
            "reason": self.reason,
            **({"judgments": self.judgments} if self.judgments is not None else {}),
            **self.options.to_dict(),
        }


def _refuse_limit(where: str, why: str, fix: str) -> UsageError:
    return UsageError(f"--memory-limit does not apply to {where}: {why}", fix=fix)


def plan_reading(inputs: Inputs, *, need: str = "depth", folders: Sequence[str] = ()) -> ReadingPlan:
    """The plan for reading ``inputs``.

    ``need`` is ``depth`` (an evaluation: each run read as deep as the measures need, on the route the
    inputs call for) or ``whole`` (every row of every run: the judgment bounds, compare's noise floor and
    estimates, the report, explain, the conventions sweep). ``folders`` are the inputs that are folders
    (read by Spark only). Raises :class:`~qrelkit.errors.UsageError` for what cannot be honoured: a memory
    limit on a route that reads runs whole or off this process, diversity judgments on Spark, a folder
    locally, a dataset name as diversity judgments or on Spark.
    """
    qrels = inputs.qrels
    named = _dataset_name(qrels if isinstance(qrels, str) else None, inputs.engine, inputs.diversity)
    plan = replace(_plan(inputs, need, folders), inputs=inputs)
    if named is None:
        return plan
    if plan.route != "readers":
        return replace(plan, judgments=named)
    return replace(
        plan,
        readers=tuple(r for r in plan.readers if r != "small"),
        judgments=named,
        reason=f"{plan.reason}; judgments {named} read whole by name",
    )


def _dataset_name(qrels: str | None, engine: str, diversity: bool) -> str | None:
    """``qrels`` when it names a dataset (``irds:ID``) on a route that reads one, else ``None``
    (``qrelkit trec_eval`` reads files, as trec_eval does: its reader says a name is no file)."""
    if qrels is None or engine == "trec_eval":
        return None
    from ..formats import is_dataset

    if not is_dataset(qrels):
        return None
    export = f"`ir_datasets export {qrels.split(':', 1)[1]} qrels > judgments.qrels`"
    if diversity:
        raise UsageError(
            f"--diversity reads a file of diversity judgments, not a dataset name: {qrels}",
            fix=f"export the dataset's judgments to a file ({export}) and pass it, or drop --diversity",
        )
    if engine != "local":
        raise UsageError(
            f"a dataset name is read by --engine local only: {qrels}",
            fix=f"drop --engine spark, or export the judgments to a file ({export}) and pass it",
        )
    return qrels


def _empty_runs(inputs: Inputs) -> list[str]:
    """The run files that hold no line, where the profile's tool evaluates such a run
    (:attr:`qrelkit.measures.profiles.Profile.empty_run`); none elsewhere (the readers refuse them)."""
    if inputs.profile is None or inputs.profile.empty_run != "evaluate":
        return []
    from ..formats.inputs import is_blank

    return [str(p) for p in inputs.runs if isinstance(p, str | Path) and is_blank(p)]


def _plan(inputs: Inputs, need: str, folders: Sequence[str]) -> ReadingPlan:
    """The plan for files (see :func:`plan_reading`)."""
    conventions, measures, engine = inputs.conventions, inputs.measures, inputs.engine
    options, limit, diversity = inputs.reader, inputs.memory_limit, inputs.diversity
    depth = required_depth(measures, conventions)
    single = conventions.precision == "single" or any(
        m.conventions(conventions).precision == "single" for m in measures
    )
    if engine not in ("local", "spark", "trec_eval"):
        raise UsageError(f"no such engine: {engine!r}", expected="local or spark", fix="pass local or spark")
    if diversity and engine == "spark":
        raise UsageError("--diversity is evaluated by --engine local only", fix="drop --engine spark")
    if folders and engine != "spark":
        raise UsageError(
            f"a folder is read by --engine spark only: {folders[0]}", fix="pass files, or use --engine spark"
        )
    if need == "whole":
        return ReadingPlan("whole", ROUTES["whole"], options, None, None, single, "every row of every run")
    profile_refuses = bool(inputs.profile is not None and inputs.profile.refuses)
    if engine == "local" and _empty_runs(inputs):
        if limit is not None:
            raise _refuse_limit(
                f"an empty run file under --profile {conventions.profile}",
                "the runs are read whole beside it",
                "drop --memory-limit, or leave the empty run file out",
            )
        return ReadingPlan(
            "whole",
            ROUTES["whole"],
            options,
            None,
            None,
            single,
            f"an empty run file, which profile {conventions.profile} evaluates as its tool does",
        )
    if engine == "spark":
        if limit is not None:
            raise _refuse_limit(
                "--engine spark",
                "Spark's executors are bounded by spark.executor.memory",
                "drop --memory-limit and set spark.executor.memory (and spark.driver.memory for TREC files, "
                "which the driver reads)",
            )
        return ReadingPlan("spark", ROUTES["spark"], options, None, depth, single, "--engine spark")
    if engine == "trec_eval":
        if limit is not None:
            raise _refuse_limit(
                "qrelkit trec_eval", "it reads as trec_eval does, each file whole", "drop --memory-limit"
            )
        return ReadingPlan("trec_eval", ROUTES["trec_eval"], options, limit, None, False, "qrelkit trec_eval")
    if diversity:
        if limit is not None:
            raise _refuse_limit(
                "--diversity", "diversity judgments and each run are read whole", "drop --memory-limit"
            )
        return ReadingPlan(
            "diversity", ROUTES["diversity"], options, None, None, single, "diversity judgments"
        )
    if profile_refuses:
        if limit is not None:
            raise _refuse_limit(
                f"--profile {conventions.profile}",
                "its refusals look at every row, so each run is read whole",
                "drop --memory-limit, or evaluate under the profile's axes without its refusals "
                "(qrelkit conventions --list shows them)",
            )
        return ReadingPlan(
            "whole",
            ROUTES["whole"],
            options,
            None,
            None,
            single,
            f"the refusals of profile {conventions.profile} look at every row",
        )
    return ReadingPlan(
        "readers",
        ROUTES["readers"],
        options,
        limit,
        depth,
        single,
        "each run read as deep as the measures need" if depth is not None else "every row of each run",
    )


#: What a process evaluating under ``--memory-limit`` holds before it reads anything: the interpreter,
#: numpy, polars, pyarrow, DuckDB and qrelkit's readers (105 to 130 MB measured on Linux, CPython 3.11:
#: benchmarks/memory_limit.py).
FLOOR_BYTES = 128 << 20
#: Judgments cost about this many bytes of resident memory for each byte of their file once read (Arrow's
#: parse, polars' frame, the pages the allocator keeps; the readers' modules loaded on first use fall within
#: :data:`FLOOR_BYTES`' margin over the 97-104 MB measured): the peak of reading them over the measured floor
#: was 37 MB for 1.9 MB of judgments, 76 MB for 5.8 MB, 122 MB for 13.6 MB and 228 MB for 41 MB
#: (benchmarks/memory_limit.py), within the floor's margin and 8.5 times the text each; a gzip file is taken
#: as 5 times its stored size.
JUDGMENTS_FACTOR = 8.5

#: Bytes of memory per byte of a run file in a format the memory limit does not stream (read whole by its
#: format's reader): measured on a 6.8M-line run as the peak over the floor and the judgments, JSONL 3.7,
#: CSV 7.8 and Parquet 15 (of its compressed size), each taken with a margin.
WHOLE_FORMAT_FACTORS = {"jsonl": 4.5, "csv": 9.0, "tsv": 9.0, "parquet": 18.0}


#: Bytes of memory per byte of a run's text when the run is read whole (measured on a 7M-line run).
IN_MEMORY_FACTOR = 8


def smallest_limit(qrels_path: str | Path, sorted_on_disk: bool = False) -> tuple[int, int]:
    """(the smallest ``--memory-limit`` an evaluation of ``qrels_path`` can hold, the judgments' share of
    it): :data:`FLOOR_BYTES`, the judgments at :data:`JUDGMENTS_FACTOR` times their text, and the least a
    run is read in: streamed (:data:`qrelkit.formats.external.MIN_RUN_BYTES`) or, ``sorted_on_disk``, by
    DuckDB (:data:`qrelkit.formats.external.DUCKDB_RUN_BYTES`)."""
    from ..formats.external import DUCKDB_RUN_BYTES, MIN_RUN_BYTES

    share = judgments_share(judgments_bytes(qrels_path))
    return FLOOR_BYTES + share + (DUCKDB_RUN_BYTES if sorted_on_disk else MIN_RUN_BYTES), share


def judgments_share(text: int) -> int:
    """The resident memory judgments of ``text`` bytes hold once read: :data:`JUDGMENTS_FACTOR` times the
    text."""
    return int(JUDGMENTS_FACTOR * text)


def whole_format(path: str | Path, input_format: str) -> str | None:
    """The format of a run file that a memory limit cannot stream (its format's reader reads it whole): JSONL,
    CSV, TSV or Parquet, given or by suffix; ``None`` for TREC text."""
    from ..formats import detect_format

    fmt = detect_format(Path(path)) if input_format == "auto" else input_format
    return fmt if fmt in WHOLE_FORMAT_FACTORS else None


def bounds_refused(
    *, engine: str = "local", diversity: bool = False, memory_limit: Any = None, human: bool = False
) -> dict[str, bool]:
    """The options the judgment bounds do not go with, each with whether it was given: the bounds read each
    run whole and bound the means of judgments in this process (not on Spark, not of diversity judgments,
    not under a memory limit, not of estimates)."""
    return {"--engine spark": engine != "local", "--diversity": diversity,
            "--memory-limit": memory_limit is not None, "--human": human}  # fmt: skip


def fits_whole(text_bytes: int, limit: int | None, held: int) -> bool:
    """The one formula for "does a run fit in memory": held whole, a run costs :data:`IN_MEMORY_FACTOR`
    bytes of memory per byte of its text (columns, join, sort), on top of ``held``, what the process holds
    besides it; it fits when that stays within ``limit`` (always, without one). At planning time ``held``
    is the floor and the judgments' share (:func:`sorted_on_disk`); when a run is read it is the process's
    resident memory then (:class:`RunReader`)."""
    return limit is None or held + IN_MEMORY_FACTOR * text_bytes <= limit


def sorted_on_disk(plan: ReadingPlan, run_paths: Sequence[str | Path], qrels_path: str | Path) -> bool:
    """Whether a run of ``run_paths`` will be sorted on disk by DuckDB under ``plan``'s memory limit: the
    measures need every row and, held whole beside the interpreter and the judgments, the run would pass
    the limit (:func:`fits_whole`)."""
    from ..formats.trec.common import text_bytes

    if plan.memory_limit is None or plan.route != "readers" or plan.depth is not None:
        return False
    held = FLOOR_BYTES + smallest_limit(qrels_path)[1]
    fmt = plan.options.input_format
    return any(
        whole_format(p, fmt) is None and not fits_whole(text_bytes(p), plan.memory_limit, held)
        for p in run_paths
    )


def judgments_bytes(qrels: str | Path) -> int:
    """The bytes of text the judgments are read from: the file's, or those of the files ir_datasets reads
    for a dataset name (:func:`qrelkit.formats.irds.dataset_files`)."""
    from ..formats import is_dataset
    from ..formats.trec.common import text_bytes

    if is_dataset(qrels):
        from ..formats.irds import dataset_files

        return sum(text_bytes(p) for p in dataset_files(str(qrels)))
    return text_bytes(qrels)


def check_limit(plan: ReadingPlan, qrels_path: str | Path, run_paths: Sequence[str | Path] = ()) -> None:
    """Refuse a memory limit below :func:`smallest_limit` for the plan's route: the process would pass it
    (a :class:`~qrelkit.errors.UsageError`, with the route, the smallest limit and what it is made of)."""
    from ..formats.external import DUCKDB_OVERHEAD_BYTES, MIN_RUN_BYTES

    limit = plan.memory_limit
    if limit is None:
        return
    on_disk = sorted_on_disk(plan, run_paths, qrels_path)
    smallest, share = smallest_limit(qrels_path, on_disk)
    if plan.route == "readers":
        check_whole_formats(limit, FLOOR_BYTES + share, plan.options.input_format, run_paths)
    if limit < smallest:
        mb = 1_000_000
        run = (
            f"a run sorted on disk by DuckDB, as a measure needs every row, at least "
            f"{(MIN_RUN_BYTES + DUCKDB_OVERHEAD_BYTES) / mb:.0f} MB"
            if on_disk
            else f"reading a run at least {MIN_RUN_BYTES / mb:.0f} MB"
        )
        raise UsageError(
            f"--memory-limit {limit / mb:.0f}MB cannot hold this evaluation: the smallest limit that can is "
            f"{smallest / mb:.0f}MB (the interpreter and the readers' libraries {FLOOR_BYTES / mb:.0f} MB, "
            f"the judgments {share / mb:.0f} MB, {run})",
            fix=f"give --memory-limit {-(-smallest // (10 * mb)) * 10}MB or more"
            + (", or measures with a cutoff (nDCG@10), which stream" if on_disk else ""),
        )


def check_whole_formats(limit: int, held: int, input_format: str, run_paths: Sequence[str | Path]) -> None:
    """Refuse a memory limit a run in a format read whole (:func:`whole_format`) would pass, held beside
    ``held`` at :data:`WHOLE_FORMAT_FACTORS` times its file, with the smallest limit that holds it."""
    from ..formats.trec.common import text_bytes

    mb = 1_000_000
    for path in run_paths:
        fmt = whole_format(path, input_format)
        if fmt is None:
            continue
        need = held + int(WHOLE_FORMAT_FACTORS[fmt] * text_bytes(path))
        if need > limit:
            raise UsageError(
                f"--memory-limit {limit / mb:.0f}MB cannot hold {path}: a {fmt.upper()} run is read whole, "
                f"about {WHOLE_FORMAT_FACTORS[fmt]:g} times its {text_bytes(path) / mb:.0f} MB, beside the "
                f"interpreter and the judgments (the smallest limit that holds it is {need / mb:.0f}MB); only "
                "TREC text is streamed under a limit",
                fix=f"give --memory-limit {-(-need // (10 * mb)) * 10}MB or more, or convert the run to TREC "
                "text (query_id Q0 doc_id rank score tag)",
            )


def parse_limit(memory_limit: int | str | None) -> int | None:
    """A memory limit in bytes: an int as given, a size such as ``"2GB"`` parsed, ``None`` for none."""
    if isinstance(memory_limit, str):
        from ..formats.external import parse_size

        return parse_size(memory_limit)
    return memory_limit


# --------------------------------------------------------------------------------------- executing the plan


def read_judgments(plan: ReadingPlan, path: str | Path | None = None) -> Qrels:
    """The judgments (``path``, else the plan's inputs' judgments), read whole with the plan's reader
    options, carrying the rubric's hash when one was given."""
    from ..formats import read_qrels

    options = plan.options
    if path is None:
        assert plan.inputs is not None
        path = plan.inputs.qrels
    # input_format and on_duplicate are checked by the reader (one of FORMAT_CHOICES/ON_DUPLICATE_CHOICES)
    qrels = read_qrels(path, format=options.input_format, scale=options.scale, on_duplicate=plan.on_duplicate,
                       comments=plan.comments)  # fmt: skip
    if options.rubric_hash is not None:
        qrels = qrels.replace(rubric_hash=options.rubric_hash)
    return qrels


def read_runs_whole(plan: ReadingPlan) -> list[Run]:
    """Each of the plan's inputs' runs read whole by the readers of steps 2-4 of :mod:`qrelkit.formats.trec`
    (which check the input format and the duplicate rule)."""
    from ..formats import read_run

    assert plan.inputs is not None
    fmt, rule, comments = plan.options.input_format, plan.on_duplicate, plan.comments
    empty = set(_empty_runs(plan.inputs))
    return [
        _empty_run(p) if str(p) in empty else read_run(p, format=fmt, on_duplicate=rule, comments=comments)
        for p in plan.inputs.runs
    ]


def _empty_run(path: str | Path) -> Run:
    """A run file that holds no line, as the run that returned nothing (named by its file, as a run with
    no tag is; its fingerprint that of its bytes)."""
    import hashlib

    import polars as pl

    from ..data.values import run_from_frame
    from ..fingerprint import Fingerprint

    p = Path(path)
    frame = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})
    run = run_from_frame(frame, name=p.stem, source=str(p))
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    return run.replace(
        fingerprint=Fingerprint(digest, "file-bytes", str(p)), meta={**run.meta, "empty_file": True}
    )


def whole_plan(
    qrels: Any, runs: Sequence[Any], conventions: Conventions, reader: ReaderOptions | None = None
) -> ReadingPlan:
    """The plan for reading ``qrels`` and ``runs`` whole, every row (:func:`plan_reading` with
    ``need="whole"``), with ``reader``'s options, those unset taken from ``conventions``' profile."""
    return plan_reading(Inputs.build(qrels, runs, (), conventions, reader), need="whole")


def read_whole(plan: ReadingPlan) -> tuple[Qrels, list[Run]]:
    """The judgments and every run read whole, for work that needs every row of every run (compare's noise
    floor and estimates, the report, explain, the conventions sweep, the judgment bounds)."""
    return read_judgments(plan), read_runs_whole(plan)


@dataclass(frozen=True)
class Batches:
    """A run sorted on disk by DuckDB, read in batches of whole queries (:func:`qrelkit.formats.external.run_batches`)."""

    batches: Any
    fingerprint: Any
    name: str
    meta: dict[str, Any]


@dataclass
class RunState:
    """What the readers of one run's chain know of it and tell each other: the file, its TREC-ness, whether
    held whole it would pass the memory limit (``big``), the bytes counter, whether the native scanner may
    be tried, and why the run goes to DuckDB (``external``) once a reader has found that it must."""

    path: Path
    trec: bool
    big: bool
    on_bytes: Callable[[int], None] | None
    native: bool
    external: str | None = None

    def how(self, plan: ReadingPlan) -> dict[str, Any]:
        """What every reader is told: the duplicate rule, the depth the measures need, the precision of the
        scores ranked, comment lines."""
        return {"on_duplicate": plan.on_duplicate, "keep_top": plan.depth, "rank_single": plan.rank_single,
                "comments": plan.comments}  # fmt: skip


class RunReader:
    """One reader of a run on the ``readers`` route: :meth:`accepts` says whether it takes the run as the
    readers before it left it, :meth:`read` reads it (a :class:`~qrelkit.data.values.Run` or
    :class:`Batches`) or steps aside with ``None``."""

    name = ""

    def accepts(self, state: RunState, plan: ReadingPlan) -> bool:
        raise NotImplementedError

    def read(self, state: RunState, plan: ReadingPlan) -> Run | Batches | None:
        raise NotImplementedError


class _Streaming(RunReader):
    """Steps 2-3 (the native scanner, then Arrow's parse): a run too big to hold whole when the measures
    have a depth, or a TREC file that fits. A run not grouped by query whose every row is needed goes to
    DuckDB (held whole by the streaming reader without it); a duplicate rule other than ``error`` on a run
    past the small path's size is applied by DuckDB on disk."""

    name = "streaming"

    def accepts(self, state: RunState, plan: ReadingPlan) -> bool:
        if state.big:  # TREC text only: another format is its reader's, held whole (check_whole_formats)
            return state.trec and plan.depth is not None
        return state.trec and state.path.is_file()

    def read(self, state: RunState, plan: ReadingPlan) -> Run | None:
        from ..errors import Ungrouped
        from ..formats import read_run_streaming
        from ..formats.trec.small import SMALL_FILE_BYTES

        how, path = state.how(plan), state.path
        if state.big:
            return read_run_streaming(path, on_bytes=state.on_bytes, native=state.native, **how)
        try:
            run = read_run_streaming(path, on_bytes=state.on_bytes, grouped_only=plan.depth is None,
                                     native=state.native, **how)  # fmt: skip
        except Ungrouped:
            if find_spec("duckdb") is not None:
                state.external = "a measure needs every document and the lines are not grouped by query"
                return None
            # without the optional DuckDB (qrelkit[scale]) the run is held whole by the streaming reader
            return read_run_streaming(path, on_bytes=state.on_bytes, **how)
        if (
            run is None
            and plan.on_duplicate != "error"
            and path.stat().st_size > SMALL_FILE_BYTES
            and find_spec("duckdb") is not None
        ):  # a document given twice, perhaps: the policy is applied on disk rather than holding the run
            state.external = (
                f"documents given twice are resolved on disk (--on-duplicate {plan.on_duplicate})"
            )
        return run


class _SortedOnDisk(RunReader):
    """DuckDB (:func:`qrelkit.formats.external.run_batches`): a run too big to hold whole that did not
    stream, or one a reader before sent here; a layout only the robust reader takes steps aside to it,
    unless the run is too big to hold."""

    name = "duckdb"

    def accepts(self, state: RunState, plan: ReadingPlan) -> bool:
        if not state.trec:  # DuckDB reads TREC text; another format is its reader's (check_whole_formats)
            return False
        if state.big and state.external is None:
            state.external = "the file would not fit under the memory limit"
        return state.external is not None

    def read(self, state: RunState, plan: ReadingPlan) -> Batches | None:
        from ..formats.external import LayoutRefused, run_batches, sort_budget

        assert state.external is not None
        try:
            batches, fingerprint, name, meta = run_batches(
                state.path,
                memory_limit=plan.memory_limit or sort_budget(),
                on_duplicate=plan.on_duplicate,
                reason=state.external,
                on_bytes=state.on_bytes,
                comments=plan.comments,
            )
        except LayoutRefused:
            if state.big:
                raise  # held whole, the run would break the memory limit
            state.external = None
            return None  # a layout only the robust reader takes
        return Batches(batches, fingerprint, name, meta)


class _Robust(RunReader):
    """Step 4, the robust reader, which names the file, line, value and fix of what it refuses."""

    name = "robust"

    def accepts(self, state: RunState, plan: ReadingPlan) -> bool:
        return state.trec and state.path.is_file() and not state.big

    def read(self, state: RunState, plan: ReadingPlan) -> Run:
        from ..formats import read_run

        return read_run(state.path, reader="robust", **state.how(plan))


class _ByFormat(RunReader):
    """Anything else (JSONL, CSV, TSV, Parquet, gzip text that is not a file of its own): the reader of its
    format."""

    name = "format"

    def accepts(self, state: RunState, plan: ReadingPlan) -> bool:
        return True

    def read(self, state: RunState, plan: ReadingPlan) -> Run:
        from ..formats import read_run

        return read_run(
            state.path, format=plan.options.input_format, on_bytes=state.on_bytes, **state.how(plan)
        )


#: One run's readers on the ``readers`` route past the small path, in order.
RUN_CHAIN: tuple[RunReader, ...] = (_Streaming(), _SortedOnDisk(), _Robust(), _ByFormat())


def read_run_file(
    plan: ReadingPlan, path: Path, on_bytes: Callable[[int], None] | None = None, native: bool = True
) -> Run | Batches:
    """One run file on the ``readers`` route past the small path, by the plan's chain (:attr:`ReadingPlan.chain`):
    streamed, sorted on disk by DuckDB, or read by the robust reader or its format's, in the order
    :mod:`qrelkit.formats.trec` gives. ``on_bytes`` reports its bytes read; ``native=False``: the native
    scanner's pass at the plan's depth already stepped aside for this run
    (:class:`~qrelkit.formats.trec.small.ScannerRefused`), so streaming starts at Arrow's."""
    from ..formats import detect_format
    from ..formats.external import process_bytes
    from ..formats.trec.common import text_bytes

    fmt = plan.options.input_format
    trec = detect_format(path) == "trec" if fmt == "auto" else fmt == "trec"
    big = path.is_file() and not fits_whole(text_bytes(path), plan.memory_limit,
                                            process_bytes() if plan.memory_limit is not None else 0)  # fmt: skip
    state = RunState(path, trec, big, on_bytes, native)
    for reader in plan.chain:
        if reader.accepts(state, plan):
            got = reader.read(state, plan)
            if got is not None:
                return got
    raise AssertionError("the last reader of a run's chain accepts every run")  # pragma: no cover


def small_runs(plan: ReadingPlan, qrels_path: Path, run_paths: Sequence[Path]) -> set[Path] | None:
    """Whether the small path (step 1 of :mod:`qrelkit.formats.trec`) takes these files, and which runs it
    reads whole (the others to the plan's depth by the native scanner): ``None`` when it is not tried
    (not on the plan, judgments or a run it cannot read, a run too big to hold whole with a measure
    without a cutoff)."""
    from ..formats.trec.small import eligible, readable

    fmt = plan.options.input_format
    if "small" not in plan.readers or not run_paths or not eligible([qrels_path], fmt):
        return None

    def fits(path: Path) -> bool:
        if plan.memory_limit is None or not path.is_file():
            return True
        from ..formats.external import process_bytes
        from ..formats.trec.common import text_bytes

        return fits_whole(text_bytes(path), plan.memory_limit, process_bytes())

    whole = {p for p in run_paths if eligible([p], fmt) and fits(p)}
    to_depth = plan.depth is not None and "native" in plan.readers  # the rest read to the depth
    if len(whole) < len(run_paths) and not (to_depth and readable(run_paths, fmt)):
        return None
    return whole
