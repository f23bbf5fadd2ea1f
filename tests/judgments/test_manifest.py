"""Qrels manifests: what is written, that the hash is of the file's bytes, and that edits are caught."""

from __future__ import annotations

import hashlib
import json

import pytest

from qrelkit import Qrels
from qrelkit.errors import InputFormatError, ValidationError
from qrelkit.judgments.manifest import (
    FIELDS,
    MANIFEST_FORMAT,
    manifest_path,
    read_manifest,
    write_qrels_with_manifest,
)

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
    assert data["tool"]["name"] == "qrelkit" and data["tool"]["version"]


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


# -- evaluation reads the manifest -----------------------------------------------------------------------


def _eval(*args):
    from click.testing import CliRunner

    from qrelkit.cli import main

    return CliRunner().invoke(main, ["eval", *[str(a) for a in args]])


def _failed_gate_fields():
    gate = {"passed": False, "threshold": 0.6, "use": "ci_low", "message": "kappa 0.41 ...: FAIL"}
    calibration = {"kappa": 0.41, "ci_low": 0.3, "ci_high": 0.52, "n_pairs": 120, "gate": gate}
    adjudication = {"agreed": 3, "adjudicated": 0, "unresolved_left_out": 2, "overridden": 1, "total": 4}
    return FIELDS_GIVEN | {"calibration": calibration, "adjudication": adjudication}


def test_eval_carries_the_manifest_into_every_output(tmp_path, qrels):
    path = tmp_path / "final.qrels"
    write_qrels_with_manifest(qrels, path, _failed_gate_fields())
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 z 1 3.0 r\nq1 Q0 a 2 2.0 r\nq2 Q0 b 1 1.0 r\n")
    result = _eval(path, run, "-f", "json")
    assert result.exit_code == 0, result.output
    j = json.loads(result.stdout)["judgments"]
    assert j["rubric"] == FIELDS_GIVEN["rubric"] and j["scale"] == [0, 1, 2, 3]
    assert j["calibration"]["kappa"] == 0.41 and j["calibration"]["ci_low"] == 0.3
    assert j["gate"]["passed"] is False and j["unresolved_left_out"] == 2 and j["overridden"] == 1
    assert j["qrels_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    warnings = [
        "the calibration gate failed: kappa 0.41 ...: FAIL",
        "2 disputed pair(s) were left out of these qrels and score as unjudged",
    ]
    assert j["warnings"] == warnings
    for w in warnings:
        assert f"warning: {w}" in result.stderr
    for fmt, mark in (("tsv", "# warning: "), ("trec", "# warning: "), ("markdown", "**Warning:** ")):
        out = _eval(path, run, "-f", fmt)
        assert out.exit_code == 0 and all(mark + w in out.stdout for w in warnings), fmt
    html = _eval(path, run, "-f", "html").stdout
    assert "<strong>Warning:</strong> the calibration gate failed" in html
    assert "rubric" in json.loads(_eval(path, run, "-o", tmp_path / "r.json").exit_code == 0 and
                                  (tmp_path / "r.json").read_text())["judgments"]  # fmt: skip


def test_eval_without_a_manifest_carries_none_and_an_explicit_one_is_used(tmp_path, qrels):
    path = tmp_path / "final.qrels"
    write_qrels_with_manifest(qrels, path, FIELDS_GIVEN)
    moved = tmp_path / "elsewhere.json"
    manifest_path(path).rename(moved)
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 z 1 3.0 r\n")
    assert json.loads(_eval(path, run, "-f", "json").stdout)["judgments"] is None
    named = json.loads(_eval(path, run, "-f", "json", "--manifest", moved).stdout)["judgments"]
    assert named["rubric"]["name"] == "docsearch" and named["warnings"] == []


def test_eval_refuses_qrels_edited_after_their_manifest(tmp_path, qrels):
    path = tmp_path / "final.qrels"
    write_qrels_with_manifest(qrels, path, FIELDS_GIVEN)
    path.write_text(path.read_text().replace("q1 0 z 3", "q1 0 z 2"))
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 z 1 3.0 r\n")
    result = _eval(path, run)
    assert result.exit_code == 1
    assert "final.qrels: the qrels file no longer matches its manifest" in result.output
    assert "Traceback" not in result.output


def test_a_format_1_manifest_still_reads(tmp_path, qrels):
    path = tmp_path / "final.qrels"
    side = write_qrels_with_manifest(qrels, path, FIELDS_GIVEN)
    data = json.loads(side.read_text())
    data["format"] = "qrelkit qrels manifest 1"
    data["qrelkit_version"] = data.pop("tool")["version"]
    side.write_text(json.dumps(data))
    assert read_manifest(path)["qrelkit_version"]


