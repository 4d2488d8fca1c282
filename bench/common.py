"""What every benchmark shares: the durable PostgreSQL, the run's environment, and its JSON results.

A benchmark's JSON holds its inputs, the environment it ran in (CPU count, load average at start, the
backends' versions and PostgreSQL's durability settings) and every raw sample, so that the tables of
docs/performance.md can be generated from it (``bench/report.py``) and checked by anyone.
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import uuid
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
#: The benchmarks' PostgreSQL: at default durability, apart from the test server (see scripts/bench-postgres.sh).
PG_URL_ENV = "LEASTACTION_BENCH_PG_URL"
#: The settings recorded with every PostgreSQL figure (a skeptic asks for these first).
PG_SETTINGS = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers")


def temporary_airflow_home() -> None:
    """Point ``AIRFLOW_HOME`` at a directory of this run, removed when it exits (unless one is set)."""
    if "AIRFLOW_HOME" in os.environ:
        return
    home = tempfile.mkdtemp(prefix="la-bench-home-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    os.environ["AIRFLOW_HOME"] = home


def bench_pg_admin_url() -> str:
    """The admin URL of the benchmark server: ``$LEASTACTION_BENCH_PG_URL``, else scripts/bench-postgres.sh."""
    if os.environ.get(PG_URL_ENV):
        return os.environ[PG_URL_ENV]
    out = (
        subprocess.run(
            [str(ROOT / "scripts" / "bench-postgres.sh"), "start"], check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    os.environ[PG_URL_ENV] = out
    return out


def pg_settings(admin_url: str | None = None) -> dict[str, str]:
    engine = sa.create_engine(admin_url or bench_pg_admin_url())
    try:
        with engine.connect() as conn:
            return {name: conn.execute(sa.text(f"SHOW {name}")).scalar() for name in PG_SETTINGS}
    finally:
        engine.dispose()


def fresh_database(backend: str, workdir: Path | None = None) -> tuple[str, callable]:
    """A new, empty catalog database URL on ``backend`` and a ``drop()`` that removes it."""
    if backend == "sqlite":
        folder = workdir or Path(tempfile.mkdtemp(prefix="la-bench-"))
        path = folder / f"catalog-{uuid.uuid4().hex[:8]}.db"

        def remove():
            from airflow_leastaction.catalog.engine import dispose_all

            dispose_all()
            if workdir is None:
                shutil.rmtree(folder, ignore_errors=True)
            else:
                for leftover in folder.glob(f"{path.name}*"):  # the database and its journal files
                    leftover.unlink(missing_ok=True)

        return f"sqlite:///{path}", remove
    admin = bench_pg_admin_url()
    name = f"la_bench_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop():
        from airflow_leastaction.catalog.engine import dispose_all

        dispose_all()
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()

    return admin.rsplit("/", 1)[0] + f"/{name}", drop


def environment(backends) -> dict:
    """Where and on what the run happened, read at its start."""
    env = {
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "sqlalchemy": sa.__version__,
        "platform": platform.platform(),
    }
    if "sqlite" in backends:
        env["sqlite"] = sqlite3.sqlite_version
    if "postgres" in backends:
        env["postgres"] = pg_settings()
    return env


def summary(samples) -> dict:
    """Statistics named as computed: n, median, min and max (no percentile a sample this small cannot carry)."""
    samples = list(samples)
    return {"n": len(samples), "median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def write_json(path: str | None, name: str, inputs: dict, environment_: dict, results, **more) -> dict:
    """The benchmark's JSON document (``more``: further result sections, each under its own key)."""
    import sys

    doc = {
        "benchmark": name,
        "command": " ".join(["python -m", f"bench.{name}", *sys.argv[1:]]),
        "inputs": inputs,
        "environment": environment_,
        "results": results,
        **more,
    }
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    return doc
