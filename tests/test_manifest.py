"""Qrels manifests: what is written, that the hash is of the file's bytes, and that edits are caught."""

from __future__ import annotations

import hashlib
import json

import pytest

from qrelkit import Qrels
from qrelkit.errors import InputFormatError, ValidationError
from qrelkit.manifest import FIELDS, MANIFEST_FORMAT, manifest_path, read_manifest, write_qrels_with_manifest

FIELDS_GIVEN = {
    "rubric": {"name": "docsearch", "version": "1.0", "content_hash": "ab" * 32},
    "scale": [0, 1, 2, 3],
    "relevance_threshold": 2,
    "labellers": ["alice", "bob"],
    "calibration": {"kappa": 0.8, "ci_low": 0.7, "ci_high": 0.9, "gate": {"passed": True, "threshold": 0.6}},
    "adjudication": {"agreed": 3, "adjudicated": 1, "defaulted": 0, "single_labeller": 0, "total": 4},
}


@pytest.fixture
def qrels():
    return Qrels.from_dict({"q2": {"b": 0}, "q1": {"z": 3, "a": 1, "m": 1}})


def test_write_and_read(tmp_path, qrels):
    path = tmp_path / "final.qrels"
    side = write_qrels_with_manifest(qrels, path, FIELDS_GIVEN)
    assert side == tmp_path / "final.qrels.manifest.json" == manifest_path(path)
    assert path.read_text() == "q1 0 a 1\nq1 0 m 1\nq1 0 z 3\nq2 0 b 0\n"
    data = read_manifest(path)
    assert data == read_manifest(side)
    assert data["format"] == MANIFEST_FORMAT
    assert data["qrels"] == {
        "path": "final.qrels",
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "queries": 2,
        "judgments": 4,
        "grades": {"0": 1, "1": 2, "3": 1},
    }
    for key, value in FIELDS_GIVEN.items():
        assert data[key] == value
    assert data["qrelkit_version"]


def test_missing_fields_are_null(tmp_path, qrels):
    write_qrels_with_manifest(qrels, tmp_path / "f.qrels", {"labellers": ["alice"]})
    data = json.loads((tmp_path / "f.qrels.manifest.json").read_text())
    assert set(FIELDS) <= set(data)
    assert data["rubric"] is None and data["labellers"] == ["alice"]


def test_edited_qrels_are_detected(tmp_path, qrels):
    path = tmp_path / "final.qrels"
    write_qrels_with_manifest(qrels, path, FIELDS_GIVEN)
    path.write_text(path.read_text().replace("q1 0 z 3", "q1 0 z 2"))
    with pytest.raises(ValidationError, match="no longer matches its manifest"):
        read_manifest(path)
    assert read_manifest(path, verify=False)["qrels"]["judgments"] == 4


def test_bad_fields(tmp_path, qrels):
    with pytest.raises(ValidationError, match="unknown manifest field"):
        write_qrels_with_manifest(qrels, tmp_path / "x.qrels", {"kappa": 0.8})
    with pytest.raises(ValidationError, match="not on the manifest's scale"):
        write_qrels_with_manifest(qrels, tmp_path / "x.qrels", {"scale": [0, 1, 2]})
    with pytest.raises(InputFormatError, match="manifest not found"):
        read_manifest(tmp_path / "nothing.qrels")
    (tmp_path / "bad.qrels.manifest.json").write_text("{not json")
    with pytest.raises(InputFormatError, match="not valid JSON"):
        read_manifest(tmp_path / "bad.qrels")
