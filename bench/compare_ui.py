"""The UI pages of several versions of the code on the same catalog, timed in turn: before and after a change.

Each backend gets one catalog filled as :mod:`bench.bench_ui` fills it (``--tasks``, ``--decisions``); each
version (a git commit, checked out in a temporary worktree, or ``.``: this tree) gets a copy of it upgraded
by its own migrations, and serves its own app (login checks replaced once, as in ``bench_ui``) in a process
of its own. Every endpoint is then requested from each version in turn, ``--repeat`` times, the order
rotating, so that all versions meet the machine in the same state; an endpoint a version does not have
(404) is left out for it.

Run::

    .venv/bin/python -m bench.compare_ui --version before=COMMIT --version after=. --backend sqlite \\
        --backend postgres [--json PATH]
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parent.parent
SERVE = """
import importlib.util
import sys
import uvicorn
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.www.access import READ_TASK_INSTANCES, READ_TASKS, readable_dags
from airflow_leastaction.www.app import create_app
from airflow_leastaction.www.reads import DagScope  # every version compared has it there

url, port, bench_ui = sys.argv[1], int(sys.argv[2]), sys.argv[3]
spec = importlib.util.spec_from_file_location("la_bench_ui", bench_ui)  # this tree's, not the version's
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
get_engine(url, migrate=False)
app = create_app(url)
stubs = {READ_TASK_INSTANCES.dependency: lambda: None, READ_TASKS.dependency: lambda: None,
         readable_dags: lambda: DagScope(None)}
module.without_login(app, stubs)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, timeout_keep_alive=3600)
"""
UPGRADE = (
    "import sys; from sqlalchemy import create_engine, text; "
    "from airflow_leastaction.catalog.migrate import upgrade; e = create_engine(sys.argv[1]); upgrade(e); "
    "c = e.connect(); c.execute(text('ANALYZE')); c.commit()"
)


def checkout(commit: str, keep: list) -> Path:
    """This tree for ``.``, else a temporary worktree at ``commit`` (removed at the end)."""
    if commit == ".":
        return ROOT
    where = Path(tempfile.mkdtemp(prefix="la-compare-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), commit], check=True)

    def remove():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)])
        shutil.rmtree(where.parent, ignore_errors=True)

    keep.append(remove)
    return where


def copy_of(url: str, keep: list) -> str:
    """A copy of the catalog at ``url`` (a file copy, or a PostgreSQL database made from it as a template)."""
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        new = path.with_name(f"{path.stem}-{uuid.uuid4().hex[:6]}.db")
        shutil.copy(path, new)
        keep.append(lambda: new.unlink(missing_ok=True))
        return f"sqlite:///{new}"
    base, name = url.rsplit("/", 1)
    new = f"la_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{new}" TEMPLATE "{name}"'))

    def drop():
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{new}" WITH (FORCE)'))
        admin.dispose()

    keep.append(drop)
    return f"{base}/{new}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(tree: Path, url: str, keep: list) -> int:
    """The port of a server of ``tree``'s app on ``url``, once it answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    bench_ui = str(ROOT / "bench" / "bench_ui.py")
    proc = subprocess.Popen([sys.executable, "-c", SERVE, url, str(port), bench_ui], cwd=tree, env=env)
    keep.append(lambda: (proc.terminate(), proc.wait(timeout=60)))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            get(http.client.HTTPConnection("127.0.0.1", port, timeout=600), "/queue")
            return port
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the server of {tree} exited with status {proc.returncode}") from None
            time.sleep(1)
    raise RuntimeError(f"the server of {tree} did not answer within 300 s")


def get(conn: http.client.HTTPConnection, path: str) -> tuple[float, int]:
    start = time.perf_counter()
    conn.request("GET", path)
    response = conn.getresponse()
    response.read()
    return (time.perf_counter() - start) * 1000, response.status


def time_in_turn(ports: dict[str, int], paths: list[tuple[str, str]], repeat: int) -> list[dict]:
    conns = {label: http.client.HTTPConnection("127.0.0.1", port, timeout=600) for label, port in ports.items()}
    labels = list(ports)
    out = []
    for endpoint, path in paths:
        served = [v for v in labels if get(conns[v], path)[1] == 200]  # also a warm-up request
        samples: dict[str, list[float]] = {v: [] for v in served}
        for r in range(repeat):
            for v in served[r % len(served) :] + served[: r % len(served)]:
                ms, status = get(conns[v], path)
                assert status == 200, (v, path, status)
                samples[v].append(round(ms, 3))
        out.append({"endpoint": endpoint, "ms": samples})
        print(endpoint, {v: sorted(s)[len(s) // 2] for v, s in samples.items()}, flush=True)
    return out


def run_backend(backend: str, versions: list[tuple[str, str]], args) -> dict:
    from bench.bench_ui import pages
    from bench.ui_catalog import database, fill

    keep: list = []
    try:
        url = database(backend, keep)
        took = fill(url, args.tasks, args.decisions)
        print(f"{backend}: filled in {took:.1f} s", flush=True)
        ports, upgraded = {}, {}
        for label, commit in versions:
            tree = checkout(commit, keep)
            copy = copy_of(url, keep)
            start = time.perf_counter()
            env = {**os.environ, "PYTHONPATH": str(tree)}
            subprocess.run([sys.executable, "-c", UPGRADE, copy], cwd=tree, env=env, check=True)
            upgraded[label] = round(time.perf_counter() - start, 1)
            ports[label] = serve(tree, copy, keep)
        chosen = [(label, path) for label, path in pages(args.tasks) if not args.page or label in args.page]
        timed = time_in_turn(ports, chosen, args.repeat)
        return {"backend": backend, "load_s": round(took, 1), "upgrade_s": upgraded, "endpoints": timed}
    finally:
        for undo in reversed(keep):
            undo()


def main(argv=None) -> int:
    from bench.bench_ui import airflow_database, scale_arguments
    from bench.common import environment, temporary_airflow_home, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="append", required=True, help="LABEL=COMMIT (. for this tree)")
    scale_arguments(parser)
    parser.add_argument("--page", action="append", help="time only this page or endpoint (its label)")
    args = parser.parse_args(argv)
    versions = [tuple(v.split("=", 1)) for v in args.version]
    temporary_airflow_home()
    airflow_database()
    backends = args.backend or ["sqlite"]
    env = environment(backends)
    results = [run_backend(backend, versions, args) for backend in backends]
    # Versions as a list: their order (the first is the reference) survives the JSON's sorted keys.
    inputs = {"versions": [list(v) for v in versions], "backends": backends, "tasks": args.tasks,
              "decisions": args.decisions, "repeat": args.repeat}  # fmt: skip
    write_json(args.json, "compare_ui", inputs, env, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
