"""``evaluate(qrels, runs, measures, conventions) -> Results``: the one entry point for numbers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from . import __version__
from .conventions import DEFAULT, Conventions
from .data import Qrels, Run
from .engine import kernels as K
from .engine.encode import Encoded, QuerySet, encode, select_queries
from .errors import ValidationError
from .measures import DEFAULT_MEASURES, Measure, parse_all, required_depth
from .results import Results, RunSummary


def compute(enc: Encoded, measure: Measure, conv: Conventions) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of one measure and the mask of queries where it was undefined."""
    k, rel, name = measure.k, measure.rel, measure.name
    none = np.zeros(enc.n_queries, dtype=bool)
    if name == "nDCG":
        return K.ndcg(enc, k, conv)
    if name == "DCG":
        return K.dcg(enc, k, conv), none
    if name == "IDCG":
        return K.idcg(enc, k, conv), none
    assert rel is not None or not measure.info.uses_rel
    if name == "R":
        return K.recall(enc, k, rel, conv)
    if name == "P":
        return K.precision(enc, k, rel), none
    if name == "AP":
        return K.average_precision(enc, k, rel, conv)
    if name == "RR":
        return K.reciprocal_rank(enc, k, rel, conv)
    if name == "Rprec":
        return K.rprec(enc, rel, conv)
    if name == "Judged":
        return K.judged_at(enc, k), none
    if name == "NumRel":
        return K.num_relevant(enc, rel), none
    if name == "NumRet":
        return K.num_ret(enc, k), none
    if name == "NumRelRet":
        return K.rel_in_top(enc, k, rel), none
    raise AssertionError(f"no kernel for {name}")  # parse() admits only measures listed above


def _encoding_key(conv: Conventions) -> tuple[str, ...]:
    return (conv.unjudged, conv.ties, conv.precision, conv.negative)


def _as_runs(runs: Run | Sequence[Run] | Mapping[str, Run]) -> list[Run]:
    if isinstance(runs, Run):
        items = [runs]
    elif isinstance(runs, Mapping):
        items = [Run(r.frame, r.fingerprint, name, r.meta) for name, r in runs.items()]
    else:
        items = list(runs)
    if not items:
        raise ValidationError("no runs to evaluate", fix="pass at least one run")
    seen: dict[str, int] = {}
    out = []
    for run in items:
        if not isinstance(run, Run):
            raise ValidationError(
                f"expected a Run, got {type(run).__name__}",
                fix="read runs with qrelkit.read_run or build them with Run.from_dict / run_from_frame",
            )
        name = run.name
        if name in seen:
            source = str(run.meta.get("source", ""))
            name = f"{name} ({source})" if source else f"{name}#{seen[run.name] + 1}"
            if name in seen:
                raise ValidationError(
                    f"two runs are both named {run.name!r}", fix="give each run its own name"
                )
        seen[run.name] = seen.get(run.name, 0) + 1
        seen.setdefault(name, 1)
        out.append(run if name == run.name else Run(run.frame, run.fingerprint, name, run.meta))
    return out


def _check_depth(run: Run, measures: Sequence[Measure], conv: Conventions) -> None:
    kept = run.meta.get("kept_top")
    if kept is None:
        return
    needed = required_depth(measures, conv)
    if needed is None or needed > int(kept):  # type: ignore[call-overload]
        deeper = [str(m) for m in measures if required_depth([m], conv) is None or (m.k or 0) > int(kept)]  # type: ignore[call-overload]
        raise ValidationError(
            f"run {run.name!r} was read keeping only each query's top {kept} documents, "
            f"but {', '.join(deeper)} need{'s' if len(deeper) == 1 else ''} more",
            fix="read the run with keep_top=None (or at least the largest cutoff)",
        )


def evaluate_run(
    qrels: Qrels, run: Run, measures: Sequence[Measure], conv: Conventions
) -> tuple[QuerySet, dict[Measure, tuple[np.ndarray, np.ndarray]]]:
    """Evaluate one run: the query set, and per measure (values, undefined mask) over its queries."""
    _check_depth(run, measures, conv)
    queries = select_queries(qrels, run, conv)
    cache: dict[tuple[str, ...], Encoded] = {}
    values: dict[Measure, tuple[np.ndarray, np.ndarray]] = {}
    for measure in measures:
        mconv = measure.conventions(conv)
        key = _encoding_key(mconv)
        if key not in cache:
            cache[key] = encode(qrels, run, mconv, queries)
        values[measure] = compute(cache[key], measure, mconv)
    return queries, values


