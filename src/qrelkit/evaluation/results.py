"""Results: per-query values, means, query-set accounting and provenance, as one value.

A :class:`Results` never computes a measure; it holds what :func:`qrelkit.evaluate` computed and knows how
to aggregate it (means over the queries where a value is defined) and how to describe where it came from.
Renderers live in :mod:`qrelkit.report`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..engine.encoding.encoded import QuerySet
from ..errors import IncomparableError, QueryNotFoundError, ValidationError, did_you_mean
from ..fingerprint import Fingerprint
from ..measures.conventions import Conventions
from ..measures.grammar import COUNT_MEASURES, Measure, parse


def numeric_order(query_ids: Sequence[str]) -> list[int]:
    """The positions of ``query_ids`` in the numeric order of the ids: those that are whole numbers (ASCII
    digits) by their value (equal values by text), then the others by text."""

    def key(i: int) -> tuple[int, int, str]:
        q = query_ids[i]
        return (0, int(q), q) if q.isascii() and q.isdigit() else (1, 0, q)

    return sorted(range(len(query_ids)), key=key)


def run_order(query_ids: Sequence[str], first_given: Sequence[str]) -> list[int]:
    """The positions of ``query_ids`` with the queries of ``first_given`` (the run's order of first
    appearance) first, in that order, then the others (judged queries the run lacks) by text."""
    at = {q: i for i, q in enumerate(query_ids)}
    head = [at[q] for q in first_given if q in at]
    taken = set(head)
    return head + sorted((i for i in range(len(query_ids)) if i not in taken), key=lambda i: query_ids[i])


def summed(
    query_ids: Sequence[str],
    values: Sequence[float],
    summation: str = "exact",
    first_given: Sequence[str] = (),
) -> float:
    """The sum of the defined (not NaN) ``values``, one per query of ``query_ids``, under the
    ``summation`` convention: ``exact``, correctly rounded (``math.fsum``); else added left to right from
    0.0, as ir_measures' ``MeanAgg`` adds its providers' values: ``numeric_order`` in :func:`numeric_order`
    (gdeval.pl's topics), ``run_order`` in :func:`run_order` of ``first_given`` (its pytrec_eval, judged
    and MS MARCO providers: the run's queries in the order the run gives them, then the judged queries the
    run lacks by id); ``numpy``, numpy's ``np.sum`` (pairwise) over the queries by id as text (ranx's
    ``np.mean``)."""
    if summation == "exact":
        return math.fsum(v for v in values if not math.isnan(v))
    if summation == "numpy":
        order = sorted(range(len(query_ids)), key=lambda i: query_ids[i])
        return float(
            np.sum(np.array([values[i] for i in order if not math.isnan(values[i])], dtype=np.float64))
        )
    if summation == "numeric_order":
        order = numeric_order(query_ids)
    else:
        order = run_order(query_ids, first_given)
    total = 0.0
    for i in order:
        if not math.isnan(values[i]):
            total += values[i]
    return total


@dataclass(frozen=True)
class RunSummary:
    name: str
    fingerprint: Fingerprint
    meta: dict[str, Any]
    queries: QuerySet
    undefined: dict[str, int]  # measure -> queries where it was undefined (no relevant documents)
    values: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # measure -> one per query

    def to_dict(self, conventions: Conventions) -> dict[str, Any]:
        counts = self.queries.counts()
        policy = {
            "zero": "scored 0",
            "skip": "skipped",
            "skip_unretrieved": "skipped (also where nothing relevant was retrieved)",
            "one": "scored 1",
        }[conventions.no_relevant]
        return {
            "name": self.name,
            "fingerprint": self.fingerprint.to_dict(),
            "duplicates_removed": self.meta.get("duplicates_removed", 0),
            "on_duplicate": self.meta.get("on_duplicate", "error"),
            "lines_with_trailing_fields_ignored": self.meta.get("lines_with_trailing_fields_ignored", 0),
            # how the run was read: small (numpy alone, small clean files), fast (streaming), robust (the
            # reader that takes every layout), duckdb (sorted on disk; sorted_on_disk says why);
            # kept_top: only each query's top k rows (and the tied block at k) were kept, all the measures need
            "reader": self.meta.get("reader", "robust"),
            "sorted_on_disk": self.meta.get("sorted_on_disk"),
            "kept_top": self.meta.get("kept_top"),
            "query_sets": {
                **counts,
                "missing_from_run": self.queries.missing_scored_zero + self.queries.missing_skipped,
                "absent_from_qrels": self.queries.extra_skipped,
            },
            "no_relevant": {"policy": policy, "queries_per_measure": self.undefined},
        }


@dataclass(frozen=True)
class Results:
    """What an evaluation produced: per run, each measure's value for every scored query (in
    ``RunSummary.values``, in the order of ``RunSummary.queries.query_ids``), with the provenance.

    ``per_query`` and ``summary`` give the same numbers as polars frames, built on first use."""

    measures: tuple[Measure, ...]
    conventions: Conventions
    qrels_name: str
    qrels_fingerprint: Fingerprint
    qrels_meta: dict[str, Any]
    rubric_hash: str | None
    runs: tuple[RunSummary, ...]
    version: str = ""
    judgments: dict[str, Any] | None = None
    """What the judgments mean, from the qrels' manifest (:func:`qrelkit.judgments.manifest.judgments_meaning`):
    rubric, scale, calibration kappa and gate, unresolved pairs; ``None`` without a manifest."""
    profile_warnings: tuple[str, ...] = ()
    """Where the profile's tool would have stopped instead of giving these numbers
    (:meth:`qrelkit.measures.profiles.Profile.stop_warnings`)."""
    tie_warnings: tuple[str, ...] = ()
    """Where the profile's tool takes a measure's value from the order its sort leaves tied scores in, one
    per measure (:func:`qrelkit.engine.tie_order.tie_warnings`); never refused by ``strict``."""
    reading: dict[str, Any] | None = None
    """How the files were read (:meth:`qrelkit.evaluation.plan.ReadingPlan.to_dict`); ``None`` for values
    evaluated in memory."""
    bounds: Any = None
    """How far the missing judgments could move each mean (:class:`qrelkit.evaluation.bounds.Bounds`), when
    they were computed; ``None`` otherwise."""

    # -- aggregation ---------------------------------------------------------------------------------------

    @property
    def run_names(self) -> list[str]:
        return [r.name for r in self.runs]

    @property
    def measure_names(self) -> list[str]:
        return [str(m) for m in self.measures]

    def _measure_name(self, measure: str | Measure) -> str:
        name = str(parse(measure))
        if name not in self.measure_names:
            raise QueryNotFoundError(
                f"measure {name} was not computed{did_you_mean(name, self.measure_names)}",
                expected="one of " + ", ".join(self.measure_names),
            )
        return name

    def _run(self, run: str | None) -> RunSummary:
        if run is None:
            if len(self.runs) != 1:
                raise QueryNotFoundError(
                    "several runs were evaluated: name one", expected="one of " + ", ".join(self.run_names)
                )
            return self.runs[0]
        for summary in self.runs:
            if summary.name == run:
                return summary
        raise QueryNotFoundError(
            f"no run named {run!r}{did_you_mean(run, self.run_names)}",
            expected="one of " + ", ".join(self.run_names),
        )

    def _aggregate(
        self, run: RunSummary, values: list[float], measure: str | None = None
    ) -> tuple[float, int]:
        """(mean, number of queries in it) under the ``mean`` convention.

        ``defined``: the mean over the queries with a value. ``run_queries``: the sum of the defined values
        over the number of distinct queries in the run, judged or not (trectools' mean). A measure with
        ``summary=gmean`` (trec_eval's gm_map, gm_bpref) takes the geometric mean of its values, each floored
        at 0.00001, over the same queries. Count measures under ``counts = "sum"``: the sum of the defined
        values. The sum follows the measure's ``summation`` (:func:`summed`)."""
        defined = [v for v in values if not math.isnan(v)]
        spec = next((m for m in self.measures if str(m) == measure), None)
        summation = spec.conventions(self.conventions).summation if spec is not None else "exact"

        def total() -> float:
            return summed(run.queries.query_ids, values, summation, run.queries.run_order)

        if measure is not None and self.conventions.counts == "sum" and parse(measure).name in COUNT_MEASURES:
            return total(), len(defined)
        if spec is not None and dict(spec.params).get("summary") == "gmean":
            logs = [math.log(max(v, 0.00001)) for v in defined]
            denominator = len(defined)
            if getattr(self.conventions, "mean", "defined") == "run_queries":
                counts = run.queries.counts()
                denominator = counts["scored"] + counts["absent_from_qrels_skipped"]
                logs += [math.log(0.00001)] * (denominator - len(defined))
            return (math.exp(math.fsum(logs) / denominator) if denominator else float("nan")), denominator
        if getattr(self.conventions, "mean", "defined") == "run_queries":
            counts = run.queries.counts()
            denominator = counts["scored"] + counts["absent_from_qrels_skipped"]
            return (total() / denominator if denominator else float("nan")), denominator
        return (total() / len(defined) if defined else float("nan")), len(defined)

    def summary_rows(self) -> list[dict[str, Any]]:
        """Means per run and measure (see the ``mean`` convention), with the query count behind each:
        dicts with run, measure, mean, queries, undefined_skipped, runs and measures in their order."""
        rows = []
        for run in self.runs:
            for measure in self.measure_names:
                values = run.values[measure].tolist()
                mean, n = self._aggregate(run, values, measure)
                undefined = sum(1 for v in values if math.isnan(v))
                rows.append(
                    {
                        "run": run.name,
                        "measure": measure,
                        "mean": mean,
                        "queries": n,
                        "undefined_skipped": undefined,
                    }
                )
        return rows

    def rows(self, by_run_name: bool = False) -> Iterator[tuple[str, str, str, float]]:
        """Per-query values as (run, query_id, measure, value): runs in their order (or by name), queries
        sorted, measures in their order."""
        runs = sorted(self.runs, key=lambda r: r.name) if by_run_name else self.runs
        names = self.measure_names
        for run in runs:
            columns = [run.values[m].tolist() for m in names]
            for i, qid in enumerate(run.queries.query_ids):
                for measure, column in zip(names, columns, strict=True):
                    yield run.name, qid, measure, column[i]

    @cached_property
    def summary(self) -> Any:
        """:meth:`summary_rows` as a polars DataFrame."""
        import polars as pl

        schema = {
            "run": pl.String,
            "measure": pl.String,
            "mean": pl.Float64,
            "queries": pl.Int64,
            "undefined_skipped": pl.Int64,
        }
        return pl.DataFrame(self.summary_rows(), schema=schema)

    @cached_property
    def per_query(self) -> Any:
        """Per-query values as a polars DataFrame with columns run, query_id, measure, value (long form)."""
        import polars as pl

        frames = [
            pl.DataFrame(
                {
                    "run": pl.Series([run.name] * len(run.queries.query_ids), dtype=pl.String),
                    "query_id": pl.Series(run.queries.query_ids, dtype=pl.String),
                    "measure": pl.Series([measure] * len(run.queries.query_ids), dtype=pl.String),
                    "value": pl.Series(run.values[measure], dtype=pl.Float64),
                }
            )
            for run in self.runs
            for measure in self.measure_names
        ]
        schema = {"run": pl.String, "query_id": pl.String, "measure": pl.String, "value": pl.Float64}
        return pl.concat(frames) if frames else pl.DataFrame(schema=schema)

    def mean(self, measure: str | Measure, run: str | None = None) -> float:
        """The mean of one measure for one run (the only run when there is one)."""
        name, summary = self._measure_name(measure), self._run(run)
        return self._aggregate(summary, summary.values[name].tolist(), name)[0]

    def values(self, measure: str | Measure, run: str | None = None) -> dict[str, float]:
        """Per-query values ``{query_id: value}`` of one measure for one run."""
        name, summary = self._measure_name(measure), self._run(run)
        return dict(zip(summary.queries.query_ids, summary.values[name].tolist(), strict=True))

    def value(self, measure: str | Measure, query_id: str, run: str | None = None) -> float:
        values = self.values(measure, run)
        if query_id not in values:
            raise QueryNotFoundError(
                f"query {query_id!r} was not scored{did_you_mean(query_id, list(values))}",
                fix="check the query id; queries absent from the judgments are not scored",
            )
        return values[query_id]

    # -- provenance ----------------------------------------------------------------------------------------

    def provenance(self) -> dict[str, Any]:
        """Everything needed to know what the numbers mean and to recompute them."""
        from ..provenance import header

        out = header(
            conventions=self.conventions.to_dict(),
            measures=[{"name": str(m), "full": m.describe(self.conventions)} for m in self.measures],
            qrels={
                "name": self.qrels_name,
                "fingerprint": self.qrels_fingerprint.to_dict(),
                "rubric_hash": self.rubric_hash,
                "negative_grades": self.conventions.negative,
                # diversity judgments (query_id subtopic doc_id grade) are named as such
                **({"kind": "diversity"} if self.qrels_meta.get("kind") == "diversity" else {}),
                # judgments named by dataset (irds:ID): the id, ir_datasets' version, the files read
                **({"dataset": self.qrels_meta["dataset"]} if "dataset" in self.qrels_meta else {}),
            },
            judgments=self.judgments,
            runs=[r.to_dict(self.conventions) for r in self.runs],
        )
        if self.profile_warnings:
            out["profile_warnings"] = list(self.profile_warnings)
        if self.tie_warnings:
            out["tie_warnings"] = list(self.tie_warnings)
        if self.reading is not None:
            out["reading"] = self.reading
        return out

    def check_strict(self) -> None:
        """Refuse what the profile's tool refuses at run time (``strict``): the first profile warning as a
        :class:`~qrelkit.errors.ValidationError`."""
        if self.profile_warnings:
            raise ValidationError(
                self.profile_warnings[0],
                fix="drop strict to get the profile's numbers with this warning, or fix the inputs",
            )

    def to_dict(self) -> dict[str, Any]:
        """Provenance, means and per-query values, JSON-serialisable (NaN written as null)."""
        out = self.provenance()
        means: dict[str, dict[str, Any]] = {}
        for row in self.summary_rows():
            means.setdefault(row["run"], {})[row["measure"]] = {
                "mean": _json_float(row["mean"]),
                "queries": row["queries"],
                "undefined_skipped": row["undefined_skipped"],
            }
        per_query: dict[str, dict[str, dict[str, float | None]]] = {}
        for run, qid, measure, value in self.rows():
            per_query.setdefault(run, {}).setdefault(qid, {})[measure] = _json_float(value)
        out["results"] = {"means": means, "per_query": per_query}
        if self.bounds is not None:
            out["judgment_bounds"] = self.bounds.to_dict()
        return out

    def with_judgments(self, judgments: dict[str, Any] | None) -> Results:
        """The same results, carrying what the judgments mean (from their manifest); the qrels' rubric hash
        is the manifest's rubric's when none was given (``--rubric``), so the qrels header and the judgments
        block name the same rubric."""
        from dataclasses import replace

        rubric_hash = self.rubric_hash
        if rubric_hash is None and judgments is not None:
            rubric_hash = (judgments.get("rubric") or {}).get("content_hash")
        return replace(self, judgments=judgments, rubric_hash=rubric_hash)

    def with_bounds(self, bounds: Any) -> Results:
        """The same results, carrying their judgment bounds (a :class:`qrelkit.evaluation.bounds.Bounds`)."""
        from dataclasses import replace

        return replace(self, bounds=bounds)

    def with_reading(self, plan: Any) -> Results:
        """The same results, carrying how their files were read (a
        :class:`~qrelkit.evaluation.plan.ReadingPlan`)."""
        from dataclasses import replace

        return replace(self, reading=plan.to_dict())

    @property
    def warnings(self) -> list[str]:
        """Warnings every rendering of these results repeats (a failed gate, unresolved pairs, ...)."""
        judged = list((self.judgments or {}).get("warnings", []))
        return judged + list(self.profile_warnings) + list(self.tie_warnings)

    def check_comparable(self, other: Results) -> None:
        """Refuse to combine results computed under different conventions or judgments (the error names
        each differing axis, and the qrels fingerprints when they differ)."""
        problems = [f"{axis}: {a} vs {b}" for axis, a, b in self.conventions.differences(other.conventions)]
        if self.qrels_fingerprint.sha256 != other.qrels_fingerprint.sha256:
            problems.append(
                f"qrels: sha256 {self.qrels_fingerprint.sha256[:12]} vs {other.qrels_fingerprint.sha256[:12]}"
            )
        if problems:
            raise IncomparableError(
                "results were computed under different conventions or judgments: " + "; ".join(problems),
                fix="re-evaluate both runs under the same conventions and judgments",
            )

    # -- conversions ---------------------------------------------------------------------------------------

    def to_polars(self) -> Any:
        """Per-query values, wide: one row per (run, query), one column per measure."""
        return self.per_query.pivot(on="measure", index=["run", "query_id"], values="value")

    def to_pandas(self) -> Any:
        """Per-query values as a pandas frame (pandas is not a dependency: ``pip install pandas``)."""
        return pandas_frame(self.to_polars())

    def __repr__(self) -> str:
        lines = [f"Results({len(self.runs)} run(s), {len(self.measures)} measure(s); {self.conventions})"]
        for row in self.summary_rows():
            lines.append(
                f"  {row['run']:<20} {row['measure']:<24} {row['mean']:.4f}  ({row['queries']} queries)"
            )
        return "\n".join(lines)

    def mean_grid(self, digits: int = 4) -> tuple[list[str], list[list[str]]]:
        """Headers and rows of the means, one row per run, formatted to ``digits`` ("–" when undefined)."""
        means = {(r["run"], r["measure"]): r["mean"] for r in self.summary_rows()}

        def short(value: float | None) -> str:
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return "–"
            return f"{value:.{digits}f}"

        headers = ["run", *self.measure_names]
        return headers, [
            [run] + [short(means.get((run, m))) for m in self.measure_names] for run in self.run_names
        ]

    def _repr_html_(self) -> str:
        import html

        headers, rows = self.mean_grid()
        head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        conv = html.escape(str(self.conventions))
        warn = "".join(
            f"<p role='alert'><strong>Warning:</strong> {html.escape(w)}</p>" for w in self.warnings
        )
        return f"{warn}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table><p><small>{conv}</small></p>"


def _json_float(value: float | None) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


@dataclass(frozen=True)
class RunValues:
    """One run's evaluation before assembly: its identity, query set and per-measure values, and per
    measure the queries whose value the profile's tool takes from its order of tied scores
    (:meth:`qrelkit.engine.tie_order.TieOrder.queries`)."""

    name: str
    fingerprint: Fingerprint
    meta: dict[str, object]
    queries: QuerySet
    values: dict[Measure, tuple[np.ndarray, np.ndarray]]
    tie_order: dict[str, tuple[str, ...]] = field(default_factory=dict)


def assemble(qrels: Any, parsed: Sequence[Measure], conv: Conventions, items: Sequence[RunValues]) -> Results:
    """Results from each run's values; ``qrels`` is anything with name, fingerprint, meta, rubric_hash."""
    from .._version import __version__

    summaries = []
    for item in items:
        values = {str(m): np.asarray(v, dtype=np.float64) for m, (v, _) in item.values.items()}
        undefined = {str(m): int(u.sum()) for m, (_, u) in item.values.items()}
        summaries.append(
            RunSummary(item.name, item.fingerprint, dict(item.meta), item.queries, undefined, values)
        )
    warnings: list[str] = []
    profile = None
    if conv.profile is not None:
        from ..measures.profiles import tool_of

        profile = tool_of(conv)
    if profile is not None:
        for item in items:
            q = item.queries
            missing = sorted(q.missing_scored_zero + q.missing_skipped)
            warnings += profile.stop_warnings(conv, item.name, missing, list(q.extra_skipped))
    ties: list[str] = []
    if any(item.tie_order for item in items):
        from ..engine.tie_order import tie_warnings

        ties = tie_warnings(conv, parsed, [(item.name, item.tie_order) for item in items])
    return Results(
        measures=tuple(parsed),
        conventions=conv,
        qrels_name=qrels.name,
        qrels_fingerprint=qrels.fingerprint,
        qrels_meta=dict(qrels.meta),
        rubric_hash=qrels.rubric_hash,
        runs=tuple(summaries),
        version=__version__,
        profile_warnings=tuple(warnings),
        tie_warnings=tuple(ties),
    )


def pandas_frame(frame: Any) -> Any:
    """A polars frame as pandas' (every ``to_pandas`` of qrelkit's values): pandas is not a dependency, so
    its absence is one line naming the fix."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        from ..errors import QrelkitError

        raise QrelkitError(
            "to_pandas needs pandas, which is not installed",
            fix="pip install pandas (or use to_polars(), which needs nothing more)",
        ) from None
    return frame.to_pandas()
