"""The UI against Airflow's real API app: plugin mounted by Airflow, simple auth manager, real catalogs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest

UTC = dt.UTC


@dataclass
class Tokens:
    viewer: str
    no_role: str


@pytest.fixture(scope="session")
def airflow_api(airflow_db):
    """Airflow's API app (core), which mounts the LeastAction plugin app under /leastaction."""
    from airflow.api_fastapi.app import create_app, purge_cached_app

    app = create_app(apps="core")
    yield app
    purge_cached_app()


@pytest.fixture(scope="session")
def tokens(airflow_api) -> Tokens:
    """JWTs signed by the running auth manager: a read-only viewer, and a user with no role at all."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    manager = get_auth_manager()
    return Tokens(
        viewer=manager.generate_jwt(SimpleAuthManagerUser(username="viewer", role="viewer")),
        no_role=manager.generate_jwt(SimpleAuthManagerUser(username="nobody", role=None)),
    )


@pytest.fixture
def client(airflow_api, tokens, catalog_url, use_catalog):
    """A TestClient logged in as the viewer, reading the test's catalog."""
    from fastapi.testclient import TestClient

    use_catalog(catalog_url)
    with TestClient(airflow_api, headers={"Authorization": f"Bearer {tokens.viewer}"}) as c:
        yield c


@pytest.fixture
def anonymous(airflow_api, sqlite_url, use_catalog):
    from fastapi.testclient import TestClient

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
    from airflow_leastaction.identity import TaskIdentity

    store = CatalogStore(get_engine(sqlite_url, migrate=True))
    meta = TaskMeta(cron="0 0 * * *", dag_id="example", task_id="load")
    store.register_task(TaskIdentity("example.load", "example"), meta)
    store.record_success(TaskIdentity("example.load", "example"), at(1), meta=meta, run_id="scheduled__1")
    use_catalog(sqlite_url)
    with TestClient(airflow_api) as c:
        yield c


def at(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2024, 1, day, hour, tzinfo=UTC)
