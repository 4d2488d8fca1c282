"""UI latency at scale: 1,000,000 gate decisions and 100,000 catalog tasks, on SQLite and PostgreSQL.

The catalog is filled as :mod:`bench.ui_catalog` fills it (bulk inserts at migration ``0002_dbt_queue``)
and upgraded to head; the indexes of ``0003_ui_indexes`` are dropped (the baseline: only the catalog's own
indexes), the pages measured, the indexes created again and the pages measured again. Each endpoint is
timed end to end through the app (routing, queries, rendering); Airflow's login check is replaced by a
no-op, as it costs the same on every page. The functions here import :mod:`bench` modules inside their
bodies: :mod:`bench.compare_ui` loads this file into older versions' trees for its ``without_login``.

Run::

    .venv/bin/python -m bench.bench_ui --backend sqlite --backend postgres [--json PATH]

``bench/report.py`` turns the JSON into the table of docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time

from sqlalchemy import create_engine, text


def endpoints(client, tasks: int) -> list[tuple[str, str]]:
    deep = client.get("/api/decisions", params={"limit": 50, "cursor": f"{_half_depth()}|999999999"})
    assert deep.status_code == 200, deep.text
    return pages(tasks)


def _half_depth() -> str:
    """The decision time halfway through the catalog's decisions (a cursor deep into the pages)."""
    from bench.ui_catalog import T0

    return (T0 + dt.timedelta(days=17)).isoformat()


def pages(tasks: int) -> list[tuple[str, str]]:
    """(label, path) of every page and endpoint timed."""
    return [
        ("decisions, first page", "/api/decisions"),
        ("decisions page (HTML)", "/decisions"),
        (
            "decisions, page at 1/2 depth",
            f"/api/decisions?cursor={_half_depth().replace('+', '%2B')}|999999999",
        ),
        ("decisions by DAG", "/api/decisions?dag_id=dag00001"),
        ("decisions by DAG + task", "/api/decisions?dag_id=dag00001&task_id=task4"),
        (
            "decisions of one attempt (TI view)",
            "/decisions?dag_id=dag01234&task_id=task4&run_id=scheduled__00010&map_index=-1",
        ),
        ("verdicts of the busy DAG (HTML)", "/decisions?dag_id=dag00001"),
        (
            "one attempt of 2,000 decisions (TI view)",
            "/decisions?dag_id=dag00001&task_id=task4&run_id=scheduled__00009&map_index=-1",
        ),
        ("decisions by result", "/api/decisions?result=BYPASSED"),
        ("decisions in a time window", "/api/decisions?since=2024-01-20T00:00&until=2024-01-21T00:00"),
        ("consumption, first page", "/api/consumption"),
        ("consumption by downstream", "/api/consumption?dag_id=dag00001&task_id=task4"),
        ("consumption by upstream", "/api/consumption?upstream_task_pk=4242"),
        ("consumption, stale only", "/consumption?stale=true"),
        ("catalog page (HTML)", "/catalog"),
        ("catalog, name search", "/api/catalog?q=t0999"),
        ("graph around a task (HTML)", f"/graph?task_pk={min(3000, tasks // 2)}&interval=2024-01-29T03:00"),
        ("DAG view (HTML)", "/dag?dag_id=dag01234&interval=2024-01-29T03:00"),
        ("dbt queue (HTML)", "/queue"),
        ("verdicts, first page", "/api/attempts"),
        ("DAG dependencies", "/api/dag?dag_id=dag01234"),
    ]


def measure(url: str, repeat: int, tasks: int) -> dict[str, list[float]]:
    """Every request's latency in ms, per endpoint."""
    from fastapi.testclient import TestClient

    from airflow_leastaction.catalog.engine import dispose_all, get_engine
    from airflow_leastaction.www.access import READ_TASK_INSTANCES, READ_TASKS, readable_dags
    from airflow_leastaction.www.app import create_app
    from airflow_leastaction.www.queries import DagScope

    dispose_all()
    get_engine(url, migrate=False)  # the embedded SQLite default would otherwise migrate the baseline to head
    app = create_app(url)
    stubs = {dep.dependency: lambda: None for dep in (READ_TASK_INSTANCES, READ_TASKS)}
    stubs[readable_dags] = lambda: DagScope(None)  # an admin: every DAG, no filter
    without_login(app, stubs)
    out = {}
    with TestClient(app) as client:
        for label, path in endpoints(client, tasks):
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                response = client.get(path)
                times.append(round((time.perf_counter() - start) * 1000, 3))
                assert response.status_code == 200, (path, response.status_code, response.text[:300])
            out[label] = times
    dispose_all()
    return out


