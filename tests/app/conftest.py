"""Fixtures for the judging tests: a project made from the fixture files, and a server for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import ThreadServer, make_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def server(project: Path) -> Iterator[ThreadServer]:
    from qrelkit.app.web import create_app

    with ThreadServer(create_app(project, signin_limit=(1000, 60.0))) as srv:
        yield srv