def test_compare_carries_the_manifest_too(tmp_path, qrels):
    from click.testing import CliRunner

    from qrelkit.cli import main

    path = tmp_path / "final.qrels"
    write_qrels_with_manifest(qrels, path, _failed_gate_fields())
    runs = []
    for name, order in (("a", "z a m"), ("b", "a m z")):
        run = tmp_path / f"{name}.run"
        run.write_text("".join(f"q1 Q0 {d} {i} {9 - i}.0 {name}\n" for i, d in enumerate(order.split(), 1)))
        runs.append(run)
    result = CliRunner().invoke(main, ["compare", str(path), *map(str, runs), "-m", "nDCG@10", "-f", "json"])
    assert result.exit_code == 0, result.output
    j = json.loads(result.stdout)["judgments"]
    assert j["gate"]["passed"] is False and j["unresolved_left_out"] == 2
    assert "warning: the calibration gate failed" in result.stderr
    path.write_text(path.read_text() + "q9 0 x 1\n")
    refused = CliRunner().invoke(main, ["compare", str(path), *map(str, runs)])
    assert refused.exit_code == 1 and "no longer matches its manifest" in refused.output


# -- a manifest agrees with itself ------------------------------------------------------------------------


def _gated(passed: bool, value: float | None, **calibration):
    gate = {"passed": passed, "threshold": 0.6, "value_used": value, "use": "ci_low", "message": "..."}
    return FIELDS_GIVEN | {"calibration": {"kappa": 0.5, "ci_low": value, "gate": gate, **calibration}}


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (_gated(True, 0.41), "calibration.gate.passed is true but value_used 0.41 < threshold 0.6"),
        (_gated(False, 0.75), "calibration.gate.passed is false but value_used 0.75 >= threshold 0.6"),
        (_gated(True, None), "calibration.gate.passed is true but value_used null (undefined) vs threshold 0.6"),
        (_gated(False, 0.41, status="passed"), 'calibration.status is "passed" but calibration.gate.passed is false'),
        (_gated(False, 0.41, status="overridden", override=None), 'calibration.status is "overridden" but'),
        (_gated(True, 0.7, status="passed", override={"reason": "x", "by": "a", "at": "t"}), "calibration.override is recorded"),
        (_gated(False, 0.41, pairs_of_labellers=[{"gate": {"passed": True, "threshold": 0.6, "value_used": 0.2}}]),
         "calibration.pairs_of_labellers[0].gate.passed is true but value_used 0.2 < threshold 0.6"),
    ],
)  # fmt: skip
def test_a_manifest_that_contradicts_itself_is_refused_naming_the_field(tmp_path, qrels, fields, named):
    path = tmp_path / "final.qrels"
    with pytest.raises(ValidationError, match="contradicts itself") as written:  # never written so
        write_qrels_with_manifest(qrels, path, fields)
    assert named in str(written.value)
    good = _gated(False, 0.41)
    write_qrels_with_manifest(qrels, path, good)  # then edited by hand
    data = json.loads(manifest_path(path).read_text())
    data["calibration"] = fields["calibration"]
    manifest_path(path).write_text(json.dumps(data))
    with pytest.raises(ValidationError, match="contradicts itself") as read:
        read_manifest(path)
    assert named in str(read.value) and str(manifest_path(path)) in str(read.value)


def test_a_manifest_without_the_number_compared_still_reads(tmp_path, qrels):
    path = tmp_path / "final.qrels"
    write_qrels_with_manifest(qrels, path, FIELDS_GIVEN)  # 0.1.0's gate: no value_used
    assert read_manifest(path)["calibration"]["gate"]["passed"] is True


def _estimation(**sample):
    return {
        "model_qrels": [{"path": "final.qrels", "sha256": "0" * 64, "labeller": "judge", "model_id": "m"}],
        "human_qrels": {"path": "final.human.qrels", "sha256": "1" * 64},
        "sample": {"drawn": "random", "seed": 3, "count": 2, **sample},
    }


@pytest.mark.parametrize(
    ("pp", "named"),
    [
        (_estimation(drawn="hand-picked"), 'prediction_powered.sample.drawn must be "random" or "given"'),
        (_estimation(seed=None), 'prediction_powered.sample.drawn is "random" but its seed is not recorded'),
        (_estimation() | {"human_qrels": {"path": "../elsewhere.qrels", "sha256": "1" * 64}},
         "prediction_powered.human_qrels.path must be a file name beside the manifest"),
        (_estimation() | {"model_qrels": [{"path": "final.qrels"}]},
         "prediction_powered.model_qrels[0] must name a file with its path and sha256"),
    ],
)  # fmt: skip
def test_a_manifest_whose_estimation_inputs_are_malformed_is_refused(tmp_path, qrels, pp, named):
    with pytest.raises(ValidationError, match="contradicts itself") as found:
        write_qrels_with_manifest(qrels, tmp_path / "final.qrels", FIELDS_GIVEN | {"prediction_powered": pp})
    assert named in str(found.value)


def test_human_source_is_none_without_the_field_or_for_another_files_manifest(tmp_path, qrels):
    from qrelkit.judgments.manifest import human_source

    path = tmp_path / "final.qrels"
    assert human_source(path) is None  # no manifest at all
    write_qrels_with_manifest(qrels, path, FIELDS_GIVEN)
    assert human_source(path) is None  # a manifest without prediction_powered
    other = _estimation() | {"model_qrels": [{"path": "final.model.qrels", "sha256": "0" * 64}]}
    write_qrels_with_manifest(qrels, path, FIELDS_GIVEN | {"prediction_powered": other})
    assert human_source(path) is None  # it names another file as the model's: these qrels are the final ones
