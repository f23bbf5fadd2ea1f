from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLE = ROOT / "examples" / "docsearch"


def shared_path(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        message = f"{path} is not present (the shared reference data sits beside the repository)"
        if os.environ.get("CI"):
            pytest.fail(message)  # in CI the data is always there: its absence is a failure, not a skip
        pytest.skip(message)
    return path
