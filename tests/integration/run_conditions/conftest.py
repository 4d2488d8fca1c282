"""Fixtures of the run-condition tests: a fresh SQLite catalog (or one per backend) and marker files."""

from __future__ import annotations

import json

import pytest

from tests.helpers.run_conditions import day


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
