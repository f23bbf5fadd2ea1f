"""The identity of an input, in a module light enough for every path (no dataframe library)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future


@dataclass(frozen=True)
class Fingerprint:
    """Identity of an input: SHA-256 of the file's bytes as read, or of a canonical row dump for frames."""

    sha256: str
    kind: str  # "file-bytes" or "canonical-rows"
    source: str  # the path, or a description such as "polars DataFrame"

    def to_dict(self) -> dict[str, str]:
        return {"sha256": self.sha256, "kind": self.kind, "source": self.source}


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes as stored, read in 16 MB blocks (hashlib releases the GIL meanwhile)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(16 << 20):
            digest.update(block)
    return digest.hexdigest()


#: Digests being computed ahead of reading, by path: (size and mtime when hashing began, digest).
_AHEAD: dict[str, tuple[tuple[int, int], Future[str]]] = {}


def hash_ahead(paths: list[Path]) -> None:
    """Start computing the SHA-256 of large files on a thread of their own, so that the hashing overlaps
    with loading the libraries that will read them (the reader then takes the digest instead of hashing
    its blocks; see :func:`digest_ahead`)."""
    todo = [p for p in paths if str(p) not in _AHEAD]
    if not todo:
        return
    from concurrent.futures import Future  # with logging, 9 ms that a small evaluation does not need

    futures: list[tuple[Path, Future[str]]] = []
    for path in todo:
        future: Future[str] = Future()
        _AHEAD[str(path)] = (identity(path), future)
        futures.append((path, future))

    def work() -> None:
        for path, future in futures:
            try:
                future.set_result(file_sha256(path))
            except BaseException as exc:  # handed to whoever asks for the digest
                future.set_exception(exc)

    threading.Thread(target=work, name="qrelkit-hash-ahead", daemon=True).start()


def identity(path: Path) -> tuple[int, int]:
    """(size, modification time in ns): what must not change between hashing a file and reading it."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def digest_ahead(path: Path) -> tuple[tuple[int, int], Future[str]] | None:
    """The digest started by :func:`hash_ahead` for ``path`` with the file's identity when it started, if
    the file is unchanged since; ``None`` otherwise. Each digest is handed out once. The reader compares
    the identity again once it has read the file; if it changed, the robust reader reads (and hashes) the
    file anew."""
    entry = _AHEAD.pop(str(path), None)
    if entry is None:
        return None
    try:
        return entry if identity(path) == entry[0] else None
    except OSError:
        return None
