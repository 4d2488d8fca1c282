"""Shared fixtures: an isolated AIRFLOW_HOME, real catalogs on SQLite and PostgreSQL; the test tiers.

The Airflow environment is set before anything imports Airflow. PostgreSQL is the server started by
``scripts/postgres.sh`` (``make test`` starts it; so does this file when it is not running).

A test's tier is its folder, and only its folder: ``tests/unit/`` (no database server, no Airflow run),
``tests/integration/`` (real catalogs, ``dag.test()``, real dbt, the plugin's app in process) and
``tests/system/`` (deployments as processes, Celery, the browser, the demo). Each test gets its tier's
marker here; a unit test that asks for a catalog server or an Airflow run fails at collection.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_HOME = Path(tempfile.mkdtemp(prefix="leastaction-airflow-"))
# The DAGs folder holds the example DAGs and the test DAGs, linked (dag.test() needs a DAG's file there).
TEST_DAGS = TEST_HOME / "dags"
TEST_DAGS.mkdir()
(TEST_DAGS / "examples").symlink_to(ROOT / "dags_examples", target_is_directory=True)
(TEST_DAGS / "tests").symlink_to(ROOT / "tests" / "dags", target_is_directory=True)

os.environ.update(
    {
        "AIRFLOW_HOME": str(TEST_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(TEST_DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{TEST_HOME}/airflow.db",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(TEST_HOME / "logs"),
        "AIRFLOW__LEASTACTION__POLL_INTERVAL": "0.2",
    }
)
os.environ.pop("AIRFLOW__LEASTACTION__CATALOG_URL", None)
os.environ.pop("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", None)


def _pg_admin_url() -> str:
    url = os.environ.get("LEASTACTION_TEST_PG_URL")
    if url:
        return url
    out = subprocess.run([str(ROOT / "scripts" / "postgres.sh"), "start"], check=True, capture_output=True, text=True)
    url = out.stdout.strip().splitlines()[-1]
    os.environ["LEASTACTION_TEST_PG_URL"] = url
    return url


@pytest.fixture(scope="session")
def pg_admin_url() -> str:
    return _pg_admin_url()


def _fresh_pg_database(admin_url: str) -> tuple[str, callable]:
    import sqlalchemy as sa

    name = f"la_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"

    def drop():
        from airflow_leastaction.catalog.engine import dispose_all

        dispose_all()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return url, drop


@pytest.fixture(scope="session")
def new_pg_database(pg_admin_url):
    """``new_pg_database()`` -> ``(url, drop)``: a fresh PostgreSQL database, for fixtures of any scope."""
    return lambda: _fresh_pg_database(pg_admin_url)


@pytest.fixture
def pg_url(pg_admin_url):
    url, drop = _fresh_pg_database(pg_admin_url)
    yield url
    drop()


@pytest.fixture
def sqlite_url(tmp_path):
    yield f"sqlite:///{tmp_path}/catalog.db"
    from airflow_leastaction.catalog.engine import dispose_all

    dispose_all()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request):
    """A migrated, empty catalog on each backend."""
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    from airflow_leastaction.catalog.engine import get_engine

    get_engine(url, migrate=True)
    return url


@pytest.fixture
def store(catalog_url):
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    return CatalogStore(get_engine(catalog_url))


@pytest.fixture
def use_catalog(monkeypatch):
    """Point the default catalog connection of this process (and its children) at ``url``."""

    def point(url: str):
        from airflow_leastaction.catalog.engine import dispose_all

        dispose_all()
        monkeypatch.setenv(
            "AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT",
            json.dumps({"conn_type": "leastaction_catalog", "extra": {"url": url}}),
        )
        return url

    yield point
    from airflow_leastaction.catalog.engine import dispose_all

    dispose_all()


def _one_in_process_api_server() -> None:
    """dag.test() runs each task through Airflow's in-process execution API. Airflow 3.3 builds that API
    once per process; 3.1 and 3.2 build one per task, and its first request generates the routes of every
    API version (seconds per task, the bulk of a run's time there). The suite keeps one, as 3.3 does."""
    from airflow.sdk.execution_time import supervisor

    if not hasattr(supervisor.in_process_api_server, "cache_info"):
        supervisor.in_process_api_server = functools.lru_cache(maxsize=1)(supervisor.in_process_api_server)


@pytest.fixture(scope="session")
def airflow_db():
    """Airflow's own metadata database (SQLite) for dag.test() runs, migrated once per session."""
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    _one_in_process_api_server()
    return TEST_HOME


@pytest.fixture(scope="session")
def dagbag(airflow_db):
    """Every example and test DAG, parsed once; fails loudly on import errors."""
    from airflow_leastaction.version_compat import dag_bag_class

    bag = dag_bag_class()(str(TEST_DAGS))
    assert not bag.import_errors, bag.import_errors
    return bag


@pytest.fixture
def run_dag(dagbag):
    """``run_dag(dag_id, logical_date)``: one real DAG run through ``dag.test()``; returns the DagRun."""

    def run(dag_id: str, logical_date, **kwargs):
        return dagbag.get_dag(dag_id).test(logical_date=logical_date, **kwargs)

    return run


def _checkout_state() -> str | None:
    """Tracked changes and untracked files of the checkout (None outside a git checkout)."""
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        diff = subprocess.run(["git", "diff"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return status + diff


def pytest_sessionstart(session):
    session.config._leastaction_checkout = _checkout_state()


def pytest_sessionfinish(session, exitstatus):
    # The suite writes nothing into the checkout: a test that does fails the run, naming the files.
    before = getattr(session.config, "_leastaction_checkout", None)
    after = _checkout_state()
    if before is not None and after is not None and after != before:
        changed = sorted(set(after.splitlines()) ^ set(before.splitlines()))
        print("\nthe test suite changed the checkout:\n  " + "\n  ".join(line for line in changed if line[:3].strip()))
        session.exitstatus = 1


# -- tiers ------------------------------------------------------------------------------------------------
TIERS = ("unit", "integration", "system")
#: Fixtures that start or need a database server or an Airflow run: not for the unit tier.
NOT_IN_UNIT = frozenset(
    {"pg_admin_url", "pg_url", "catalog_url", "store", "airflow_db", "dagbag", "run_dag", "use_catalog"}
)


def tier_of(path: Path) -> str | None:
    parts = path.resolve().relative_to(ROOT / "tests").parts
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


# Run with pytest-xdist (`make test` does, with --dist loadfile): the tests of one module share its
# fixtures (a deployment, a module's DAG runs) and go to one worker together. The slowest tier is handed
# out first, so its long modules start while the short ones fill the other workers.
ORDER = {"system": 0, "integration": 1, "unit": 2}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    wrong = []
    for item in items:
        tier = tier_of(Path(str(item.path)))
        if tier is None:
            wrong.append(f"{item.nodeid}: a test lives under tests/unit, tests/integration or tests/system")
            continue
        declared = {m.name for m in item.iter_markers() if m.name in TIERS}
        if declared - {tier}:
            wrong.append(f"{item.nodeid}: marked {sorted(declared)} but its folder makes it {tier}")
        if tier == "unit" and NOT_IN_UNIT & set(getattr(item, "fixturenames", ())):
            found = sorted(NOT_IN_UNIT & set(item.fixturenames))
            wrong.append(f"{item.nodeid}: a unit test uses {found}; move it to tests/integration")
        item.add_marker(getattr(pytest.mark, tier))
    if wrong:
        raise pytest.UsageError("tests in the wrong tier:\n  " + "\n  ".join(wrong))
    items.sort(key=lambda item: ORDER[tier_of(Path(str(item.path)))])
