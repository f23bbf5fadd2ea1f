"""The reading plan (qrelkit.evaluation.plan): the profile's reader options applied by the library for
every door, the route recorded in the provenance, and a memory limit a route cannot honour refused with
the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from qrelkit.cli import main
from qrelkit.errors import UsageError
from qrelkit.evaluation.files import evaluate_files
from qrelkit.evaluation.plan import Inputs, plan_reading, reader_options
from qrelkit.measures.conventions import DEFAULT, Conventions
from qrelkit.measures.grammar import parse_measures

QRELS = "# judged twice\nq1 0 d1 2\nq1 0 d2 0\n#\nq2 0 d3 1\n"
RUN = "q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\nq2 Q0 d3 1 1.0 sys\n"


def plan_of(conventions, measures, *, qrels=None, **options):
    """The reading plan of ``measures`` under ``conventions`` (the inputs built as a door builds them)."""
    return plan_reading(Inputs.build(qrels, (), measures, conventions, **options))


def _files(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "sys.run"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    return qrels, run


def test_reader_options_come_from_the_profile_unless_given():
    trec = Conventions.from_profile("trec_eval")
    assert reader_options(trec).comments is True  # trec_eval 10 skips lines beginning with '#'
    assert reader_options(trec, comments=False).comments is False
    assert reader_options(DEFAULT).comments is False
    assert reader_options(DEFAULT).on_duplicate == "error"
    assert reader_options(DEFAULT, on_duplicate="first").on_duplicate == "first"
    assert dict(reader_options(trec).source) == {
        "on_duplicate": "profile trec_eval",
        "comments": "profile trec_eval",
    }


def test_the_api_skips_comment_lines_under_the_trec_eval_profile_as_the_command_line_does(tmp_path):
    qrels, run = _files(tmp_path)
    # by hand: q1 ranks d1 (grade 2) then d2 (0): nDCG@10 = 1; q2 ranks d3 (1) first: 1. Mean 1.
    results = evaluate_files(qrels, [run], ["nDCG@10"], Conventions.from_profile("trec_eval"))
    assert results.mean("nDCG@10") == 1.0
    assert results.reading["comments"] is True and results.reading["from"]["comments"] == "profile trec_eval"
    cli = CliRunner().invoke(main, ["eval", str(qrels), str(run), "--profile", "trec_eval", "-m", "nDCG@10"])
    assert cli.exit_code == 0, cli.output


def test_the_plan_is_recorded_in_the_provenance(tmp_path):
    qrels, run = _files(tmp_path)
    results = evaluate_files(qrels, [run], ["nDCG@10", "R@100"], comments=True)
    reading = results.to_dict()["reading"]
    assert reading["route"] == "readers"
    assert reading["readers"] == ["small", "native", "arrow", "robust", "duckdb"]
    assert reading["depth"] == 100 and reading["memory_limit"] is None
    assert reading["from"] == {"on_duplicate": "default", "comments": "given"}


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"engine": "spark"}, "Spark's executors are bounded by spark.executor.memory"),
        ({"diversity": True}, "diversity judgments and each run are read whole"),
        ({"conv": "gdeval"}, "its refusals look at every row"),
    ],
)
def test_a_memory_limit_a_route_cannot_honour_is_refused_with_the_reason(kwargs, reason):
    conv = Conventions.from_profile(kwargs.pop("conv")) if "conv" in kwargs else DEFAULT
    with pytest.raises(UsageError, match=reason) as caught:
        plan_of(conv, parse_measures(["nDCG@10"]), memory_limit="2GB", **kwargs)
    assert str(caught.value).startswith("--memory-limit does not apply to")
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (["--engine", "spark"], "Spark's executors are bounded by spark.executor.memory"),
        (["--profile", "gdeval"], "its refusals look at every row"),
    ],
)
def test_the_command_line_refuses_it_too(tmp_path, options, reason):
    qrels, run = _files(tmp_path)
    result = CliRunner().invoke(main, ["eval", str(qrels), str(run), "--memory-limit", "2GB", *options])
    assert result.exit_code == 2, result.output
    assert "--memory-limit does not apply to" in result.stderr and reason in result.stderr


def test_the_api_refuses_a_memory_limit_with_diversity_judgments(tmp_path):
    qrels = tmp_path / "div.txt"
    qrels.write_text("q1 1 d1 1\n")
    run = tmp_path / "sys.run"
    run.write_text("q1 Q0 d1 1 1.0 sys\n")
    with pytest.raises(UsageError, match="diversity judgments and each run are read whole"):
        evaluate_files(qrels, [run], diversity=True, memory_limit="2GB")


def test_a_memory_limit_below_the_smallest_that_can_hold_is_refused(tmp_path) -> None:
    """120MB was accepted and the process peaked at 394 MB: a limit below the floor, the judgments and the
    least a run needs is refused, naming the smallest limit; one at it is accepted."""
    from qrelkit.evaluation.plan import FLOOR_BYTES, JUDGMENTS_FACTOR, smallest_limit
    from qrelkit.formats.external import MIN_RUN_BYTES

    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(100_000)))
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    size = qrels.stat().st_size
    share = int(JUDGMENTS_FACTOR * size)
    smallest = FLOOR_BYTES + share + MIN_RUN_BYTES  # the sum, by hand
    assert smallest_limit(qrels) == (smallest, share)
    result = CliRunner().invoke(main, ["eval", str(qrels), str(run), "--memory-limit", "120MB"])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(
        f"qrelkit: error: --memory-limit 120MB cannot hold this evaluation: the smallest limit that can is "
        f"{smallest / 1e6:.0f}MB"
    ), line
    assert f"give --memory-limit {-(-smallest // 10_000_000) * 10}MB or more" in line
    ok = CliRunner().invoke(main, ["eval", str(qrels), str(run), "--memory-limit", str(smallest)])
    assert ok.exit_code == 0, ok.output


def test_the_smallest_limit_is_the_route_s_a_run_sorted_on_disk_needs_duckdb_s(tmp_path) -> None:
    """AP needs every row: a gzipped run too large to hold whole is sorted on disk by DuckDB, whose
    smallest limit is larger than a streamed run's; a limit between the two is refused for AP, naming the
    route, and taken for nDCG@10, which streams."""
    import gzip

    from qrelkit.evaluation.plan import (
        FLOOR_BYTES,
        JUDGMENTS_FACTOR,
        check_limit,
        smallest_limit,
    )
    from qrelkit.formats.external import DUCKDB_OVERHEAD_BYTES, MIN_RUN_BYTES
    from qrelkit.measures.conventions import DEFAULT
    from qrelkit.measures.grammar import parse_measures

    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(1000)))
    text = "".join(f"q{q} Q0 d{d} {d + 1} {1000 - d} r\n" for q in range(1000) for d in range(1000)).encode()
    run = tmp_path / "r.run.gz"
    run.write_bytes(gzip.compress(text, compresslevel=1))
    share = int(JUDGMENTS_FACTOR * qrels.stat().st_size)
    streamed = FLOOR_BYTES + share + MIN_RUN_BYTES  # by hand: the sums the docs state
    on_disk = FLOOR_BYTES + share + DUCKDB_OVERHEAD_BYTES + MIN_RUN_BYTES
    assert smallest_limit(qrels) == (streamed, share)
    assert smallest_limit(qrels, sorted_on_disk=True) == (on_disk, share)
    between = (streamed + on_disk) // 2
    # held whole, the run (8 bytes of memory a byte of its text) would pass the limit: DuckDB sorts it
    assert FLOOR_BYTES + share + 8 * max(len(text), 5 * run.stat().st_size) > between
    result = CliRunner().invoke(
        main, ["eval", str(qrels), str(run), "-m", "AP", "--memory-limit", str(between)]
    )
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(
        f"qrelkit: error: --memory-limit {between / 1e6:.0f}MB cannot hold this evaluation: the smallest limit "
        f"that can is {on_disk / 1e6:.0f}MB"
    ), line
    assert "a run sorted on disk by DuckDB, as a measure needs every row" in line
    assert f"give --memory-limit {-(-on_disk // 10_000_000) * 10}MB or more" in line
    assert len(result.stderr.strip().splitlines()) == 1
    streaming = plan_of(DEFAULT, parse_measures(["nDCG@10"]), memory_limit=between)
    check_limit(streaming, qrels, [run])  # nDCG@10 streams: the same limit holds
    every_row = plan_of(DEFAULT, parse_measures(["AP"]), memory_limit=on_disk)
    check_limit(every_row, qrels, [run])  # at the route's smallest limit: taken
