"""The reading plan for judgments named by dataset (``irds:ID``): a value, not a file. The plan is decided
without ir_datasets (nothing is read here), so these cases need no dataset on disk."""

from __future__ import annotations

import pytest

from qrelkit.errors import UsageError
from qrelkit.evaluation.plan import ROUTES, Inputs, plan_reading
from qrelkit.measures.conventions import DEFAULT, Conventions
from qrelkit.measures.grammar import parse_measures

NAME = "irds:msmarco-passage/trec-dl-2019/judged"
MEASURES = parse_measures(["nDCG@10"])


def plan_of(conventions, measures, *, qrels=None, **options):
    """The reading plan of ``measures`` under ``conventions`` (the inputs built as a door builds them)."""
    return plan_reading(Inputs.build(qrels, (), measures, conventions, **options))


def test_a_dataset_name_leaves_the_small_path_out_and_is_recorded():
    plan = plan_of(DEFAULT, MEASURES, qrels=NAME)
    assert plan.route == "readers"
    assert plan.readers == ("native", "arrow", "robust", "duckdb")
    assert plan.judgments == NAME
    assert plan.to_dict()["judgments"] == NAME
    assert plan.reason.endswith(f"judgments {NAME} read whole by name")
    assert plan.depth == 10  # the runs are still read only as deep as the measures need


def test_a_file_keeps_every_reader_and_records_no_name(tmp_path):
    plan = plan_of(DEFAULT, MEASURES, qrels=str(tmp_path / "qrels.txt"))
    assert plan.readers == ROUTES["readers"]
    assert plan.judgments is None and "judgments" not in plan.to_dict()


def test_a_profile_that_reads_every_row_records_the_name_on_its_route():
    plan = plan_of(Conventions.from_profile("sklearn"), MEASURES, qrels=NAME)
    assert plan.route == "whole" and plan.readers == ROUTES["whole"]
    assert plan.judgments == NAME


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"diversity": True}, f"--diversity reads a file of diversity judgments, not a dataset name: {NAME}"),
        ({"engine": "spark"}, f"a dataset name is read by --engine local only: {NAME}"),
    ],
)
def test_routes_that_read_judgments_as_files_refuse_a_name(kwargs, problem):
    with pytest.raises(UsageError) as caught:
        plan_of(DEFAULT, MEASURES, qrels=NAME, **kwargs)
    assert caught.value.problem == problem
    assert (
        "`ir_datasets export msmarco-passage/trec-dl-2019/judged qrels > judgments.qrels`" in caught.value.fix
    )
