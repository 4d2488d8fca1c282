"""Fixtures of the run-condition tests: a fresh SQLite catalog (or one per backend) and marker files."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.schema import consumption, gate_decision

UTC = dt.UTC


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, n, tzinfo=UTC)


@pytest.fixture
def markers(tmp_path, monkeypatch):
    path = tmp_path / "markers"
    path.mkdir()
    monkeypatch.setenv("RC_MARKERS", str(path))
    return path


@pytest.fixture
def rc_catalog(sqlite_url, use_catalog, tmp_path, monkeypatch, markers):
    """A migrated SQLite catalog the DAG runs of this test write to."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    get_engine(sqlite_url, migrate=True)
    use_catalog(sqlite_url)
    return CatalogStore(get_engine(sqlite_url))


@pytest.fixture
def rc_catalog_any(store, catalog_url, use_catalog, tmp_path, monkeypatch, markers):
    """The same on each backend (SQLite and PostgreSQL)."""
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    use_catalog(catalog_url)
    return store


def states(run) -> dict[str, str]:
    return {ti.task_id: (ti.state.value if hasattr(ti.state, "value") else ti.state) for ti in run.get_task_instances()}


def tis(run) -> dict:
    return {ti.task_id: ti for ti in run.get_task_instances()}


def decisions(store, dag_id: str, task_id: str | None = None):
    q = select(gate_decision).where(gate_decision.c.dag_id == dag_id)
    if task_id:
        q = q.where(gate_decision.c.task_id == task_id)
    with store.engine.connect() as conn:
        return conn.execute(q.order_by(gate_decision.c.id)).mappings().all()


def consumed(store, dag_id: str):
    with store.engine.connect() as conn:
        return (
            conn.execute(select(consumption).where(consumption.c.dag_id == dag_id).order_by(consumption.c.id))
            .mappings()
            .all()
        )


def later(seconds: float, fn, *args, **kwargs):
    """Run ``fn`` in a thread after ``seconds``: something finishing while a gate waits."""
    import threading
    import time

    def run():
        time.sleep(seconds)
        fn(*args, **kwargs)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def module_runs(tmp_path_factory, dagbag):
    """``run(dag_id, n, before=None)``: one real run per (DAG, day) for the whole module, on a module
    catalog, so several rules can be checked on the same run. Each run gets its own marker folder;
    ``before(markers)`` runs first (to release a sensor later, say)."""
    from airflow_leastaction.catalog.engine import dispose_all, get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    root = tmp_path_factory.mktemp("rc-module")
    url = f"sqlite:///{root}/catalog.db"
    cache: dict = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(root / "spool"))
        mp.setenv(
            "AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT",
            json.dumps({"conn_type": "leastaction_catalog", "extra": {"url": url}}),
        )
        dispose_all()
        store = CatalogStore(get_engine(url, migrate=True))

        def run(dag_id: str, n: int, before=None):
            if (dag_id, n) not in cache:
                folder = root / f"markers-{dag_id}-{n}"
                folder.mkdir()
                mp.setenv("RC_MARKERS", str(folder))
                if before is not None:
                    before(folder)
                cache[(dag_id, n)] = dagbag.get_dag(dag_id).test(logical_date=day(n))
            return cache[(dag_id, n)]

        run.store = store
        yield run
        dispose_all()