def evaluate(
    qrels: Qrels,
    runs: Run | Sequence[Run] | Mapping[str, Run],
    measures: Iterable[str | Measure] | None = None,
    conventions: Conventions | None = None,
    *,
    progress: Callable[[int, int, str], None] | None = None,
) -> Results:
    """Evaluate runs against judgments.

    ``measures`` defaults to nDCG@10, R@100 and Judged@10 (ordering, coverage and judged depth together);
    ``conventions`` defaults to :data:`qrelkit.conventions.DEFAULT`. Returns :class:`Results` holding the
    per-query values, the means, what each query-set policy did, and the provenance (conventions in full,
    fingerprints of every input, qrelkit's version).
    """
    conv = conventions or DEFAULT
    parsed = parse_all(DEFAULT_MEASURES if measures is None else list(measures))
    if not parsed:
        raise ValidationError("no measures to compute", fix="pass at least one measure, e.g. nDCG@10")
    run_list = _as_runs(runs)
    frames = []
    summaries = []
    for i, run in enumerate(run_list):
        if progress is not None:
            progress(i, len(run_list), run.name)
        queries, values = evaluate_run(qrels, run, parsed, conv)
        qids = pl.Series("query_id", queries.query_ids, dtype=pl.String)
        undefined_counts = {}
        for measure, (vals, undefined) in values.items():
            frames.append(
                pl.DataFrame(
                    {
                        "run": pl.Series([run.name] * len(qids), dtype=pl.String),
                        "query_id": qids,
                        "measure": pl.Series([str(measure)] * len(qids), dtype=pl.String),
                        "value": pl.Series(vals, dtype=pl.Float64),
                    }
                )
            )
            undefined_counts[str(measure)] = int(undefined.sum())
        summaries.append(RunSummary(run.name, run.fingerprint, dict(run.meta), queries, undefined_counts))
    if progress is not None:
        progress(len(run_list), len(run_list), "")
    per_query = pl.concat(frames) if frames else pl.DataFrame()
    return Results(
        measures=tuple(parsed),
        conventions=conv,
        qrels_name=qrels.name,
        qrels_fingerprint=qrels.fingerprint,
        qrels_meta=dict(qrels.meta),
        rubric_hash=qrels.rubric_hash,
        runs=tuple(summaries),
        per_query=per_query,
        version=__version__,
    )


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
    progress: Callable[[int, int, str], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> Results:
    """Read judgments once and evaluate every run file against them.

    Each run is read only as deep as the measures need (:func:`qrelkit.measures.required_depth`): with
    cutoffs only, large runs stream through bounded memory, keeping each query's top documents and the
    tied block at the deepest cutoff, which gives the same numbers as reading everything.
    """
    from .formats import read_qrels, read_run

    conv = conventions or DEFAULT
    parsed = parse_all(DEFAULT_MEASURES if measures is None else list(measures))
    qrels = read_qrels(qrels_path, format=input_format, scale=scale, on_duplicate=on_duplicate)  # type: ignore[arg-type]
    if rubric_hash is not None:
        qrels = Qrels(qrels.frame, qrels.fingerprint, qrels.name, qrels.scale, rubric_hash, qrels.meta)
    depth = required_depth(parsed, conv)
    single = conv.precision == "single" or any(m.conventions(conv).precision == "single" for m in parsed)
    runs = []
    for i, path in enumerate(run_paths):
        if progress is not None:
            progress(i, len(run_paths), f"reading {Path(path).name}")
        runs.append(
            read_run(
                path,
                format=input_format,  # type: ignore[arg-type]
                on_duplicate=on_duplicate,  # type: ignore[arg-type]
                keep_top=depth,
                rank_single=single,
                on_bytes=on_bytes,
            )
        )
    return evaluate(qrels, runs, parsed, conv, progress=progress)
