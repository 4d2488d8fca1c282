"""The UI benchmark's catalog: 100,000 catalog tasks, 300,000 slot records, 1,000,000 gate decisions and
200,000 consumption records (at the default scale), written straight into the tables.

The rows go in with bulk inserts (``executemany`` on SQLite, ``COPY`` on PostgreSQL) at migration
``0002_dbt_queue``: :mod:`bench.bench_ui` times the pages on it, :mod:`bench.compare_ui` on copies of it,
and :mod:`bench.bench_migrations` upgrades it one revision at a time.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time

from sqlalchemy import create_engine, text

from bench.common import fresh_database

UTC = dt.UTC
T0 = dt.datetime(2024, 1, 1, tzinfo=UTC)
RESULTS = ("SATISFIED", "UNSATISFIED", "BYPASSED")
STATES = ("success", "success", "success", "running", "failed")


def _stamp(value: dt.datetime, dialect: str) -> str:
    # SQLite keeps UTC as text in SQLAlchemy's own format (string order must equal time order).
    if dialect == "sqlite":
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    return value.isoformat()


def task_rows(n: int, d: str):
    for i in range(1, n + 1):
        parents = [] if i <= 10 else [{"account": "", "name": f"t{(i // 3):06d}", "partition": "", "project": "p"}]
        yield (
            i,
            f"t{i:06d}",
            "p",
            "",
            "",
            "airflow" if i % 10 else "external",
            "0 3 * * *",
            "UTC",
            STATES[i % 5],
            _stamp(T0 + dt.timedelta(days=30), d),
            _stamp(T0 + dt.timedelta(days=29), d),
            f"dag{i % 20000:05d}",
            f"task{i % 5}",
            json.dumps(parents, sort_keys=True),
            _stamp(T0, d),
        )


def run_rows(n_tasks: int, per_task: int, d: str):
    pk = 0
    for t in range(1, n_tasks + 1):
        for s in range(per_task):
            pk += 1
            slot = T0 + dt.timedelta(days=27 + s, hours=3)
            yield (
                pk,
                t,
                _stamp(slot, d),
                "success",
                1,
                f"r{s}",
                1 + (s == per_task - 1 and t % 7 == 0),
                False,
                _stamp(slot, d),
            )


def decision_rows(n: int, d: str):
    for i in range(1, n + 1):
        at = T0 + dt.timedelta(seconds=i * 3)
        dag = 1 if i % 2 else i % 20000  # one busy DAG holds half of all decisions
        yield (
            i,
            f"dag{dag:05d}",
            f"task{i % 5}",
            f"scheduled__{i // 20000:05d}",
            -1,
            1,
            f"catalog:p/t{i % 100000:06d}",
            "SUCCESS",
            RESULTS[i % 3],
            f"reason {i}",
            _stamp(at, d),
            (i % 100000) + 1,
            ((i % 100000) * 3) + 1,
            1,
        )


def consumption_rows(n: int, d: str):
    for i in range(1, n + 1):
        at = T0 + dt.timedelta(seconds=i * 15)
        up = 4242 if i % 2 else (i % 100000) + 1  # one busy upstream, one busy DAG: half the rows each
        yield (
            i,
            i,
            f"dag{1 if i % 2 else i % 20000:05d}",
            f"task{i % 5}",
            f"scheduled__{i // 20000:05d}",
            -1,
            1,
            f"catalog:p/t{up:06d}",
            up,
            (up - 1) * 3 + 3,
            1,
            _stamp(T0 + dt.timedelta(days=i // 20000), d),  # the consumer's run slot, as its run_id says
            _stamp(at, d),
        )


TABLES = {
    "la_task": (
        "id,name,project,account,partition,source,cron,timezone,state,logical_date,prev_interval_start,"
        "dag_id,task_id,parents,updated_at"
    ),
    "la_task_run": "id,task_pk,slot,state,attempt,run_id,output_revision,repair_pending,updated_at",
    "la_gate_decision": (
        "id,dag_id,task_id,run_id,map_index,attempt,dependency,dependency_type,result,reason,"
        "decided_at,upstream_task_pk,upstream_run_pk,upstream_revision"
    ),
    "la_consumption": (
        "id,decision_id,dag_id,task_id,run_id,map_index,attempt,dependency,upstream_task_pk,"
        "upstream_run_pk,upstream_revision,downstream_slot,consumed_at"
    ),
}


def bulk_load(engine, table: str, rows) -> None:
    cols = TABLES[table]
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if engine.dialect.name == "sqlite":
            marks = ",".join("?" * len(cols.split(",")))
            cur.execute("BEGIN")
            cur.executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", rows)
            cur.execute("COMMIT")
        else:
            buf = io.StringIO()
            csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC).writerows(rows)  # "" stays "", not NULL
            buf.seek(0)
            cur.copy_expert(f"COPY {table} ({cols}) FROM STDIN WITH (FORMAT csv)", buf)
            raw.commit()
    finally:
        raw.close()


def fill(url: str, tasks: int, decisions: int) -> float:
    from airflow_leastaction.catalog.migrate import upgrade

    engine = create_engine(url)
    upgrade(engine, "0002_dbt_queue")
    d = engine.dialect.name
    start = time.perf_counter()
    bulk_load(engine, "la_task", task_rows(tasks, d))
    bulk_load(engine, "la_task_run", run_rows(tasks, 3, d))
    bulk_load(engine, "la_gate_decision", decision_rows(decisions, d))
    bulk_load(engine, "la_consumption", consumption_rows(decisions // 5, d))
    if d == "postgresql":
        with engine.begin() as conn:
            for table in TABLES:
                conn.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
                )
            conn.execute(text("ANALYZE"))
    engine.dispose()
    return time.perf_counter() - start


def database(backend: str, keep: list) -> str:
    """A new database (PostgreSQL: on the durable benchmark server); its ``drop()`` goes into ``keep``."""
    url, drop = fresh_database(backend)
    keep.append(drop)
    return url
