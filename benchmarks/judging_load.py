"""The judging app under load: 20 labellers post 10,000 grades as fast as a real server answers.

    python benchmarks/judging_load.py --src src --src /tmp/before/src --repeat 3

The same load as ``tests/app/test_load.py`` (100 queries x 25 documents spread over 20 labellers, each
signed in by an invite link, each posting its grades one after the other with ``accept: application/json``)
against ``qrelkit judge serve`` in its own process, WAL with ``synchronous=FULL``, every grade acknowledged
only after its COMMIT. Each ``--src`` is a source tree (``PYTHONPATH`` for the server, so an older checkout
can be measured beside this one); the trees alternate, a fresh project each run, ``--repeat`` runs each.
Reported per tree: the medians over the runs of p50, p90, p99 and max latency of a grade and of grades per
second, and the server process's CPU time per grade (all its threads, from ``/proc``: the figure other
work on the machine inflates least), with the 1-minute load average before and after. The clients run in
this process, on the same machine: the ratios between trees, taken in one invocation, are what compare.
``--grades`` makes the load smaller (a multiple of 20).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

LABELLERS, TOTAL, QUERIES, DOCS = 20, 10_000, 100, 25
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
RUBRIC = Path(__file__).resolve().parent.parent / "tests" / "app" / "fixtures" / "rubric.toml"  # the test's


def _qrelkit(src: Path, code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{src}: {done.stderr.strip().splitlines()[-1]}")
    return done.stdout


MAKE = """\
import json, sys
from pathlib import Path
from qrelkit.app.project import create_invite, init_project
from qrelkit.app.store import Store
tmp, names = Path(sys.argv[1]), [f"labeller{i:02d}" for i in range(int(sys.argv[2]))]
init_project(tmp / "load.db", rubric=tmp / "rubric.toml", pool=tmp / "pool.jsonl", docs=tmp / "docs.jsonl",
             queries=tmp / "queries.tsv", labellers=names, seed=11, no_calibration=True)
with Store(tmp / "load.db") as store:
    print(json.dumps({n: create_invite(store, n) for n in names}))
"""


def make_project(src: Path, tmp: Path) -> dict[str, str]:
    """The project's files in ``tmp`` and its database made by the tree ``src``; the invite tokens."""
    docs = [f"doc{i:02d}" for i in range(DOCS)]
    (tmp / "rubric.toml").write_text(RUBRIC.read_text())
    (tmp / "docs.jsonl").write_text(
        "".join(
            json.dumps({"doc_id": d, "title": f"Title {d}", "text": f"Text of {d}. " * 20}) + "\n"
            for d in docs
        )
    )
    (tmp / "queries.tsv").write_text("".join(f"q{i:03d}\tquery number {i}\n" for i in range(QUERIES)))
    (tmp / "pool.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "query_id": f"q{i:03d}",
                    "doc_id": d,
                    "runs": {"r": r + 1},
                    "best_rank": r + 1,
                    "judged": False,
                }
            )
            + "\n"
            for i in range(QUERIES)
            for r, d in enumerate(docs)
        )
    )
    tokens: dict[str, str] = json.loads(_qrelkit(src, MAKE, str(tmp), str(LABELLERS)))
    return tokens


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _labeller(url: str, token: str, n: int, seed: int, go: threading.Event, out: list[float]) -> None:
    import httpx

    with httpx.Client(base_url=url, timeout=60) as client:
        page = client.get(f"/invite/{token}")
        client.post(f"/invite/{token}", data={"csrf_token": CSRF.search(page.text).group(1)})  # type: ignore[union-attr]
        csrf = CSRF.search(client.get("/label", follow_redirects=True).text).group(1)  # type: ignore[union-attr]
        go.wait()
        for i in range(n):
            data = {"csrf_token": csrf, "grade": str((i * 7 + seed) % 4), "elapsed_ms": str(1000 + i)}
            start = time.perf_counter()
            r = client.post(f"/label/{i % 125}", data=data, headers={"accept": "application/json"})
            out.append(time.perf_counter() - start)
            if r.status_code != 200:
                raise SystemExit(f"grade refused: {r.status_code} {r.text[:200]}")


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux ``/proc``): what the server spent, which
    other work on the machine does not inflate the way it inflates latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(src: Path, total: int = TOTAL) -> dict[str, float]:
    """One load run against a server of the tree ``src``: latency quantiles (ms) and grades per second."""
    import httpx

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        tokens = make_project(src, tmp)
        port = _free_port()
        env = {**os.environ, "PYTHONPATH": str(src)}
        cmd = [sys.executable, "-m", "qrelkit", "judge", "serve", str(tmp / "load.db"), "--port", str(port)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{src}: the judging server did not start")
                time.sleep(0.05)
            go, outs = threading.Event(), [[] for _ in range(LABELLERS)]  # type: list[list[float]]
            threads = [
                threading.Thread(
                    target=_labeller, args=(url, tokens[name], total // LABELLERS, k, go, outs[k])
                )
                for k, name in enumerate(sorted(tokens))
            ]
            for t in threads:
                t.start()
            time.sleep(1.0)  # every labeller signed in
            start, cpu = time.perf_counter(), _cpu_seconds(proc.pid)
            go.set()
            for t in threads:
                t.join()
            wall, cpu = time.perf_counter() - start, _cpu_seconds(proc.pid) - cpu
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    latencies = sorted(x for out in outs for x in out)
    if len(latencies) != total:
        raise SystemExit(f"{src}: {len(latencies)} of {total} grades answered")
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return {"p50": q[49] * 1000, "p90": q[89] * 1000, "p99": q[98] * 1000, "max": latencies[-1] * 1000,
            "grades/s": total / wall,
            "server CPU ms/grade": cpu * 1000 / total}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, action="append", required=True, help="a source tree (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--grades", type=int, default=TOTAL, help=f"grades in all (default {TOTAL:,})")
    args = parser.parse_args(argv)
    loads = [os.getloadavg()[0]]
    runs: dict[Path, list[dict[str, float]]] = {src: [] for src in args.src}
    for _ in range(args.repeat):
        for src in args.src:
            runs[src].append(one_run(src.resolve(), args.grades))
            print(f"{src}: {json.dumps({k: round(v, 1) for k, v in runs[src][-1].items()})}", file=sys.stderr)
    loads.append(os.getloadavg()[0])
    keys = ["p50", "p90", "p99", "max", "grades/s", "server CPU ms/grade"]
    print(f"### judging load: {LABELLERS} labellers, {args.grades:,} grades; median of {args.repeat} runs; "
          f"{os.cpu_count()} cores; 1-minute load average {min(loads):.1f}-{max(loads):.1f}\n")  # fmt: skip
    print("| source | " + " | ".join(f"{k} (ms)" if k[0] in "pm" else k for k in keys) + " |")
    print("|---|" + "---|" * len(keys))
    for src, found in runs.items():
        cells = [f"{statistics.median(r[k] for r in found):.{2 if 'CPU' in k else 1}f}" for k in keys]
        print(f"| {src} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
