"""How a set of files is read: one decision, made here, recorded in the provenance.

:func:`plan_reading` is the one function that decides how an evaluation reads its inputs, for every entry
point (:func:`qrelkit.evaluation.files.evaluate_files`, :func:`qrelkit.evaluation.files.evaluate_inputs`
behind ``qrelkit eval``, :func:`qrelkit.evaluation.spark.evaluate`, ``qrelkit trec_eval``): which route
the files take, the readers tried on it in order, the reader options, and the memory limit. It returns a
plain :class:`ReadingPlan`, written into every result's provenance (``reading``). A limit that a route
cannot honour is refused with the reason, never ignored.

The reader options a profile carries (its duplicate rule and whether lines beginning with ``#`` are
skipped) are resolved here too (:func:`reader_options`), so the API, the command line and Spark read the
same inputs the same way under the same profile.

The routes:

* ``readers``: the order of :mod:`qrelkit.formats.trec` (``small``, then ``native`` and ``arrow``
  streaming, then ``robust``; ``duckdb`` for a run sorted on disk), each run read only as deep as the
  measures need;
* ``whole``: a profile whose refusals look at every row (gdeval, sklearn, ...): each run read whole by
  the readers of steps 2-4;
* ``diversity``: diversity judgments by their one reader, each run read whole;
* ``spark``: Spark (:mod:`qrelkit.evaluation.spark`): TREC files read on the driver by the readers of
  steps 2-4, Parquet and tables by Spark;
* ``trec_eval``: ``qrelkit trec_eval``'s fast path (:mod:`qrelkit.evaluation.trec_fast`), stepping aside
  to the readers of steps 2-4.

Judgments named by dataset (``irds:ID``, :mod:`qrelkit.formats.irds`) are a value, not a file: they are
read whole by their resolver, the small path (which reads judgments as a file) is left out of the
``readers`` route, and ``--diversity`` and Spark refuse them; the plan records the name as ``judgments``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._typing import ON_DUPLICATE_CHOICES
from ..errors import UsageError
from ..measures.conventions import Conventions
from ..measures.grammar import Measure, required_depth

#: The readers each route tries, in order (the names are those of :mod:`qrelkit.formats.trec`).
ROUTES: dict[str, tuple[str, ...]] = {
    "readers": ("small", "native", "arrow", "robust", "duckdb"),
    "whole": ("native", "arrow", "robust"),
    "diversity": ("diversity", "native", "arrow", "robust"),
    "spark": ("native", "arrow", "robust", "parquet", "table"),
    "trec_eval": ("trec_fast", "native", "arrow", "robust"),
}


@dataclass(frozen=True)
class ReaderOptions:
    """What every reader of an evaluation is told, and where each choice came from."""

    on_duplicate: str
    comments: bool
    source: tuple[tuple[str, str], ...]  # (option, "given" | "profile NAME" | "default")

    def to_dict(self) -> dict[str, Any]:
        return {"on_duplicate": self.on_duplicate, "comments": self.comments, "from": dict(self.source)}


def reader_options(
    conventions: Conventions, on_duplicate: str | None = None, comments: bool | None = None
) -> ReaderOptions:
    """The reader options: each one given wins, else the profile's (``--profile trec_eval`` skips lines
    beginning with ``#`` as trec_eval 10 does; a profile whose tool keeps the last line of a document given
    twice keeps it too), else the default (a document given twice is an error; no line is a comment)."""
    profile = None
    if conventions.profile is not None:
        from ..measures.profiles import get_profile

        profile = get_profile(conventions.profile)
    label = f"profile {conventions.profile}"
    source = []
    if on_duplicate is None:
        on_duplicate = profile.on_duplicate if profile is not None else "error"
        source.append(("on_duplicate", label if profile is not None else "default"))
    else:
        source.append(("on_duplicate", "given"))
    if on_duplicate not in ON_DUPLICATE_CHOICES:
        from ..data.values import check_choice

        check_choice(on_duplicate, ON_DUPLICATE_CHOICES, "on_duplicate")
    if comments is None:
        comments = bool(profile is not None and profile.comments)
        source.append(("comments", label if profile is not None else "default"))
    else:
        source.append(("comments", "given"))
    return ReaderOptions(on_duplicate, bool(comments), tuple(source))


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

    @property
    def on_duplicate(self) -> str:
        return self.options.on_duplicate

    @property
    def comments(self) -> bool:
        return self.options.comments

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


def plan_reading(
    conventions: Conventions,
    measures: Sequence[Measure],
    *,
    engine: str = "local",
    memory_limit: int | str | None = None,
    diversity: bool = False,
    on_duplicate: str | None = None,
    comments: bool | None = None,
    folders: Sequence[str] = (),
    qrels: str | Path | None = None,
) -> ReadingPlan:
    """The plan for reading an evaluation's files.

    ``engine`` is ``local``, ``spark`` or ``trec_eval``; ``folders`` the inputs that are folders (read by
    Spark only); ``qrels`` the judgments' path or dataset name (``irds:ID``). Raises
    :class:`~qrelkit.errors.UsageError` for what cannot be honoured: a memory limit on a route that reads
    runs whole or off this process, diversity judgments on Spark, a folder locally, a dataset name as
    diversity judgments or on Spark.
    """
    named = _dataset_name(qrels, engine, diversity)
    plan = _plan(conventions, measures, engine, memory_limit, diversity, on_duplicate, comments, folders)
    if named is None:
        return plan
    from dataclasses import replace

    if plan.route != "readers":
        return replace(plan, judgments=named)
    return replace(
        plan,
        readers=tuple(r for r in plan.readers if r != "small"),
        judgments=named,
        reason=f"{plan.reason}; judgments {named} read whole by name",
    )


def _dataset_name(qrels: str | Path | None, engine: str, diversity: bool) -> str | None:
    """``qrels`` when it names a dataset (``irds:ID``) on a route that reads one, else ``None``."""
    if not isinstance(qrels, str):
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


def _plan(
    conventions: Conventions,
    measures: Sequence[Measure],
    engine: str,
    memory_limit: int | str | None,
    diversity: bool,
    on_duplicate: str | None,
    comments: bool | None,
    folders: Sequence[str],
) -> ReadingPlan:
    """The plan for files (see :func:`plan_reading`)."""
    options = reader_options(conventions, on_duplicate, comments)
    limit = parse_limit(memory_limit)
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
    profile_refuses = False
    if conventions.profile is not None:
        from ..measures.profiles import get_profile

        profile_refuses = bool(get_profile(conventions.profile).refuses)
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
#: parse, polars' frame, the pages the allocator keeps and the readers' modules loaded on first use: 51 to
#: 109 MB for a 6.2 MB file of 320,401 judgments, benchmarks/memory_limit.py, the larger taken); a gzip
#: file is taken as 5 times its stored size.
JUDGMENTS_FACTOR = 18


#: Bytes of memory per byte of a run's text when the run is read whole (measured on a 7M-line run).
IN_MEMORY_FACTOR = 8


def smallest_limit(qrels_path: str | Path, sorted_on_disk: bool = False) -> tuple[int, int]:
    """(the smallest ``--memory-limit`` an evaluation of ``qrels_path`` can hold, the judgments' share of
    it): :data:`FLOOR_BYTES`, the judgments at :data:`JUDGMENTS_FACTOR` times their text, and the least a
    run is read in: streamed (:data:`qrelkit.formats.external.MIN_RUN_BYTES`) or, ``sorted_on_disk``, by
    DuckDB (:data:`qrelkit.formats.external.DUCKDB_RUN_BYTES`)."""
    from ..formats.external import DUCKDB_RUN_BYTES, MIN_RUN_BYTES

    share = JUDGMENTS_FACTOR * judgments_bytes(qrels_path)
    return FLOOR_BYTES + share + (DUCKDB_RUN_BYTES if sorted_on_disk else MIN_RUN_BYTES), share


def sorted_on_disk(plan: ReadingPlan, run_paths: Sequence[str | Path], qrels_path: str | Path) -> bool:
    """Whether a run of ``run_paths`` will be sorted on disk by DuckDB under ``plan``'s memory limit: the
    measures need every row and, held whole (:data:`IN_MEMORY_FACTOR` bytes a byte of its text) beside
    the interpreter and the judgments, the run would pass the limit."""
    from ..formats.trec.common import text_bytes

    if plan.memory_limit is None or plan.route != "readers" or plan.depth is not None:
        return False
    held = FLOOR_BYTES + smallest_limit(qrels_path)[1]
    return any(held + IN_MEMORY_FACTOR * text_bytes(p) > plan.memory_limit for p in run_paths)


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


def parse_limit(memory_limit: int | str | None) -> int | None:
    """A memory limit in bytes: an int as given, a size such as ``"2GB"`` parsed, ``None`` for none."""
    if isinstance(memory_limit, str):
        from ..formats.external import parse_size

        return parse_size(memory_limit)
    return memory_limit
