"""The Compose example's init step, run for real outside Docker: it migrates Airflow and the catalog and
deploys the example dbt project, so a drain can build models that read its views."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docker" / "airflow-init.sh"

pytestmark = [pytest.mark.dbt, pytest.mark.slow]


def snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def run_init(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600)


def test_init_deploys_the_example_views_and_a_second_run_is_an_idempotent_upgrade(tmp_path):
    home, data = tmp_path / "airflow", tmp_path / "dbt-data"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "FIELD_OPS_DBT_PROJECT_SOURCE": str(ROOT / "dags_examples" / "dbt_project"),
        "FIELD_OPS_DBT_PROJECT_DIR": str(data / "dbt_project"),
        "FIELD_OPS_DUCKDB_PATH": str(data / "field_ops.duckdb"),
    }
    env.pop("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", None)
    source_before = snapshot(ROOT / "dags_examples" / "dbt_project")
    first = run_init(env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (home / "leastaction" / "catalog.db").is_file()
    with duckdb.connect(str(data / "field_ops.duckdb"), read_only=True) as db:
        views = {r[0] for r in db.execute("select table_name from information_schema.views").fetchall()}
    assert "stg_field_ops__projects" in views
    assert (data / "dbt_project" / "target" / "run_results.json").is_file()
    assert snapshot(ROOT / "dags_examples" / "dbt_project") == source_before  # the checkout is untouched
    (data / "dbt_project" / "data" / "marker.csv").write_text("kept\n")

    second = run_init(env)
    assert second.returncode == 0, second.stdout + second.stderr
    # The copy on the volume is the one the DAGs write; a re-run keeps it.
    assert (data / "dbt_project" / "data" / "marker.csv").read_text() == "kept\n"
