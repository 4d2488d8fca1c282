"""The Compose example's init step, run for real outside Docker: it migrates Airflow and the catalog and
deploys the example dbt project, so a drain can build models that read its views."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.helpers.paths import ROOT

SCRIPT = ROOT / "docker" / "airflow-init.sh"
# What a local run leaves in the checkout's project (.gitignore) and the image does not ship.
IGNORED = ("target", "logs", "dbt_packages", "*.duckdb", "*.duckdb.wal")

pytestmark = pytest.mark.dbt


def snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def run_init(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600)


def views_of(path: Path) -> dict[str, set[str]]:
    with duckdb.connect(str(path), read_only=True) as db:
        rows = db.execute(
            "select table_name, column_name from information_schema.columns"
            " where table_name in (select table_name from information_schema.views)"
        ).fetchall()
    views: dict[str, set[str]] = {}
    for view, column in rows:
        views.setdefault(view, set()).add(column)
    return views


def test_init_deploys_the_example_views_and_an_upgrade_deploys_the_new_models_keeping_the_data(tmp_path, monkeypatch):
    # The image's copy of the project, so a test can release a new version of it without touching the checkout.
    image = tmp_path / "image" / "dbt_project"
    shutil.copytree(ROOT / "dags_examples" / "dbt_project", image, ignore=shutil.ignore_patterns(*IGNORED))
    (image / "models" / "staging" / "stg_retired.sql").write_text("select 1 as retired\n")
    home, data = tmp_path / "airflow", tmp_path / "dbt-data"
    volume = data / "dbt_project"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "FIELD_OPS_DBT_PROJECT_SOURCE": str(image),
        "FIELD_OPS_DBT_PROJECT_DIR": str(volume),
        "FIELD_OPS_DUCKDB_PATH": str(data / "field_ops.duckdb"),
    }
    env.pop("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", None)
    image_before = snapshot(image)
    first = run_init(env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (home / "leastaction" / "catalog.db").is_file()
    views = views_of(data / "field_ops.duckdb")
    assert "stg_field_ops__projects" in views and "stg_retired" in views
    assert (volume / "target" / "run_results.json").is_file()
    assert snapshot(image) == image_before  # the image's project is only read
    # What the DAGs and dbt write on the volume: an ingested row, a new source file, dbt's artifacts.
    projects_csv = (volume / "data" / "projects.csv").read_text()
    (volume / "data" / "projects.csv").write_text(projects_csv + "999,Ingested,north\n")
    (volume / "data" / "marker.csv").write_text("kept\n")
    (volume / "target" / "marker.txt").write_text("kept\n")

    # The next release changes a view, adds a model and a seed source file, drops a model and ships
    # different seed rows for a source the volume already has.
    staging = image / "models" / "staging"
    (staging / "stg_field_ops__projects.sql").write_text(
        (staging / "stg_field_ops__projects.sql")
        .read_text()
        .replace("region\n", "region,\n    upper(region) as region_code\n")
    )
    (staging / "stg_field_ops__regions.sql").write_text(
        "select distinct region from {{ ref('stg_field_ops__projects') }}\n"
    )
    (staging / "stg_retired.sql").unlink()
    (image / "data" / "projects.csv").write_text(projects_csv.splitlines()[0] + "\n")
    (image / "data" / "new_source.csv").write_text("id\n1\n")

    second = run_init(env)
    assert second.returncode == 0, second.stdout + second.stderr
    views = views_of(data / "field_ops.duckdb")
    assert "region_code" in views["stg_field_ops__projects"]
    assert "stg_field_ops__regions" in views
    assert not (volume / "models" / "staging" / "stg_retired.sql").exists()
    assert (volume / "models" / "staging" / "stg_field_ops__regions.sql").is_file()
    # The volume's data is the DAGs': kept as they wrote it, with only the source file it lacked seeded.
    assert (volume / "data" / "projects.csv").read_text() == projects_csv + "999,Ingested,north\n"
    assert (volume / "data" / "marker.csv").read_text() == "kept\n"
    assert (volume / "data" / "new_source.csv").read_text() == "id\n1\n"
    assert (volume / "target" / "marker.txt").read_text() == "kept\n"
    monkeypatch.chdir(volume)  # the views read their CSV sources relative to the project, as dbt runs them
    with duckdb.connect(str(data / "field_ops.duckdb"), read_only=True) as db:
        assert db.execute("select count(*) from stg_field_ops__projects where project_id = 999").fetchone() == (1,)


def test_init_names_a_source_folder_without_a_dbt_project(tmp_path):
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path}/airflow/airflow.db",
        "FIELD_OPS_DBT_PROJECT_SOURCE": str(tmp_path / "nowhere"),
        "FIELD_OPS_DBT_PROJECT_DIR": str(tmp_path / "dbt-data" / "dbt_project"),
    }
    env.pop("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", None)
    result = run_init(env)
    assert result.returncode == 1
    assert f"no dbt_project.yml in {tmp_path / 'nowhere'} (FIELD_OPS_DBT_PROJECT_SOURCE)" in result.stderr
    assert not (tmp_path / "dbt-data").exists()
    assert not (tmp_path / "airflow").exists()  # checked before anything is migrated
