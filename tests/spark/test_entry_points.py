"""The same files through every door: the Python API (``evaluate_files``), the command line (``qrelkit
eval``, in this process), the command line on Spark (``--engine spark``) and Spark's API
(``qrelkit.evaluation.spark.evaluate``), under every profile, give identical floats or the identical
error. The judgments carry comment lines, which a profile that skips them (trec_eval's) reads past on every
door and every other profile refuses on every door: the profile's reader options are the library's, not a
command's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qrelkit.errors import QrelkitError
from qrelkit.evaluation.files import evaluate_files
from qrelkit.measures.conventions import PROFILE_NAMES, Conventions

from ..conftest import CLI

MEASURES = ["nDCG@10", "P@5", "R@10", "AP"]

QRELS = """\
1 0 d1 3
1 0 d2 0
1 0 d3 1
1 0 d4 2
2 0 d5 1
2 0 d6 0
2 0 d7 2
"""

RUN = """\
1 Q0 d3 1 9.5 sys
1 Q0 d9 2 8.25 sys
1 Q0 d1 3 8.25 sys
1 Q0 d2 4 3.0 sys
2 Q0 d7 1 2.0 sys
2 Q0 d6 2 1.5 sys
2 Q0 d8 3 1.0 sys
"""

CASES = {
    "clean": QRELS,
    "comment lines": "# graded by two labellers\n" + QRELS.replace("2 0 d5 1\n", "2 0 d5 1\n#\n"),
}


def _outcome(call) -> object:
    """The per-query values of a call's results, or the error's text."""
    try:
        results = call()
    except QrelkitError as exc:
        return f"error: {exc}"
    return results.to_dict()["results"]


def _cli(*args: str) -> object:
    result = CLI("eval", *args, "-f", "json")
    if result.exit_code == 0:
        return json.loads(result.stdout)["results"]
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("qrelkit: error: "), result.stderr
    return "error: " + line.removeprefix("qrelkit: error: ")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_every_door_gives_the_same_floats_and_errors(spark, tmp_path: Path, profile: str, case: str) -> None:
    from qrelkit.evaluation import spark as on_spark

    qrels, run = tmp_path / "qrels.txt", tmp_path / "sys.run"
    qrels.write_text(CASES[case])
    run.write_text(RUN)
    conv = Conventions.from_profile(profile)
    measures = ["-m", *" -m ".join(MEASURES).split()]
    if profile == "cwl_eval":  # cwl_eval reads gains of at most 1: the grades' scale is given
        conv = conv.with_(max_grade=3)
        measures += ["--max-grade", "3"]
    got = {
        "api": _outcome(lambda: evaluate_files(qrels, [run], MEASURES, conv)),
        "cli": _cli(str(qrels), str(run), "--profile", profile, *measures),
        "cli spark": _cli(str(qrels), str(run), "--profile", profile, "--engine", "spark", *measures),
        "spark api": _outcome(lambda: on_spark.evaluate(spark, str(qrels), [str(run)], MEASURES, conv)),
    }
    assert got["cli"] == got["api"], profile
    assert got["cli spark"] == got["api"], profile
    assert got["spark api"] == got["api"], profile
    skips = Conventions.from_profile(profile).profile in ("trec_eval", "trec_eval-c", "trec_eval-J")
    if case == "clean" or skips:
        assert isinstance(got["api"], dict), got["api"]  # numbers, not an error
        # the comment lines changed nothing: the same floats as the clean judgments
        clean = _outcome(lambda: evaluate_files(_write(tmp_path / "clean.txt", QRELS), [run], MEASURES, conv))
        assert got["api"] == clean
    else:
        assert isinstance(got["api"], str) and "qrels.txt:1" in got["api"], got["api"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
