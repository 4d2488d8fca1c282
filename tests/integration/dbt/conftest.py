"""dbt queue fixtures: the example dbt-duckdb project, deployed once per session and copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt.planner import Planner
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.runner import DbtRunner
from tests.helpers.dbt_queue import DBT_ENV, EXAMPLE_PROJECT, SELECTOR_A, SELECTOR_B

IGNORED = shutil.ignore_patterns("logs", "*.wal")


@pytest.fixture(scope="session")
def deployed_project(tmp_path_factory) -> Path:
    """The example project, parsed and built once (views deployed, tables present)."""
    path = tmp_path_factory.mktemp("dbt") / "field_ops"
    shutil.copytree(EXAMPLE_PROJECT, path, ignore=shutil.ignore_patterns("target", "logs", "*.duckdb*"))
    with DbtRunner(path, env=DBT_ENV).session() as session:
        session.invoke(["build"]).raise_for_exit()
    return path


@pytest.fixture
def dbt_project(deployed_project, tmp_path) -> Path:
    """A private copy of the deployed project and its DuckDB file."""
    path = tmp_path / "field_ops"
    shutil.copytree(deployed_project, path, ignore=IGNORED)
    return path


@pytest.fixture
def runner(dbt_project) -> DbtRunner:
    return DbtRunner(dbt_project, env=DBT_ENV)


@pytest.fixture(scope="session")
def plans(deployed_project):
    """Request A and Request B resolved by dbt once; the plans do not depend on the copy."""
    planner = Planner(DbtRunner(deployed_project, env=DBT_ENV))
    return {"A": planner.plan(SELECTOR_A), "B": planner.plan(SELECTOR_B)}


@pytest.fixture
def queue(catalog_url) -> QueueStore:
    return QueueStore(get_engine(catalog_url))
