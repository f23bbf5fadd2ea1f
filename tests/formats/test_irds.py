"""Datasets by name (``irds:ID``) through the real ir_datasets package, offline: the dataset's files are
placed in ir_datasets' home folder (``IR_DATASETS_HOME``, a temporary folder) as a user who downloaded
them has them, from the TREC DL 2019 judgments and topics in tests/data/trec.

ir_datasets fixes each dataset's folder when it is first imported, so every case runs in a fresh Python
process with its own home. The expected values come from the text files themselves, read here with plain
Python (rows, query texts, MD5 and SHA-256), never from qrelkit's readers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from ..conftest import data_path

pytest.importorskip("ir_datasets")

DL19 = "msmarco-passage/trec-dl-2019/judged"
ROOT = Path(__file__).resolve().parents[2]


def dl19_rows() -> list[tuple[str, str, int]]:
    """(query, doc, grade) of the DL 2019 passage judgments, read with str.split."""
    out = []
    for line in data_path("trec", "qrels.dl19-passage.txt").read_text().splitlines():
        query, _, doc, grade = line.split()
        out.append((query, doc, int(grade)))
    return out


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """IR_DATASETS_HOME with the DL 2019 passage judgments and topics where ir_datasets keeps them: the
    judgments under their cache name ``msmarco-passage/trec-dl-2019/qrels`` (downloads.json), the queries
    as the extracted ``trec-dl-2019/queries.tsv`` ir_datasets caches (msmarco_passage.py)."""
    root = tmp_path / "irds-home"
    (root / "msmarco-passage" / "trec-dl-2019").mkdir(parents=True)
    shutil.copy(data_path("trec", "qrels.dl19-passage.txt"), root / "msmarco-passage/trec-dl-2019/qrels")
    shutil.copy(
        data_path("trec", "topics.dl19-passage.txt"), root / "msmarco-passage/trec-dl-2019/queries.tsv"
    )
    return root


def env_for(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["IR_DATASETS_HOME"] = str(home)
    env["IR_DATASETS_TMP"] = str(home.parent / "irds-tmp")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def run_python(home: Path, body: str, timeout: float = 120) -> Any:
    """Run ``body`` in a fresh interpreter with ``home`` as ir_datasets' home; it prints one JSON value
    (``out(...)``), which is returned. An error qrelkit raises is returned as ``{"error": message}``."""
    script = textwrap.dedent(
        """
        import json, sys
        from qrelkit.errors import QrelkitError
        def out(value):
            print(json.dumps(value))
        try:
        {body}
        except QrelkitError as exc:
            out({{"error": str(exc)}})
        """
    ).format(body=textwrap.indent(textwrap.dedent(body), "    "))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env_for(home), timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_judgments_by_name_are_the_file_rows_with_the_files_recorded(home: Path) -> None:
    got = run_python(
        home,
        f"""
        from qrelkit.formats import read_qrels
        q = read_qrels("irds:{DL19}")
        rows = sorted(q.frame.select("query_id", "doc_id", "grade").iter_rows())
        out({{"rows": rows, "name": q.name, "fp": q.fingerprint.to_dict(), "dataset": q.meta["dataset"]}})
        """,
    )
    assert got["rows"] == [list(r) for r in sorted(dl19_rows())]
    assert len(got["rows"]) == 9260  # tests/data/trec/README.md
    assert got["name"] == f"irds:{DL19}"
    raw = data_path("trec", "qrels.dl19-passage.txt").read_bytes()
    assert got["fp"]["sha256"] == hashlib.sha256(raw).hexdigest()
    dataset = got["dataset"]
    assert dataset["id"] == DL19 and dataset["entity"] == "qrels"
    import ir_datasets

    assert dataset["ir_datasets"] == ir_datasets.__version__
    assert dataset["home"] == str(home)
    (file,) = dataset["files"]
    assert file["path"] == "msmarco-passage/trec-dl-2019/qrels"
    assert file["bytes"] == len(raw)
    assert file["sha256"] == hashlib.sha256(raw).hexdigest()
    # the MD5 ir_datasets documents for NIST's 2019qrels-pass.txt (its downloads.json), and the file's own
    assert file["expected_md5"] == "2f4be390198da108f6845c822e5ada14"
    assert file["md5"] == hashlib.md5(raw).hexdigest() == file["expected_md5"]
    assert file["matches_expected"] is True


def test_judgments_read_through_ir_datasets_iterator(home: Path) -> None:
    """A dataset whose judgments are not one plain TREC file (a filter over another's, built from
    ir_datasets' own classes) is read from ``qrels_iter()``: the same rows as the filtered text."""
    got = run_python(
        home,
        f"""
        import ir_datasets
        from ir_datasets.datasets.base import Dataset, FilteredQrels
        from ir_datasets.util import Lazy
        base = ir_datasets.load("{DL19}").qrels_handler()
        keep = Lazy(lambda: {{"1037798", "104861"}})
        ir_datasets.registry.register("qrelkit-test/two-queries", Dataset(FilteredQrels(base, keep)))
        from qrelkit.formats import read_qrels
        q = read_qrels("irds:qrelkit-test/two-queries")
        out({{"rows": sorted(q.frame.select("query_id", "doc_id", "grade").iter_rows()),
              "kind": q.fingerprint.kind, "files": q.meta["dataset"]["files"]}})
        """,
    )
    expected = sorted(r for r in dl19_rows() if r[0] in {"1037798", "104861"})
    assert got["rows"] == [list(r) for r in expected]
    assert got["kind"] == "canonical-rows"
    assert [f["path"] for f in got["files"]] == ["msmarco-passage/trec-dl-2019/qrels"]


def test_queries_by_name(home: Path) -> None:
    got = run_python(
        home,
        f"""
        from qrelkit.formats.irds import read_dataset_queries
        queries, info = read_dataset_queries("irds:{DL19}")
        out({{"queries": queries, "files": info.to_dict()["files"]}})
        """,
    )
    expected = dict(
        line.split("\t", 1) for line in data_path("trec", "topics.dl19-passage.txt").read_text().splitlines()
    )
    assert got["queries"] == {q: " ".join(t.split()) for q, t in expected.items()}
    assert len(got["queries"]) == 43
    assert "msmarco-passage/trec-dl-2019/queries.tsv" in [f["path"] for f in got["files"]]


def test_not_downloaded_is_one_line_naming_the_download_command(home: Path) -> None:
    got = run_python(
        home,
        """
        from qrelkit.formats import read_qrels
        read_qrels("irds:msmarco-passage/trec-dl-2020/judged")
        out("read")
        """,
    )
    message = got["error"]
    assert "\n" not in message
    assert message.startswith("irds:msmarco-passage/trec-dl-2020/judged: the qrels of dataset")
    assert "not downloaded" in message
    assert "`ir_datasets export msmarco-passage/trec-dl-2020/judged qrels > /dev/null`" in message
    assert str(home / "msmarco-passage/trec-dl-2020/qrels") in message
    assert not (home / "msmarco-passage/trec-dl-2020/qrels").exists()  # nothing fetched


def test_unknown_id_names_the_closest(home: Path) -> None:
    got = run_python(home, f'from qrelkit.formats import read_qrels\nread_qrels("irds:{DL19[:-1]}")\nout(1)')
    assert got["error"] == (
        f"irds:{DL19[:-1]}: no dataset {DL19[:-1]!r} in ir_datasets {__import__('ir_datasets').__version__}. "
        f"Fix: did you mean irds:{DL19} or irds:msmarco-passage/trec-dl-2020/judged or "
        "irds:msmarco-passage-v2/trec-dl-2021/judged?"
    )
    assert run_python(home, 'from qrelkit.formats import read_qrels\nread_qrels("irds:")\nout(1)')[
        "error"
    ].startswith("irds:: no dataset id after irds:")


def test_a_dataset_without_the_entity(home: Path) -> None:
    got = run_python(
        home,
        """
        import ir_datasets
        from ir_datasets.datasets.base import Dataset
        base = ir_datasets.load("msmarco-passage/trec-dl-2019/judged").qrels_handler()
        ir_datasets.registry.register("qrelkit-test/qrels-only", Dataset(base))
        from qrelkit.formats.irds import read_dataset_queries
        read_dataset_queries("irds:qrelkit-test/qrels-only")
        out(1)
        """,
    )
    assert got["error"] == (
        "irds:qrelkit-test/qrels-only: dataset 'qrelkit-test/qrels-only' has no queries. Fix: name a dataset "
        "that provides queries (its page on ir-datasets.com lists what it provides)"
    )


class SilentServer:
    """A TCP server on loopback that accepts connections and never answers: an HTTP client that reached
    it would wait for its timeout. ``accepted`` counts the connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self.held.append(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.sock.close()


def test_a_download_hidden_from_the_check_never_reaches_the_network(home: Path) -> None:
    """A dataset whose download is out of sight of the check before reading (built lazily, inside a class
    of no ir_datasets module) would reach the network when read: qrelkit closes ir_datasets' network
    sources while it reads, so the read fails at once with the not-downloaded error and the server, which
    would have kept the client waiting, sees no connection."""
    server = SilentServer()
    try:
        got = run_python(
            home,
            f"""
            import ir_datasets
            from ir_datasets.datasets.base import Dataset
            from ir_datasets.formats import BaseQrels, TrecQrels
            from ir_datasets.util import Lazy
            from ir_datasets.util.download import Download, RequestsDownload

            class Hidden(BaseQrels):
                def __init__(self):
                    url = "http://127.0.0.1:{server.port}/qrels"
                    self.inner = Lazy(lambda: TrecQrels(Download([RequestsDownload(url)]), {{}}))
                def qrels_iter(self):
                    return self.inner().qrels_iter()

            ir_datasets.registry.register("qrelkit-test/hidden", Dataset(Hidden()))
            from qrelkit.formats import read_qrels
            read_qrels("irds:qrelkit-test/hidden")
            out("read")
            """,
            timeout=60,
        )
    finally:
        server.close()
    assert server.accepted == 0
    assert got["error"].startswith("irds:qrelkit-test/hidden: the qrels of dataset 'qrelkit-test/hidden' are")
    assert f"http://127.0.0.1:{server.port}/qrels" in got["error"]


def test_without_the_package_one_line_names_the_extra(tmp_path: Path) -> None:
    """ir_datasets made unimportable in that process (``sys.modules`` entry ``None``)."""
    got = run_python(
        tmp_path,
        """
        sys.modules["ir_datasets"] = None
        from qrelkit.formats import read_qrels
        read_qrels("irds:msmarco-passage/trec-dl-2019/judged")
        out(1)
        """,
    )
    assert got["error"] == (
        "irds:msmarco-passage/trec-dl-2019/judged: a dataset name (irds:ID) needs the ir-datasets package, "
        "which is not installed. Fix: install the extra: pip install 'qrelkit[irds]' (the ir-datasets package)"
    )


def test_a_file_path_never_imports_ir_datasets(tmp_path: Path) -> None:
    got = run_python(
        tmp_path,
        f"""
        from qrelkit.formats import read_qrels
        read_qrels({str(data_path("trec", "qrels.dl19-passage.txt"))!r})
        out("ir_datasets" in sys.modules)
        """,
    )
    assert got is False


def test_judgments_from_the_iterator_are_bounded(home: Path) -> None:
    """The bound on judgments read from ``qrels_iter()``, lowered in that process to 100 (the real one,
    50,000,000, is what the largest public sets need with room to spare)."""
    got = run_python(
        home,
        f"""
        import ir_datasets
        from ir_datasets.datasets.base import Dataset, FilteredQrels
        from ir_datasets.util import Lazy
        base = ir_datasets.load("{DL19}").qrels_handler()
        ir_datasets.registry.register(
            "qrelkit-test/one-query", Dataset(FilteredQrels(base, Lazy(lambda: {{"1037798"}})))
        )
        import qrelkit.formats.irds as irds
        irds.MAX_ROWS = 100
        from qrelkit.formats import read_qrels
        read_qrels("irds:qrelkit-test/one-query")
        out("read")
        """,
    )
    assert sum(1 for r in dl19_rows() if r[0] == "1037798") > 100  # so the bound is what stops it
    assert got["error"] == (
        "irds:qrelkit-test/one-query: dataset has more than 100 judgments, the bound for a dataset read by "
        "name. Fix: export them to a file (`ir_datasets export qrelkit-test/one-query qrels > judgments.qrels`) "
        "and pass it"
    )


def test_queries_kept_only_extracted_name_where_the_extracted_file_goes(home: Path) -> None:
    """ir_datasets keeps the DL 2019 queries only as the extracted ``queries.tsv`` (their .gz is not
    kept): without it the error names that file and what goes there."""
    (home / "msmarco-passage/trec-dl-2019/queries.tsv").unlink()
    got = run_python(
        home,
        f"""
        from qrelkit.formats.irds import read_dataset_queries
        read_dataset_queries("irds:{DL19}")
        out("read")
        """,
    )
    place = home / "msmarco-passage/trec-dl-2019/queries.tsv"
    assert got["error"] == (
        f"irds:{DL19}: the queries of dataset '{DL19}' are not downloaded ({place} is missing). Fix: download "
        f"them once, with network access: `ir_datasets export {DL19} queries > /dev/null`, or place the "
        "extracted content of https://msmarco.z22.web.core.windows.net/msmarcoranking/msmarco-test2019-queries"
        f".tsv.gz at {place} (IR_DATASETS_HOME sets the folder)"
    )
    assert not place.exists()


@pytest.mark.parametrize(("name", "problem"), [("file", "is not a folder"), ("file/below", "cannot be used")])
def test_a_home_that_is_not_a_folder_is_one_line_naming_the_variable(tmp_path: Path, name: str,
                                                                      problem: str) -> None:  # fmt: skip
    (tmp_path / "file").write_text("not a folder\n")
    home = tmp_path / name
    run = tmp_path / "run.txt"
    run.write_text("19335 Q0 1017759 1 1.0 r\n")
    proc = subprocess.run([sys.executable, "-m", "qrelkit", "eval", "irds:msmarco-passage/trec-dl-2019/judged",
                           str(run)], capture_output=True, text=True, env=env_for(home), timeout=120)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"IR_DATASETS_HOME is '{home}', which {problem}" in lines[0]
    assert "Fix: set IR_DATASETS_HOME to the folder" in lines[0]
