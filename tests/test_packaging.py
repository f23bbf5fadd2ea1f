"""What users install: the sdist and the wheel, built as ``make dist`` builds them, each installed into a
fresh virtual environment outside the source tree and run on the bundled example.

The wheel (with the native scanner when a C compiler is found) and the sdist installed with no C compiler on
PATH (the build says the scanner was skipped) must give the numbers the source tree gives: eval, explain,
compare where the command exists, pool and judge init. The wheel's contents are listed against the files it
should hold, and the judging app serves its templates and static files from the installed package.

Building and installing takes a minute or two: ``make test`` runs these with the rest, ``make dist-check``
runs only these, and ``pytest -m "not dist"`` leaves them out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import threading
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from qrelkit._version import __version__

from .conftest import EXAMPLE, ROOT

pytestmark = [pytest.mark.dist, pytest.mark.slow]

PACKAGE = ROOT / "src" / "qrelkit"
# the native scanner's sources, which the sdist must hold to build the library
NATIVE_SOURCES = ("qkscan.h", "lex.c", "result.c", "scan.c", "split.c", "top.c", "trec_rank.c")
# hatch_build.py's warning when it builds no native scanner
SKIPPED = "qrelkit: the native scanner was not built (no working C compiler)"
# where hatch_build.py looks for a compiler, in its order (CC first)
COMPILERS = [sysconfig.get_config_var("CC"), "cc", "gcc", "clang"]
# variables of this test run that a user's shell does not have
PRIVATE = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "QRELKIT_NATIVE", "CC", "PYTHONSTARTUP")


def user_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PRIVATE and not k.startswith("PYTEST")}
    return {**env, **extra}


def run(args: list[object], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a command to completion, or fail showing what it printed."""
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode != 0:
        shown = " ".join(shlex.quote(str(a)) for a in args)
        pytest.fail(f"{shown} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def stdout(args: list[object], cwd: Path, env: dict[str, str]) -> str:
    return run(args, cwd, env).stdout


def log(args: list[object], cwd: Path, env: dict[str, str]) -> str:
    proc = run(args, cwd, env)
    return proc.stdout + proc.stderr


def compiler_on(path: str | None) -> str | None:
    """The first compiler hatch_build.py would find on ``path`` (None: the build has none)."""
    for command in COMPILERS:
        if command and shutil.which(shlex.split(command)[0], path=path):
            return command
    return None


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path
    log: str


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel as ``make dist`` builds them (the wheel from the sdist)."""
    out = tmp_path_factory.mktemp("dist")
    built = log([sys.executable, "-m", "build", "--outdir", out, ROOT], out, user_env())
    (sdist,) = out.glob("qrelkit-*.tar.gz")
    (wheel,) = out.glob("qrelkit-*.whl")
    return Dists(sdist, wheel, built)


def fresh_env(where: Path) -> Path:
    """A new virtual environment (outside the source tree); its bin directory."""
    run([sys.executable, "-m", "venv", where], where.parent, user_env())
    return where / "bin"


def example_copy(tmp: Path) -> Path:
    work = tmp / "docsearch"
    shutil.copytree(EXAMPLE, work)
    return work


def example_outputs(qrelkit: list[object], work: Path, env: dict[str, str], commands: str) -> dict[str, str]:
    """The example run end to end by the ``qrelkit`` command ``qrelkit`` (in ``work``, a copy of the example):
    what each step prints."""
    runs = sorted(str(p.relative_to(work)) for p in (work / "runs").glob("*.run"))
    measures = ["-m", "nDCG@10", "-m", "R@100", "-m", "Judged@10", "-m", "AP"]
    steps: dict[str, list[object]] = {
        "eval": ["eval", "qrels.txt", *runs, *measures, "-f", "json"],
        "explain": ["explain", "qrels.txt", "runs/rerank.run", "--query", "q01", "-f", "json"],
        "pool": ["pool", *runs, "--depth", "10", "--labellers", "alice,bob", "--calibration", "2",
                 "--seed", "0", "-o", "pool.jsonl"],
        "judge init": ["judge", "init", "project.db", "--rubric", "rubric.toml", "--pool", "pool.jsonl",
                       "--docs", "docs.jsonl", "--queries", "queries.tsv", "--seed", "0"],
        "judge status": ["judge", "status", "project.db"],
    }  # fmt: skip
    if re.search(r"^\s+compare\s", commands, re.M):
        steps["compare"] = ["compare", "qrels.txt", *runs, "--permutations", "2000", "-f", "json"]
    return {name: stdout([*qrelkit, *args], work, env) for name, args in steps.items()}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The example run by the qrelkit these tests import (the source tree)."""
    qrelkit = [sys.executable, "-m", "qrelkit"]
    env = {**os.environ}
    env.pop("QRELKIT_NATIVE", None)
    commands = stdout([*qrelkit, "--help"], ROOT, env)
    return example_outputs(qrelkit, example_copy(tmp_path_factory.mktemp("tree")), env, commands)


def assert_same_numbers(got: dict[str, str], want: dict[str, str]) -> None:
    assert got.keys() == want.keys()
    a, b = json.loads(got["eval"]), json.loads(want["eval"])
    assert a["results"] == b["results"]  # every float to the last bit
    for key in ("tool", "measures", "conventions", "qrels"):
        assert a[key] == b[key], key
    assert [r["fingerprint"] for r in a["runs"]] == [r["fingerprint"] for r in b["runs"]]
    assert json.loads(got["explain"]) == json.loads(want["explain"])
    if "compare" in want:
        assert json.loads(got["compare"]) == json.loads(want["compare"])
    for step in ("pool", "judge init", "judge status"):
        assert got[step] == want[step], step


def installed_file(bin_dir: Path, cwd: Path, env: dict[str, str]) -> Path:
    code = "import qrelkit; print(qrelkit.__file__)"
    return Path(stdout([bin_dir / "python", "-c", code], cwd, env).strip())


# ------------------------------------------------------------------------------------------------ the wheel


def expected_wheel_files(native: bool) -> set[str]:
    """Every file of the package in the source tree (modules, templates, static files, py.typed), the native
    library when it was built, and the metadata; never the scanner's C sources and header, caches or anything
    outside src/qrelkit (tests, benchmarks and their data, examples, docs)."""
    files = set()
    for path in PACKAGE.rglob("*"):
        rel = path.relative_to(PACKAGE.parent)
        if path.is_dir() or "__pycache__" in rel.parts or path.suffix in (".pyc", ".c", ".h"):
            continue
        if path.name.startswith("_qkscan."):
            continue  # the library the build makes (a copy may sit in the tree): added below when built
        files.add(rel.as_posix())
    if native:
        files.add("qrelkit/_native/_qkscan.so")
    info = f"qrelkit-{__version__}.dist-info"
    return (
        files
        | {f"{info}/{name}" for name in ("METADATA", "WHEEL", "RECORD", "entry_points.txt")}
        | {f"{info}/licenses/LICENSE"}
    )


def test_the_wheel_holds_the_package_and_nothing_else(dists: Dists) -> None:
    native = compiler_on(os.environ.get("PATH")) is not None
    with zipfile.ZipFile(dists.wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"qrelkit-{__version__}.dist-info/METADATA").decode()
    assert names == expected_wheel_files(native)
    # the parts that a missing package-data rule would drop without any import failing
    for name in (
        "py.typed",
        "app/templates/label.html",
        "app/static/app.css",
        "app/static/label.js",
    ):
        assert f"qrelkit/{name}" in names
    assert (SKIPPED in dists.log) is not native
    if native:
        # a compiled library makes a platform wheel (hatch_build.py: pure_python False, infer_tag)
        assert not dists.wheel.name.endswith("-none-any.whl")
    assert f"Version: {__version__}\n" in metadata
    assert "License-Expression: Apache-2.0\n" in metadata


def test_the_sdist_holds_the_sources_and_no_build_products(dists: Dists) -> None:
    top = f"qrelkit-{__version__}"
    with tarfile.open(dists.sdist) as archive:
        names = {n.removeprefix(f"{top}/") for n in archive.getnames()}
    native = [f"src/qrelkit/_native/{name}" for name in NATIVE_SOURCES]
    for name in ("LICENSE", "CHANGELOG.md", "CONTRIBUTING.md", "README.md", "pyproject.toml", "hatch_build.py",
                 *native, "src/qrelkit/py.typed", "examples/docsearch/qrels.txt"):  # fmt: skip
        assert name in names, name
    built = [n for n in names if "__pycache__" in n or "_qkscan." in n or n.startswith((".venv", "dist/"))]
    assert not built
    assert not [n for n in names if n.startswith(("benchmarks/data/", "benchmarks/out/", ".mypy_cache"))]


def test_the_wheel_runs_the_example_outside_the_tree(
    dists: Dists, tree: dict[str, str], tmp_path: Path
) -> None:
    bin_dir = fresh_env(tmp_path / "env")
    env = user_env()
    wheel = f"qrelkit[web] @ {dists.wheel.as_uri()}"
    run([bin_dir / "python", "-m", "pip", "install", "-q", wheel], tmp_path, env)
    installed = installed_file(bin_dir, tmp_path, env)
    assert installed.is_relative_to(tmp_path / "env") and not installed.is_relative_to(ROOT)

    version = stdout([bin_dir / "qrelkit", "--version"], tmp_path, env).splitlines()
    assert version[0] == f"qrelkit {__version__}"
    assert version[1].startswith("Python ")
    native = compiler_on(os.environ.get("PATH")) is not None
    assert version[2].startswith("native scanner: in use" if native else "native scanner: not built")
    off = stdout([bin_dir / "qrelkit", "--version"], tmp_path, {**env, "QRELKIT_NATIVE": "0"})
    assert "native scanner: not in use (turned off: QRELKIT_NATIVE=0)" in off

    commands = stdout([bin_dir / "qrelkit", "--help"], tmp_path, env)
    work = example_copy(tmp_path)
    assert_same_numbers(example_outputs([bin_dir / "qrelkit"], work, env, commands), tree)
    serves_its_pages(bin_dir, work, env, installed.parent)


def serves_its_pages(bin_dir: Path, work: Path, env: dict[str, str], package: Path) -> None:
    """``judge serve`` from the installed package renders a page from its templates and serves its static
    files (the ones installed, byte for byte)."""
    server = subprocess.Popen(
        [bin_dir / "qrelkit", "judge", "serve", "project.db", "--port", "0"],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(120, server.kill)  # a server that never announces fails, not hangs
    watchdog.start()
    try:
        assert server.stderr is not None
        seen = []
        for line in server.stderr:
            seen.append(line)
            if line.startswith("serving "):
                break
        found = re.search(r" on (http://\S+) ", seen[-1] if seen else "")
        assert found, "".join(seen)
        base = found.group(1)
        with urllib.request.urlopen(f"{base}/", timeout=30) as page:
            html = page.read().decode()
        assert page.status == 200 and "<html" in html.lower()
        with urllib.request.urlopen(f"{base}/static/app.css", timeout=30) as css:
            assert css.read() == (package / "app" / "static" / "app.css").read_bytes()
    finally:
        watchdog.cancel()
        server.terminate()
        server.wait(timeout=30)


# ------------------------------------------------------------------------------- the sdist, no C compiler


def test_the_sdist_installs_without_a_c_compiler_and_gives_the_same_numbers(
    dists: Dists, tree: dict[str, str], tmp_path: Path
) -> None:
    bin_dir = fresh_env(tmp_path / "env")
    path = str(bin_dir)  # the new environment's python and pip, and nothing else
    assert compiler_on(path) is None, f"{compiler_on(path)} is found on any PATH: the test cannot hide it"
    env = user_env(PATH=path)
    installing = log([bin_dir / "python", "-m", "pip", "install", "-v", dists.sdist], tmp_path, env)
    assert SKIPPED in installing  # the build went on and said so

    installed = installed_file(bin_dir, tmp_path, env)
    assert installed.is_relative_to(tmp_path / "env")
    assert not list((installed.parent / "_native").glob("_qkscan.*"))
    version = stdout([bin_dir / "qrelkit", "--version"], tmp_path, env)
    assert "native scanner: not built (no C compiler when qrelkit was installed)" in version

    commands = stdout([bin_dir / "qrelkit", "--help"], tmp_path, env)
    assert_same_numbers(example_outputs([bin_dir / "qrelkit"], example_copy(tmp_path), env, commands), tree)
