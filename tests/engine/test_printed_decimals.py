"""The ``printed_decimals`` axis: every per-query value rounded as a tool that prints it with
``printf("%.<d>f")`` and reads the text back has it (engine/dispatch.py, the one place every engine
goes through).

Expected values are written out by hand from each double's exact decimal expansion, and checked against
perl's own ``printf`` (gdeval.pl's) where perl is installed.
"""

from __future__ import annotations

import json
import math
import pkgutil
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from qrelkit import Conventions, evaluate, read_qrels, read_run
from qrelkit.engine.dispatch import printed
from qrelkit.errors import ConventionError

from ..conftest import CLI

#: (value, decimals, what printf("%.<decimals>f") prints), each from the double's exact value
BY_HAND = [
    (0.015625, 5, 0.01562),  # 1/64 exactly: a half, to the even digit 2
    (0.046875, 5, 0.04688),  # 3/64 exactly: a half, to the even digit 8
    (0.109375, 5, 0.10938),  # 7/64 exactly: a half, to the even digit 8
    (0.123455, 5, 0.12345),  # the double is 0.123454999999999995297...: below the half
    (2.675, 2, 2.67),  # the double is 2.674999999999999822...: below the half
    (1 / 3, 5, 0.33333),
    (2 / 3, 5, 0.66667),
    (0.5, 0, 0.0),  # a half, to the even digit 0
    (1.5, 0, 2.0),  # a half, to the even digit 2
    (0.999996, 5, 1.0),
    (1.0, 5, 1.0),
    (0.0, 5, 0.0),
]


@pytest.mark.parametrize(("value", "decimals", "expected"), BY_HAND)
def test_printed_rounds_each_double_as_printf_does(value, decimals, expected):
    assert printed(np.array([value]), decimals).tolist() == [expected]


def test_printed_keeps_nan_and_the_sign_of_a_rounded_zero():
    got = printed(np.array([math.nan, -0.000001, -0.0]), 5)
    assert math.isnan(got[0])
    assert got[1] == 0.0 and math.copysign(1.0, got[1]) == -1.0  # printf prints -0.00000
    assert math.copysign(1.0, got[2]) == -1.0


@pytest.fixture(scope="module")
def perl():
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed")
    return shutil.which("perl")


def test_printed_equals_perls_printf_read_back(perl):
    """Random doubles across magnitudes, every multiple of 1/128 (exact halves at five decimals and
    more), and values a step either side of a half: perl's ``printf("%.5f")`` (and ``%.2f``, ``%.9f``)
    read back with float() gives the same double. (Not ``%.0f``: perl formats it itself, adding 0.5 and
    truncating (``F0convert`` in sv.c), so 0.5000000000000001 prints 0 there; C prints 1, as here.)"""
    rng = random.Random(28)
    values = [rng.random() * 10 ** rng.randint(-7, 3) for _ in range(5000)]
    values += [k / 128 for k in range(257)]
    values += [math.nextafter(k / 64, d) for k in range(65) for d in (0.0, 2.0)]
    values += [(k + 0.5) / 10**5 for k in range(0, 100_000, 97)]
    text = "".join(f"{v!r}\n" for v in values)  # repr: the shortest text that reads back as the double
    for decimals in (5, 2, 9):
        out = subprocess.run(
            [perl, "-ne", f'chomp; printf("%.{decimals}f\\n", $_);'],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        )
        theirs = [float(line) for line in out.stdout.split()]
        assert printed(np.array(values), decimals).tolist() == theirs, decimals


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """Three queries whose one relevant document comes fourth, after three unjudged ones: ERR@10 is
    (2^g - 1) / 16 / 4 (gdeval's max grade 4), 1/64, 3/64 and 7/64 for grades 1, 2 and 3, each an
    exact half at the sixth decimal."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("101 0 r 1\n102 0 r 2\n103 0 r 3\n")
    run = tmp_path / "run.txt"
    lines = []
    for q in ("101", "102", "103"):
        for rank, doc in enumerate(["u1", "u2", "u3", "r"], start=1):
            lines.append(f"{q} Q0 {doc} {rank} {10 - rank} t\n")
    run.write_text("".join(lines))
    return qrels, run


def test_err_under_printed_decimals_by_hand(tmp_path):
    qrels, run = _files(tmp_path)
    conv = Conventions(ties="docid_desc")
    unrounded = evaluate(read_qrels(qrels), read_run(run), ["ERR@10"], conv).values("ERR@10")
    assert unrounded == {"101": 1 / 64, "102": 3 / 64, "103": 7 / 64}
    res = evaluate(read_qrels(qrels), read_run(run), ["ERR@10"], conv.with_(printed_decimals=5))
    assert res.values("ERR@10") == {"101": 0.01562, "102": 0.04688, "103": 0.10938}
    assert res.mean("ERR@10") == math.fsum([0.01562, 0.04688, 0.10938]) / 3
    full = res.to_dict()["measures"][0]["full"]
    assert full.endswith(",printed_decimals=5)@10"), full


def test_gdeval_prints_the_same_halves(perl, tmp_path):
    """gdeval.pl itself on the same files: the five decimals it prints are the profile's values."""
    pytest.importorskip("ir_measures")
    script = tmp_path / "gdeval.pl"
    script.write_bytes(pkgutil.get_data("ir_measures", "bin/gdeval.pl") or b"")
    qrels, run = _files(tmp_path)
    out = subprocess.run([perl, str(script), str(qrels), str(run), "10"], capture_output=True, check=True)
    lines = out.stdout.decode().splitlines()[1:]
    assert [line.split(",")[3] for line in lines] == ["0.01562", "0.04688", "0.10938"]
    res = CLI("eval", "--profile", "gdeval", qrels, run, "-m", "ERR@10", "-q", "-f", "json")
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    values = {q: v["ERR@10"] for q, v in payload["results"]["per_query"]["t"].items()}
    assert values == {"101": 0.01562, "102": 0.04688, "103": 0.10938}
    assert payload["conventions"]["printed_decimals"] == "5"


@pytest.mark.parametrize("bad", ["18", "-1", "five", "2.5"])
def test_printed_decimals_out_of_range_is_refused(bad):
    with pytest.raises(ConventionError, match="printed_decimals"):
        Conventions(printed_decimals=bad)


def test_printed_decimals_on_the_command_line(tmp_path):
    qrels, run = _files(tmp_path)
    res = CLI(
        "eval",
        qrels,
        run,
        "-m",
        "ERR@10",
        "--ties",
        "docid_desc",
        "--printed-decimals",
        "5",
        "-q",
        "-f",
        "tsv",
    )
    assert res.exit_code == 0, res.output
    rows = [line.split("\t") for line in res.stdout.splitlines() if line and not line.startswith("#")]
    assert ["t", "101", "ERR@10", "0.01562"] in rows and ["t", "102", "ERR@10", "0.04688"] in rows, rows
    bad = CLI("eval", qrels, run, "-m", "ERR@10", "--printed-decimals", "x")
    assert bad.exit_code != 0
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "printed_decimals 'x'" in lines[0], bad.stderr
