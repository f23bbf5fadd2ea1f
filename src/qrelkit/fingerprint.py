"""The identity of an input, in a module light enough for every path (no dataframe library)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fingerprint:
    """Identity of an input: SHA-256 of the file's bytes as read, or of a canonical row dump for frames."""

    sha256: str
    kind: str  # "file-bytes" or "canonical-rows"
    source: str  # the path, or a description such as "polars DataFrame"

    def to_dict(self) -> dict[str, str]:
        return {"sha256": self.sha256, "kind": self.kind, "source": self.source}
