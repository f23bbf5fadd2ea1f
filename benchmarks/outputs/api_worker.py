"""Python API calls of the capture: ``python api_worker.py SPEC_JSON OUT_JSON`` (or a JSON list of pairs).

Run by capture.py with PYTHONPATH=SRC_DIR and cwd=REPO. Writes a JSON document in which every float
is the string repr(float) (so NaN, inf, -0.0 and the last bit are kept) and an exception is recorded as
{"exception": "module.Class", "message": ...} instead of a result.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys


def plain(x, depth=0):
    """JSON-able value with floats as their repr."""
    import numpy as np

    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return "f:" + repr(float(x))
    if isinstance(x, dict):
        return {str(k): plain(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v, depth + 1) for v in x]
    if isinstance(x, np.ndarray):
        return [plain(v, depth + 1) for v in x.tolist()]
    if isinstance(x, (set, frozenset)):
        return sorted(plain(v, depth + 1) for v in x)
    if hasattr(x, "to_dict") and depth < 8:
        try:
            return plain(x.to_dict(), depth + 1)
        except TypeError:
            pass
    return {"repr": repr(x)}


def frame(df):
    """A polars frame: schema and every row (floats by repr); over 20k rows, a sha256 per column instead
    (floats and integers by their bytes, strings joined by NUL), which is as exact and much faster."""
    out = {"schema": {c: str(t) for c, t in df.schema.items()}, "height": df.height}
    if df.height > 20000:
        digests = {}
        for c in df.columns:
            col = df.get_column(c)
            if col.dtype.is_numeric():
                data = col.to_numpy().tobytes()
            else:
                data = "\0".join("\x01" if v is None else str(v) for v in col.to_list()).encode()
            digests[c] = hashlib.sha256(data).hexdigest()
        out["column_sha256"] = digests
    else:
        out["columns"] = df.columns
        out["rows"] = [plain(list(r)) for r in df.iter_rows()]
    return out


def results_doc(res):
    doc = {"run_names": list(res.run_names), "measure_names": list(res.measure_names), "runs": []}
    for run in res.runs:
        doc["runs"].append(
            {
                "name": run.name,
                "query_ids": list(run.queries.query_ids),
                "values": {m: plain(run.values[m]) for m in res.measure_names},
            }
        )
    doc["summary_rows"] = plain(res.summary_rows())
    doc["means"] = {r: {m: plain(res.mean(m, r)) for m in res.measure_names} for r in res.run_names}
    doc["warnings"] = list(res.warnings)
    doc["to_dict"] = plain(res.to_dict())
    return doc


def conventions_for(spec):
    from qrelkit.measures.profiles import get_profile

    if spec.get("profile"):
        return get_profile(spec["profile"]).conventions
    return None


def call(spec):
    import qrelkit

    kind = spec["kind"]
    kw = dict(spec.get("kwargs", {}))
    if kind == "surface":
        import qrelkit.compare as cmp
        import qrelkit.evaluation.files as ef

        def sig(f):
            try:
                return str(inspect.signature(f))
            except (TypeError, ValueError):
                return None

        return {
            "qrelkit.__all__": sorted(qrelkit.__all__),
            "qrelkit.evaluate_files exists": hasattr(qrelkit, "evaluate_files"),
            "qrelkit.evaluation.files.evaluate_files": sig(ef.evaluate_files),
            "qrelkit.compare.compare_files exists": hasattr(cmp, "compare_files"),
            "qrelkit.compare.compare_files": sig(getattr(cmp, "compare_files", None)),
            "qrelkit.read_run": sig(qrelkit.read_run),
            "qrelkit.read_qrels": sig(qrelkit.read_qrels),
            "qrelkit.evaluate": sig(qrelkit.evaluate),
        }
    if kind == "evaluate_files":
        if spec.get("entry") == "qrelkit.evaluate_files":
            if not hasattr(qrelkit, "evaluate_files"):
                return {"absent": "qrelkit has no attribute evaluate_files"}
            fn = qrelkit.evaluate_files
        else:
            from qrelkit.evaluation.files import evaluate_files as fn
        res = fn(spec["qrels"], spec["runs"], spec.get("measures"), conventions_for(spec), **kw)
        return results_doc(res)
    if kind == "evaluate_inmem":
        q = qrelkit.read_qrels(spec["qrels"], **spec.get("qrels_kwargs", {}))
        runs = [qrelkit.read_run(r, **spec.get("run_kwargs", {})) for r in spec["runs"]]
        res = qrelkit.evaluate(
            q, runs if len(runs) > 1 else runs[0], spec.get("measures"), conventions_for(spec)
        )
        return results_doc(res)
    if kind == "compare_files":
        import qrelkit.compare as cmp

        if not hasattr(cmp, "compare_files"):
            return {"absent": "qrelkit.compare has no attribute compare_files"}
        c = cmp.compare_files(spec["qrels"], spec["runs"], spec.get("measures"), conventions_for(spec), **kw)
        return {"to_dict": plain(c.to_dict()), "run_values": results_doc(c.results)}
    if kind in ("read_run", "read_qrels"):
        obj = getattr(qrelkit, kind)(spec["path"], **kw)
        out = {
            "name": obj.name,
            "fingerprint": plain(obj.fingerprint.to_dict()),
            "meta": plain(obj.meta),
            "frame": frame(obj.frame),
        }
        if kind == "read_qrels":
            out["scale"] = plain(obj.scale)
        return out
    raise SystemExit(f"unknown kind {kind}")


def one(spec, target):
    try:
        result = {"spec": spec, "result": call(spec)}
    except Exception as exc:  # recorded, not raised: an error is an output too
        result = {
            "spec": spec,
            "exception": f"{type(exc).__module__}.{type(exc).__qualname__}",
            "message": str(exc),
        }
    with open(target, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, ensure_ascii=False, allow_nan=False)
        f.write("\n")


def main():
    """argv: SPEC_JSON OUT_JSON, or one JSON list of [spec, out_json] pairs run in turn (the readers' calls,
    which hold no state between them, are batched to save interpreter starts)."""
    first = json.loads(sys.argv[1])
    if isinstance(first, list):
        for spec, target in first:
            one(spec, target)
    else:
        one(first, sys.argv[2])


if __name__ == "__main__":
    main()
