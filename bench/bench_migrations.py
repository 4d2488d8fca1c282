"""Catalog migrations on a large catalog: how long each takes, and whether gates keep working meanwhile.

The catalog of the UI benchmark (:mod:`bench.bench_ui`: 1,000,000 gate decisions, 100,000 tasks, 300,000
slot records, 200,000 consumption records), filled at ``0002_dbt_queue``, is upgraded one revision at a
time to head, each in one transaction as ``airflow-leastaction db upgrade`` runs it, through the catalog's
own engine (SQLite in WAL mode with its busy timeout). While a revision runs, a second connection does what
a waiting gate of the release before does to the catalog, again and again: a read (a task by name and its
newest slot record) and a write (a gate decision, rolled back), on columns every revision has. The longest
each waited says whether gates kept working (a few milliseconds) or waited for the migration (its length).
A copy of that catalog, made before, is then upgraded from ``0002_dbt_queue`` to head in one transaction,
as ``db upgrade`` does it when several revisions are pending, with the same probes.

Run::

    .venv/bin/python -m bench.bench_migrations --backend sqlite --backend postgres [--json PATH]

``bench/report.py --doc docs/upgrading.md`` turns the JSON into the table of docs/upgrading.md.
"""

from __future__ import annotations

import datetime as dt
import sys
import threading
import time
from pathlib import Path

from sqlalchemy import text

from bench.ui_catalog import database, fill

FIRST = "0002_dbt_queue"
#: A gate's read of its parent: the task by name, then its newest slot record.
READ_TASK = text(
    "SELECT id, state FROM la_task WHERE name = :name AND project = 'p' AND account = '' AND partition = ''"
)
READ_SLOT = text("SELECT state, output_revision FROM la_task_run WHERE task_pk = :pk ORDER BY slot DESC LIMIT 1")
#: A gate's write: one decision (rolled back, so the catalog stays what the next revision expects).
WRITE_DECISION = text(
    "INSERT INTO la_gate_decision (dag_id, task_id, run_id, map_index, attempt, dependency, dependency_type,"
    " result, reason, decided_at) VALUES ('probe', 'gate', 'r', -1, 1, 'catalog:p/t000001', 'SUCCESS',"
    " 'SATISFIED', 'probe', :at)"
)


def revisions_after(first: str) -> list[tuple[str, str]]:
    """``(revision, first line of its docstring)`` of every revision after ``first``, oldest first."""
    from alembic.script import ScriptDirectory

    from airflow_leastaction.catalog.migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config())
    chain = list(reversed(list(script.walk_revisions("base", "heads"))))
    names = [r.revision for r in chain]
    return [(r.revision, (r.doc or "").splitlines()[0]) for r in chain[names.index(first) + 1 :]]


class GateProbe(threading.Thread):
    """A gate's read or its write, repeated on a connection of its own until stopped, with every wait.

    A read and a write are two probes, two threads: a write held by the migration must not hide the reads.
    """

    def __init__(self, engine, kind: str):
        super().__init__(daemon=True)
        self.engine, self.kind, self.stop = engine, kind, threading.Event()
        self.waits: list[float] = []
        self.errors: list[str] = []

    def _read(self, conn, i: int) -> None:
        with conn.begin():
            pk = conn.execute(READ_TASK, {"name": f"t{i % 100_000 + 1:06d}"}).scalar()
            conn.execute(READ_SLOT, {"pk": pk}).all()

    def _write(self, conn, i: int) -> None:
        tx = conn.begin()
        try:
            conn.execute(WRITE_DECISION, {"at": dt.datetime.now(dt.UTC)})
        finally:
            tx.rollback()

    def run(self) -> None:
        work = self._read if self.kind == "read" else self._write
        i = 0
        with self.engine.connect() as conn:
            while not self.stop.is_set():
                i += 1
                start = time.perf_counter()
                try:
                    work(conn, i)
                except Exception as exc:  # a statement the migration broke or timed out is a finding
                    self.errors.append(f"{self.kind}: {str(exc).splitlines()[0][:200]}")
                self.waits.append(time.perf_counter() - start)
                time.sleep(0.02)


def _probed(engine, target: str, doc: str) -> dict:
    """Upgrade to ``target`` in one transaction while a gate probe runs; what each took and waited."""
    from airflow_leastaction.catalog.migrate import upgrade

    probes = {kind: GateProbe(engine, kind) for kind in ("read", "write")}
    for probe in probes.values():
        probe.start()
    time.sleep(0.2)  # the probes are connected and running before the migration starts
    start = time.perf_counter()
    upgrade(engine, target)
    took = time.perf_counter() - start
    for probe in probes.values():
        probe.stop.set()
        probe.join()
    row = {
        "revision": target,
        "doc": doc,
        "seconds": round(took, 2),
        "read_max_s": round(max(probes["read"].waits), 3),
        "write_max_s": round(max(probes["write"].waits), 3),
        "probes": len(probes["read"].waits),
        "errors": sorted({*probes["read"].errors, *probes["write"].errors}),
    }
    print(
        f"{target}: {took:.2f} s; gate read waited at most {row['read_max_s']:.3f} s, "
        f"write {row['write_max_s']:.3f} s; errors: {row['errors']}",
        flush=True,
    )
    return row


def migrate(url: str, one_by_one: bool) -> list[dict]:
    """Each revision in a transaction of its own, or all of them in one, as ``db upgrade`` runs them."""
    from airflow_leastaction.catalog.engine import dispose_all, get_engine

    engine = get_engine(url, migrate=False)
    if one_by_one:
        rows = [_probed(engine, revision, doc) for revision, doc in revisions_after(FIRST)]
    else:
        rows = [_probed(engine, "heads", "every revision, in one transaction")]
    dispose_all()
    return rows


def copy_of(url: str, drops: list) -> str:
    """A second catalog, a copy of the filled ``url`` (a file copy, or PostgreSQL's ``TEMPLATE``)."""
    import shutil
    import uuid

    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    from bench.common import bench_pg_admin_url

    source = make_url(url)
    if source.get_backend_name() == "sqlite":
        target = f"{source.database}-copy.db"
        shutil.copyfile(source.database, target)
        drops.append(lambda: Path(target).unlink(missing_ok=True))
        return f"sqlite:///{target}"
    name = f"{source.database}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(bench_pg_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{source.database}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    drops.insert(0, drop)
    return source.set(database=name).render_as_string(hide_password=False)


def main(argv=None) -> int:
    from bench.bench_ui import scale_run
    from bench.common import write_json

    args, backends, env = scale_run(argv, __doc__.splitlines()[0])
    results = []
    for backend in backends:
        drops: list = []
        url = database(backend, drops)
        took = fill(url, args.tasks, args.decisions)
        print(f"\n{backend}: {args.decisions:,} decisions loaded at {FIRST} in {took:.1f} s", flush=True)
        copy = copy_of(url, drops)
        found = {"backend": backend, "load_s": round(took, 1)}
        found["revisions"] = migrate(url, one_by_one=True)
        found["at_once"] = migrate(copy, one_by_one=False)
        results.append(found)
        for drop in drops:
            drop()
    inputs = {
        "backends": backends,
        "tasks": args.tasks,
        "slots": args.tasks * 3,
        "decisions": args.decisions,
        "consumption": args.decisions // 5,
    }
    write_json(args.json, "bench_migrations", inputs, env, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
