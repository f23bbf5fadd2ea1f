"""Arrow columns as the small path's :class:`~qrelkit.data.columns.Columns`: the ids' bytes read straight from
Arrow's string offsets and data into the small engine's words (:mod:`qrelkit.engine.encoding.small`), for Spark's
partitions, which ``mapInArrow`` hands Arrow batches. Only clean columns take this path: anything that needs
an error message or a policy makes it step aside (:class:`~qrelkit.errors.StepAside`) to the columnar checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.columns import Columns
from ..errors import StepAside
from ..fingerprint import Fingerprint
from ..naming import MAX_ID_BYTES
from .trec.common import forbidden_in_text

__all__ = ["from_arrow"]


def _id_bounds(array: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, starts, ends) of a clean Arrow column of ids (string, large string, string view or
    integers): every id non-null, 1 to :data:`~qrelkit.naming.MAX_ID_BYTES` bytes, without a character the
    id rule forbids (:data:`~qrelkit.naming.ID_PATTERN`); else :class:`~qrelkit.errors.StepAside`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    if pa.types.is_integer(kind) or pa.types.is_string_view(kind):
        array, kind = pc.cast(array, pa.large_string()), pa.large_string()
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)) or array.null_count:
        raise StepAside  # floats, binary, nulls: the columnar checks name the row
    n = len(array)
    _, offsets_buffer, data_buffer = array.buffers()
    width = np.int64 if pa.types.is_large_string(kind) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width)[array.offset : array.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    if n and (int(lengths.min()) < 1 or int(lengths.max()) > MAX_ID_BYTES):
        raise StepAside  # an empty id, or one past the bound
    used = data[offsets[0] : offsets[-1]] if n else data[:0]
    if np.count_nonzero(used <= 0x20) or forbidden_in_text(used.tobytes()):
        raise StepAside  # whitespace or a control character
    return data, starts, ends


def from_arrow(
    query: Any, doc: Any, number: Any, fingerprint: Fingerprint, source: str, integer: bool = False
) -> Columns:
    """Columns of rows given as Arrow columns (query and document ids, scores as float64 or grades as
    int64, ``integer``), each query's rows together, the ids' bytes read straight from Arrow's buffers into
    the small path's words. Raises :class:`~qrelkit.errors.StepAside` for anything the columnar checks
    must judge (a null, an id the id rule refuses, a score that is not a finite float64, ids whose matrices
    would outgrow their bytes)."""
    import pyarrow as pa

    from .._native import built, gather, words

    if not built():
        raise StepAside
    if isinstance(number, pa.ChunkedArray):
        number = number.combine_chunks()
    wanted = pa.int64() if integer else pa.float64()
    if number.type != wanted or number.null_count:
        raise StepAside
    values = number.to_numpy(zero_copy_only=False)
    if not integer and not np.isfinite(values).all():
        raise StepAside
    q_data, q_starts, q_ends = _id_bounds(query)
    d_data, d_starts, d_ends = _id_bounds(doc)
    rows = len(q_starts)
    if rows:
        q_width = int((q_ends - q_starts).max())
        d_width = -(-int((d_ends - d_starts).max()) // 8) * 8
        text = int(q_ends[-1] - q_starts[0] + d_ends[-1] - d_starts[0])
        if rows * (q_width + d_width) > 2 * text + (1 << 20):
            raise StepAside  # one long id among short ones: matrices of rows x the longest
    else:
        q_width = 1
    matrix = gather(q_data, q_starts, q_ends, q_width)
    query_ids = matrix.view(f"S{q_width}").ravel()
    change = np.ones(rows, dtype=bool)
    change[1:] = query_ids[1:] != query_ids[:-1]
    doc_words, doc_hash = words(d_data, d_starts, d_ends)
    return Columns(query_ids, change, doc_words, doc_hash, values, None, fingerprint, source)
