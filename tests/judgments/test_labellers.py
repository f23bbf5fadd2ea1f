"""The file-based path of agreement (qrelkit.judgments.labellers): the scale and its warning, the group
decision, the merge's manifest, each against values worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qrelkit.errors import ValidationError
from qrelkit.judgments.labellers import (
    agreement_of,
    is_group,
    judgment_scale,
    merge_decisions,
    read_labellers,
    scale_warning,
)

from ..conftest import EXAMPLE


def _write(path: Path, rows: dict[tuple[str, str], int]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(rows.items())))
    return str(path)


def test_the_scale_without_a_rubric_is_every_step_between_the_grades_seen(tmp_path):
    a = _write(tmp_path / "a.qrels", {("q1", "d1"): 1, ("q1", "d2"): 3})
    b = _write(tmp_path / "b.qrels", {("q1", "d1"): 1, ("q1", "d2"): 1})
    found = read_labellers([a, b])
    assert found.scale.scale == (1, 2, 3) and found.scale.source == "grades seen"
    assert found.scale.warning == scale_warning((1, 2, 3))
    assert found.scale.warning.startswith(
        "no --rubric: the scale is taken as 1..3, the lowest to the highest"
    )
    assert found.names == ("a", "b") and found.rubric is None and found.paths == (a, b)


def test_a_rubric_gives_its_full_scale_no_warning_and_its_hash(tmp_path):
    a = _write(tmp_path / "a.qrels", {("q1", "d1"): 1})
    b = _write(tmp_path / "b.qrels", {("q1", "d1"): 2})
    found = read_labellers([a, b], str(EXAMPLE / "rubric.toml"))
    assert (
        found.scale.scale == (0, 1, 2, 3) and found.scale.source == "rubric" and found.scale.warning is None
    )
    assert {q.rubric_hash for q in found.qrels} == {found.rubric.content_hash}


def test_an_inferred_scale_is_bounded_and_the_error_names_the_line(tmp_path):
    a = _write(tmp_path / "a.qrels", {("q1", "d1"): 0, ("q1", "d2"): 101})
    with pytest.raises(ValidationError) as err:
        read_labellers([a, a])
    assert err.value.line == 2 and "pass --rubric" in err.value.fix


def test_judgment_scale_of_frames_in_memory():
    from qrelkit.data.values import Qrels

    q = Qrels.from_grades({("q", "a"): -1, ("q", "b"): 2})
    assert judgment_scale([q]).scale == (-1, 0, 1, 2)


def test_a_group_is_three_labellers_or_a_statistic_other_than_kappa():
    assert not is_group(2, None) and not is_group(2, "kappa")
    assert is_group(3, None) and is_group(2, "mean_kappa") and is_group(3, "kappa")


def test_agreement_of_two_files_is_kappa_worked_by_hand(tmp_path):
    # A: 0 0 1 1, B: 0 1 1 1 on the scale 0..1: p_o = 3/4, p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2, kappa = 1/2
    pairs = [("q1", "d1"), ("q1", "d2"), ("q2", "d1"), ("q2", "d2")]
    a = _write(tmp_path / "alice.qrels", dict(zip(pairs, [0, 0, 1, 1], strict=True)))
    b = _write(tmp_path / "bob.qrels", dict(zip(pairs, [0, 1, 1, 1], strict=True)))
    doc = agreement_of(read_labellers([a, b]), min_kappa=0.6)
    assert doc.calibration.report.kappa.kappa == pytest.approx(0.5, abs=1e-12)
    assert doc.header["labellers"]["a"]["name"] == "alice" and doc.header["scale_source"] == "grades seen"
    assert doc.calibration.gate is not None and not doc.calibration.gate.passed
    group = agreement_of(read_labellers([a, b]), statistic="mean_kappa", min_kappa=0.6)
    assert group.calibration.statistic == "mean_kappa"
    assert group.calibration.report.mean_kappa == pytest.approx(0.5, abs=1e-12)  # one pair: its kappa


def test_merge_decisions_writes_the_manifest_fields(tmp_path):
    pairs = [("q1", "d1"), ("q1", "d2"), ("q2", "d1"), ("q2", "d2")]
    a = _write(tmp_path / "alice.qrels", dict(zip(pairs, [0, 0, 1, 1], strict=True)))
    b = _write(tmp_path / "bob.qrels", dict(zip(pairs, [0, 1, 1, 1], strict=True)))
    decisions = tmp_path / "decisions.tsv"
    decisions.write_text("q1\td2\t1\n")
    out = tmp_path / "final.qrels"
    done = merge_decisions(read_labellers([a, b]), decisions, out, min_kappa=0.6, relevance_threshold=1)
    manifest = json.loads(done.manifest.read_text())
    assert done.manifest == tmp_path / "final.qrels.manifest.json"
    assert manifest["rubric"] is None and manifest["scale"] == [0, 1] and manifest["relevance_threshold"] == 1
    assert manifest["labellers"] == ["alice", "bob"]
    assert manifest["calibration"]["kappa"] == pytest.approx(0.5, abs=1e-12)
    assert manifest["calibration"]["gate"]["passed"] is False
    assert manifest["calibration"]["gate"]["value_used"] == manifest["calibration"]["ci_low"]
    assert (manifest["adjudication"]["agreed"], manifest["adjudication"]["adjudicated"]) == (3, 1)
    assert out.read_text().splitlines() == ["q1 0 d1 0", "q1 0 d2 1", "q2 0 d1 1", "q2 0 d2 1"]
