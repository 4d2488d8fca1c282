"""The Docker Compose topology, checked statically (no Docker engine needed).

The same topology runs without Docker in ``tests/system/test_multiprocess.py``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from sqlalchemy.engine import make_url

from airflow_leastaction.catalog.engine import url_from_connection
from tests.helpers.paths import DOCKER, NEWEST_CONSTRAINTS

COMPOSE = DOCKER / "docker-compose.yaml"
AIRFLOW_SERVICES = {
    "airflow-init": None,
    "airflow-apiserver": "api-server",
    "airflow-scheduler": "scheduler",
    "airflow-dag-processor": "dag-processor",
    "airflow-triggerer": "triggerer",
    "airflow-worker": "celery worker",
}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def env_of(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def host_path(spec: str) -> Path | None:
    """The host side of a ``host:container[:mode]`` volume, or None for a named volume."""
    source = spec.split(":", 1)[0]
    return (DOCKER / source).resolve() if source.startswith((".", "/")) else None


INIT_IN_IMAGE = "/opt/leastaction/airflow-init.sh"


def copy_lines() -> list[tuple[list[str], str]]:
    """``(sources, target)`` of every ``COPY`` from the build context (not from a build stage)."""
    copies = []
    for line in (DOCKER / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY") and "--from=" not in line:
            *sources, target = [s for s in line.split()[1:] if not s.startswith("--")]
            copies.append((sources, target))
    return copies


def image_copies() -> dict[str, Path]:
    """Container path -> checkout path of every ``COPY`` in the Dockerfile (a file copied into a directory
    is keyed by its full container path)."""
    copies = {}
    for sources, target in copy_lines():
        for source in sources:
            key = target.rstrip("/") + "/" + Path(source).name if target.endswith("/") else target
            copies[key] = DOCKER.parent / source
    return copies


def stages() -> list[str]:
    """The Dockerfile's stages, each from its ``FROM`` line to the next."""
    text = (DOCKER / "Dockerfile").read_text()
    return ["FROM" + part for part in re.split(r"^FROM", text, flags=re.MULTILINE)[1:]]


