"""Fixtures of the run-condition tests: a fresh SQLite catalog (or one per backend) and marker files."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.schema import consumption, gate_decision

UTC = dt.timezone.utc


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
    return {ti.task_id: (ti.state.value if hasattr(ti.state, "value") else ti.state)
            for ti in run.get_task_instances()}


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
        return conn.execute(select(consumption).where(consumption.c.dag_id == dag_id)
                            .order_by(consumption.c.id)).mappings().all()


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