def without_login(app, stubs: dict) -> None:
    """Replace the login checks of every route by ``stubs`` (check -> stand-in), once.

    Not ``app.dependency_overrides``: while it holds anything, FastAPI rebuilds every dependency of a
    route on every request (its parameters analysed, their pydantic fields made), a cost no deployment
    pays that grows with a page's query parameters.
    """
    from fastapi.dependencies.utils import get_dependant
    from fastapi.routing import APIRoute

    def swap(dependant) -> None:
        for i, sub in enumerate(dependant.dependencies):
            if sub.call in stubs:
                dependant.dependencies[i] = get_dependant(path=sub.path, call=stubs[sub.call], name=sub.name)
            else:
                swap(sub)

    for route in app.routes:
        if isinstance(route, APIRoute):
            swap(route.dependant)


#: The indexes of migration 0003_ui_indexes: (name, table, columns).
UI_INDEXES = (
    ("ix_la_consumption_task_time", "la_consumption", "dag_id, task_id, consumed_at, id"),
    ("ix_la_consumption_upstream_time", "la_consumption", "upstream_task_pk, consumed_at, id"),
    ("ix_la_gate_decision_dag_time", "la_gate_decision", "dag_id, decided_at, id"),
    ("ix_la_gate_decision_task_time", "la_gate_decision", "dag_id, task_id, decided_at, id"),
    ("ix_la_task_name_id", "la_task", "name, id"),
)


def ui_indexes(engine, create: bool) -> None:
    """Drop (the baseline) or create the UI indexes, then refresh the planner's statistics."""
    with engine.begin() as conn:
        for name, table, columns in UI_INDEXES:
            conn.execute(text(f"CREATE INDEX {name} ON {table} ({columns})" if create else f"DROP INDEX {name}"))
        conn.execute(text("ANALYZE"))


def airflow_database() -> None:
    """Airflow's own database in the run's home: the pages read DAGs, runs and task instances from it (here
    it knows none, so each page pays its lookups and finds nothing, as for a task Airflow does not know)."""
    import subprocess

    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)


def scale_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the catalog's size, the backends, the repeats and the JSON path (also compare_ui's)."""
    parser.add_argument("--backend", action="append", choices=["sqlite", "postgres"])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--decisions", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")


def scale_run(argv, description: str) -> tuple[argparse.Namespace, list[str], dict]:
    """A run at this benchmark's scale: its arguments, its backends and their environment, in a temporary
    ``AIRFLOW_HOME`` (also bench_migrations')."""
    from bench.common import environment, temporary_airflow_home

    parser = argparse.ArgumentParser(description=description)
    scale_arguments(parser)
    args = parser.parse_args(argv)
    temporary_airflow_home()
    backends = args.backend or ["sqlite"]
    return args, backends, environment(backends)


def main(argv=None) -> int:
    from bench.common import write_json
    from bench.ui_catalog import database, fill

    args, backends, env = scale_run(argv, __doc__.splitlines()[0])
    airflow_database()
    from airflow_leastaction.catalog.migrate import upgrade

    results = []
    for backend in backends:
        drops: list = []
        url = database(backend, drops)
        took = fill(url, args.tasks, args.decisions)
        print(
            f"\n{backend}: {args.tasks:,} tasks, {args.tasks * 3:,} slots, {args.decisions:,} decisions, "
            f"{args.decisions // 5:,} consumption rows loaded in {took:.1f} s",
            flush=True,
        )
        engine = create_engine(url)
        start = time.perf_counter()
        upgrade(engine)  # today's code reads today's columns: the baseline is head without the UI indexes
        upgraded_s = time.perf_counter() - start
        print(f"upgraded to the current schema: {upgraded_s:.1f} s", flush=True)
        ui_indexes(engine, create=False)
        before = measure(url, args.repeat, args.tasks)
        start = time.perf_counter()
        ui_indexes(engine, create=True)
        upgraded = time.perf_counter() - start
        print(f"UI indexes created: {upgraded:.1f} s", flush=True)
        engine.dispose()
        after = measure(url, args.repeat, args.tasks)
        for label, times in before.items():
            b_med, a_med = statistics.median(times), statistics.median(after[label])
            print(f"| {label} | {b_med:.1f} | {a_med:.1f} | {max(after[label]):.1f} | {b_med / a_med:.1f}x |")
        results.append(
            {
                "backend": backend,
                "load_s": round(took, 1),
                "upgrade_s": round(upgraded_s, 1),
                "index_s": round(upgraded, 1),
                "endpoints": [
                    {"endpoint": label, "baseline_ms": before[label], "indexed_ms": after[label]} for label in before
                ],
            }
        )
        for drop in drops:
            drop()
    write_json(
        args.json,
        "bench_ui",
        {
            "backends": backends,
            "tasks": args.tasks,
            "slots": args.tasks * 3,
            "decisions": args.decisions,
            "consumption": args.decisions // 5,
            "repeat": args.repeat,
        },
        env,
        results,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