def run_commands(stage: str) -> list[str]:
    """The ``RUN`` commands of a stage, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", stage)
    return [line[len("RUN ") :] for line in joined.splitlines() if line.startswith("RUN ")]


class TestImage:
    def test_image_is_the_newest_official_airflow_release_the_package_is_tested_with(self, services):
        # The release pinned by the constraints file of the newest supported minor, on the suite's Python.
        release = re.search(r"^apache-airflow==(\S+)$", NEWEST_CONSTRAINTS.read_text(), re.MULTILINE).group(1)
        dockerfile = (DOCKER / "Dockerfile").read_text()
        python = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        assert re.search(r"^ARG AIRFLOW_IMAGE=(\S+)$", dockerfile, re.MULTILINE).group(1) == (
            f"apache/airflow:{release}-{python}"
        )
        assert [s.split()[1] for s in stages()] == ["${AIRFLOW_IMAGE}", "${AIRFLOW_IMAGE}"]
        assert {s["image"] for s in services.values() if "build" in s} == {f"airflow-leastaction:{release}"}

    def test_the_build_stage_builds_the_dist_as_make_dist_does(self):
        build, _ = stages()
        makefile = (DOCKER.parent / "Makefile").read_text()
        recipe = makefile[makefile.index("\ndist:") :].split("\n\n", 1)[0]
        assert "scripts/dist.sh" in recipe
        (command,) = run_commands(build)
        assert "scripts/dist.sh" in command
        assert f"-c /opt/leastaction-src/constraints/{NEWEST_CONSTRAINTS.name} build twine" in command

    def test_the_image_installs_the_built_wheel_with_the_constraints_and_nothing_of_the_source(self):
        _, image = stages()
        assert "COPY --from=dist --chown=airflow:root /opt/leastaction-src/dist /opt/leastaction/dist" in image
        from_context = [
            source
            for line in image.splitlines()
            if line.startswith("COPY") and "--from=" not in line
            for source in line.split()[1:-1]
            if not source.startswith("--")
        ]
        assert not [s for s in from_context if s.startswith(("airflow_leastaction", "pyproject.toml"))], from_context
        install = next(c for c in run_commands(image) if "pip install" in c)
        assert (
            f"COPY --chown=airflow:root constraints/{NEWEST_CONSTRAINTS.name} /opt/leastaction/constraints.txt" in image
        )
        assert "-c /opt/leastaction/constraints.txt" in install
        # The image's Airflow stays (the constraints pin the same release); the extras of the Compose topology.
        assert '"apache-airflow==${AIRFLOW_VERSION}"' in install
        assert '"${wheel}[postgres,dbt,celery]"' in install
        assert 'wheel="$(echo /opt/leastaction/dist/airflow_leastaction-*.whl)"' in install

    def test_every_file_the_dockerfile_copies_exists_and_is_not_ignored(self):
        root = DOCKER.parent
        ignored = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
        for sources, _ in copy_lines():
            for source in sources:
                assert (root / source).exists(), source
                allowed = {f"!{source}", f"!{source}/", *(f"!{parent}/" for parent in Path(source).parents)}
                assert allowed & set(ignored), source

    def test_build_context_and_dockerfile_exist(self, compose):
        build = compose["x-airflow-common"]["build"]
        context = (DOCKER / build["context"]).resolve()
        assert (context / build["dockerfile"]).is_file()
        assert (context / "pyproject.toml").is_file()


class TestServices:
    def test_topology_has_every_component(self, services):
        assert {"postgres", "redis", *AIRFLOW_SERVICES} <= set(services)

    @pytest.mark.parametrize("name,command", [(k, v) for k, v in AIRFLOW_SERVICES.items() if v])
    def test_component_runs_its_airflow_command(self, services, name, command):
        assert services[name]["command"] == command

    def test_init_migrates_airflow_then_the_catalog_then_deploys_the_dbt_project(self, services):
        init = services["airflow-init"]
        assert init["entrypoint"] == "/bin/bash"
        assert init["command"] == [INIT_IN_IMAGE]
        assert image_copies()[INIT_IN_IMAGE] == DOCKER / "airflow-init.sh"
        lines = (DOCKER / "airflow-init.sh").read_text().splitlines()
        script = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
        assert "set -euo pipefail" in script  # a failed Airflow migration stops before the catalog's
        assert (
            script.index("airflow db migrate")
            < script.index("airflow-leastaction db upgrade")
            < script.index("dbt build")
        )
        assert init["restart"] == "no"

    def test_components_start_after_a_successful_init_and_healthy_backends(self, services):
        for name in AIRFLOW_SERVICES:
            if name == "airflow-init":
                continue
            deps = services[name]["depends_on"]
            assert deps["airflow-init"] == {"condition": "service_completed_successfully"}, name
            assert deps["postgres"] == {"condition": "service_healthy"}, name
            assert deps["redis"] == {"condition": "service_healthy"}, name

    def test_every_long_running_service_has_a_healthcheck(self, services):
        for name, service in services.items():
            if name != "airflow-init":
                assert service["healthcheck"]["test"], name

    def test_healthy_conditions_only_name_services_with_healthchecks(self, services):
        for name, service in services.items():
            for dep, cond in service.get("depends_on", {}).items():
                assert dep in services, f"{name} depends on unknown {dep}"
                assert dep != name, f"{name} depends on itself"
                if cond["condition"] == "service_healthy":
                    assert "healthcheck" in services[dep], f"{name} waits for {dep}, which has no healthcheck"

    def test_scheduler_healthcheck_has_its_health_server_enabled(self, services):
        scheduler = services["airflow-scheduler"]
        assert env_of(scheduler)["AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK"] == "true"
        assert "8974/health" in " ".join(scheduler["healthcheck"]["test"])

    def test_several_triggerers_and_workers(self, services):
        assert services["airflow-triggerer"]["deploy"]["replicas"] >= 2
        assert services["airflow-worker"]["deploy"]["replicas"] >= 1

    def test_every_host_path_mounted_exists(self, services):
        for name, service in services.items():
            for spec in service.get("volumes", []):
                path = host_path(spec)
                assert path is None or path.exists(), f"{name} mounts missing {spec}"

    def test_no_airflow_service_writes_into_the_checkout(self, services):
        # DAGs and configuration are baked into the image; only read-only init files are bind-mounted.
        for name, service in services.items():
            for spec in service.get("volumes", []):
                if host_path(spec) is not None:
                    assert spec.endswith(":ro"), f"{name} bind-mounts {spec} writable"

    def test_up_rebuilds_the_image_so_an_upgrade_needs_no_extra_flag(self, compose):
        assert compose["x-airflow-common"]["pull_policy"] == "build"

    def test_named_volumes_are_declared(self, compose, services):
        declared = set(compose.get("volumes") or {})
        for name, service in services.items():
            for spec in service.get("volumes", []):
                if host_path(spec) is None:
                    assert spec.split(":", 1)[0] in declared, f"{name}: {spec}"


class TestEnvironment:
    def test_every_airflow_component_shares_one_configuration(self, services):
        envs = [env_of(services[name]) for name in AIRFLOW_SERVICES]
        keys = (
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
            "AIRFLOW__API_AUTH__JWT_SECRET",
            "AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT",
            "AIRFLOW__CELERY__BROKER_URL",
        )
        for key in keys:
            assert len({env[key] for env in envs}) == 1, key

    def test_airflow_database_is_the_postgres_service(self, services):
        env, pg = env_of(services["airflow-scheduler"]), env_of(services["postgres"])
        for key in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__CELERY__RESULT_BACKEND"):
            url = make_url(env[key].removeprefix("db+"))
            assert (url.host, url.port, url.username, url.password, url.database) == (
                "postgres",
                5432,
                pg["POSTGRES_USER"],
                pg["POSTGRES_PASSWORD"],
                pg["POSTGRES_DB"],
            ), key

    def test_catalog_connection_reaches_the_database_the_init_script_creates(self, services):
        from airflow.models.connection import Connection

        raw = env_of(services["airflow-scheduler"])["AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT"]
        conn = Connection.from_json(raw, conn_id="leastaction_catalog_default")
        assert conn.conn_type == "leastaction_catalog"
        url = make_url(url_from_connection(conn))
        sql = "\n".join(p.read_text() for p in sorted((DOCKER / "postgres-init").glob("*.sql")))
        role, password = re.search(r"CREATE ROLE (\w+) LOGIN PASSWORD '([^']*)'", sql).groups()
        database, owner = re.search(r"CREATE DATABASE (\w+) OWNER (\w+)", sql).groups()
        assert url.get_backend_name() == "postgresql"
        assert (url.host, url.username, url.password, url.database) == ("postgres", role, password, database)
        assert owner == role
        assert (
            url.database
            != make_url(env_of(services["airflow-scheduler"])["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).database
        )

    def test_init_script_is_mounted_into_postgres_entrypoint(self, services):
        mounts = services["postgres"]["volumes"]
        assert any(m.startswith("./postgres-init:/docker-entrypoint-initdb.d") for m in mounts)

    def test_celery_executor_uses_the_redis_service(self, services):
        env = env_of(services["airflow-worker"])
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
        assert urlsplit(env["AIRFLOW__CELERY__BROKER_URL"]).hostname == "redis"

    def test_execution_api_url_points_at_the_api_server(self, services):
        url = urlsplit(env_of(services["airflow-worker"])["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
        container_port = int(services["airflow-apiserver"]["ports"][0].split(":")[-1])
        assert (url.hostname, url.port, url.path) == ("airflow-apiserver", container_port, "/execution/")

    def test_dags_folder_is_the_examples_copied_into_the_image(self, services):
        folder = env_of(services["airflow-scheduler"])["AIRFLOW__CORE__DAGS_FOLDER"]
        assert image_copies()[folder] == DOCKER.parent / "dags_examples"

    def test_every_configured_user_has_a_password(self, services):
        env = env_of(services["airflow-apiserver"])
        users = [u.split(":")[0] for u in env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(",")]
        container_file = Path(env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
        source = image_copies()[str(container_file.parent)]
        passwords = json.loads((source / container_file.name).read_text())
        assert set(users) <= set(passwords)

    def test_dbt_project_and_its_sources_are_on_a_volume_every_airflow_service_mounts(self, services):
        for name in AIRFLOW_SERVICES:
            env, service = env_of(services[name]), services[name]
            volumes = {spec.split(":")[1]: spec.split(":")[0] for spec in service["volumes"]}
            for key in ("FIELD_OPS_DBT_PROJECT_DIR", "FIELD_OPS_DATA_DIR", "FIELD_OPS_DUCKDB_PATH"):
                path = Path(env[key])
                mount = next((m for m in volumes if path.is_relative_to(m)), None)
                assert mount is not None and host_path(f"{volumes[mount]}:{mount}") is None, (name, key)

    def test_dbt_sources_are_the_data_folder_the_init_keeps_across_upgrades(self, services):
        # airflow-init replaces the volume's project with the image's on every `up`, all but data/, target/
        # and logs/: sources written anywhere else in the project would be lost on an upgrade.
        env = env_of(services["airflow-worker"])
        assert Path(env["FIELD_OPS_DATA_DIR"]) == Path(env["FIELD_OPS_DBT_PROJECT_DIR"]) / "data"
        script = (DOCKER / "airflow-init.sh").read_text()
        assert "kept=(-name data -o -name target -o -name logs)" in script

    def test_dbt_duckdb_file_is_on_a_volume_every_worker_mounts(self, services):
        worker = services["airflow-worker"]
        path = Path(env_of(worker)["FIELD_OPS_DUCKDB_PATH"])
        assert any(spec.split(":")[1] == str(path.parent) for spec in worker["volumes"])
