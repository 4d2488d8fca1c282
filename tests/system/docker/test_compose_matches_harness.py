"""docker/docker-compose.yaml and the Celery deployment the end-to-end tests start without Docker
(tests/system/test_celery.py) are the same topology: the same components in the same numbers, the same
executor and broker, the settings that tie the components together, and the same pinned versions."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from collections import Counter

import pytest
import yaml
from packaging.requirements import Requirement

from tests.helpers.airflow_cluster import CELERY_COMPONENTS, AirflowCluster, celery_settings
from tests.helpers.paths import NEWEST_CONSTRAINTS, ROOT

COMPOSE = ROOT / "docker" / "docker-compose.yaml"
#: Settings every component must agree on; each deployment sets them, each to its own values.
SHARED_SETTINGS = (
    "AIRFLOW__CORE__EXECUTOR",
    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
    "AIRFLOW__CELERY__BROKER_URL",
    "AIRFLOW__CELERY__RESULT_BACKEND",
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__API__SECRET_KEY",
    "AIRFLOW__CORE__FERNET_KEY",
    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS",
    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE",
    "AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT",
)
PG = "postgresql+psycopg2://postgres@127.0.0.1:5432/airflow"


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


@pytest.fixture(scope="module")
def compose_env(services) -> dict[str, str]:
    return {k: str(v) for k, v in services["airflow-scheduler"]["environment"].items()}


@pytest.fixture
def harness_env(tmp_path) -> dict[str, str]:
    cluster = AirflowCluster(
        tmp_path / "dags",
        sql_alchemy_conn=PG,
        catalog_url="postgresql://catalog",
        home=tmp_path,
        components=CELERY_COMPONENTS,
        env=celery_settings("redis://127.0.0.1:6379/0", PG),
    )
    return cluster.environ


def pinned(name: str) -> str:
    text = NEWEST_CONSTRAINTS.read_text()
    return re.search(rf"^{re.escape(name)}==(\S+)$", text, re.MULTILINE).group(1)


def test_same_components_in_the_same_numbers(services):
    in_compose = Counter()
    for service in services.values():
        command = service.get("command")
        if isinstance(command, str):
            in_compose[command] += service.get("deploy", {}).get("replicas", 1)
    assert in_compose == Counter(CELERY_COMPONENTS)


def test_same_executor_and_broker(compose_env, harness_env):
    assert compose_env["AIRFLOW__CORE__EXECUTOR"] == harness_env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert compose_env["AIRFLOW__CELERY__BROKER_URL"].split("://")[0] == "redis"
    assert harness_env["AIRFLOW__CELERY__BROKER_URL"].split("://")[0] == "redis"
    # Task results in Airflow's own PostgreSQL database, through Celery's SQLAlchemy backend.
    for env in (compose_env, harness_env):
        assert env["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql")
        assert (
            env["AIRFLOW__CELERY__RESULT_BACKEND"].split("@")[-1]
            == env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].split("@")[-1]
        )


@pytest.mark.parametrize("key", SHARED_SETTINGS)
def test_both_deployments_set_the_settings_components_must_share(compose_env, harness_env, key):
    assert key in compose_env and key in harness_env


def test_compose_sets_no_celery_or_triggerer_setting_the_harness_leaves_out(compose_env, harness_env):
    sections = ("AIRFLOW__CELERY__", "AIRFLOW__TRIGGERER__", "AIRFLOW__CORE__EXECUTOR")
    assert {k for k in compose_env if k.startswith(sections)} <= set(harness_env)


def test_image_installs_the_celery_versions_the_tests_run():
    # The celery extra, resolved with the constraints the suite's environment is (tests/system/test_install.py).
    image = (ROOT / "docker" / "Dockerfile").read_text().split("\nFROM ")[-1]
    assert f"constraints/{NEWEST_CONSTRAINTS.name} /opt/leastaction/constraints.txt" in image
    install = image.split("pip install", 1)[1].split("\n\n", 1)[0]
    assert "-c /opt/leastaction/constraints.txt" in install and ",celery]" in install
    extra = {
        r.name: r.specifier
        for r in map(
            Requirement,
            tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["celery"],
        )
    }
    for name in ("apache-airflow-providers-celery", "celery"):
        assert extra[name].contains(pinned(name)), name


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_redis_image_has_the_major_version_of_the_local_server(services):
    image_major = services["redis"]["image"].split(":")[1].split(".")[0]
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"v=(\d+)\.", out).group(1) == image_major
