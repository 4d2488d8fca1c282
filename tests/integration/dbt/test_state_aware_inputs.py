"""Inputs of a build that dbt's manifest does not hash, on real dbt-duckdb builds: a seed above 1 MiB (dbt
records its path, not its content), a var read only in a hook, a var read only in ``dbt_project.yml`` config.
A change to any of them between drains builds the models it affects; the rest stand on their last build."""

from __future__ import annotations

import duckdb
import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt.planner import Planner
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.request_key import request_key
from airflow_leastaction.dbt.runner import DbtRunner
from tests.helpers.dbt_queue import make_worker

pytestmark = [pytest.mark.dbt, pytest.mark.no_airflow]
PROFILE = "{name}:\n  target: dev\n  outputs:\n    dev: {{type: duckdb, path: {name}.duckdb, threads: 1}}\n"
SEED_ROWS = 110_000  # about 1.2 MiB: above dbt's 1 MiB, where a seed's checksum is its path


def write_project(root, name: str, files: dict[str, str]) -> DbtRunner:
    project = {
        "dbt_project.yml": f'name: {name}\nversion: "1.0.0"\nconfig-version: 2\nprofile: {name}\n',
        "profiles.yml": PROFILE.format(name=name),
        **files,
    }
    for path, text in project.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return DbtRunner(root)


def seed_csv(value: int) -> str:
    return "id,amount\n" + "".join(f"{i:08d},{value}\n" for i in range(SEED_ROWS))


def query(root, name: str, sql: str):
    with duckdb.connect(str(root / f"{name}.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.fixture
def sqlite_queue(sqlite_url) -> QueueStore:
    return QueueStore(get_engine(sqlite_url, migrate=True))


class Drains:
    """Requests for a plan under a key, each drained at once; returns the drain's report."""

    def __init__(self, queue: QueueStore, runner: DbtRunner):
        self.queue, self.runner, self.planner = queue, runner, Planner(runner)

    def __call__(self, selector: str, *, resource_type: str = "model", **key) -> dict:
        plan = self.planner.plan(selector, resource_type=resource_type)
        self.queue.enqueue(request_key("field_ops", **key), plan.models, plan.selector)
        return make_worker(self.queue, self.runner).drain().as_dict()


def built(report: dict) -> list[str]:
    return sorted(u.rsplit(".", 1)[-1] for u in report["built"])


def reused(report: dict) -> list[str]:
    return sorted(u.rsplit(".", 1)[-1] for u in report["reused"])


class TestALargeSeed:
    def test_a_seed_above_1_mib_changed_between_drains_is_loaded_again_with_everything_reading_it(
        self, sqlite_queue, tmp_path
    ):
        runner = write_project(
            tmp_path,
            "big",
            {
                "seeds/amounts.csv": seed_csv(1),
                "models/total.sql": "{{ config(materialized='table') }}\n"
                "select sum(amount) as total from {{ ref('amounts') }}\n",
                "models/report.sql": "{{ config(materialized='table') }}\nselect total from {{ ref('total') }}\n",
            },
        )
        assert (tmp_path / "seeds/amounts.csv").stat().st_size > 1024 * 1024
        drain = Drains(sqlite_queue, runner)
        assert built(drain("amounts", resource_type="seed", command="seed")) == ["amounts"]
        assert built(drain("amounts+")) == ["report", "total"]
        assert reused(drain("amounts", resource_type="seed", command="seed")) == ["amounts"]  # nothing changed

        (tmp_path / "seeds/amounts.csv").write_text(seed_csv(2))  # same size, same path, other rows
        assert built(drain("amounts", resource_type="seed", command="seed")) == ["amounts"]
        again = drain("amounts+")
        assert built(again) == ["report", "total"]
        assert {u.rsplit(".", 1)[-1]: r for u, r in again["batches"][0]["reasons"].items()} == {
            "total": "code changed",
            "report": "upstream rebuilt: model.big.total",
        }
        assert query(tmp_path, "big", "select total from main.report") == [(2 * SEED_ROWS,)]


HOOKED = {
    "models/logged/logged.sql": "select 1 as x\n",
    "models/aliased/aliased.sql": "select 1 as x\n",
    "models/plain.sql": "select 1 as x\n",
}
HOOKED_PROJECT = """
vars:
  stamp: first
on-run-start:
  - "create table if not exists main.hook_log (stamp varchar)"
models:
  hooked:
    +materialized: table
    logged:
      +post-hook: "insert into main.hook_log select '{{ var('stamp') }}'"
    aliased:
      +alias: "aliased_{{ var('suffix', 'x') }}"
"""


class TestVarsOutsideTheModelsSql:
    @pytest.fixture
    def hooked(self, tmp_path, sqlite_queue):
        runner = write_project(tmp_path, "hooked", HOOKED)
        project = tmp_path / "dbt_project.yml"
        project.write_text(project.read_text() + HOOKED_PROJECT)
        drain = Drains(sqlite_queue, runner)
        assert built(drain("logged aliased plain")) == ["aliased", "logged", "plain"]
        return drain

    def test_a_var_read_only_in_a_post_hook_changed_between_drains_builds_the_models_the_hook_runs_for(
        self, hooked, tmp_path
    ):
        project = tmp_path / "dbt_project.yml"
        project.write_text(project.read_text().replace("stamp: first", "stamp: second"))
        again = hooked("logged aliased plain")
        assert (built(again), reused(again)) == (["logged"], ["aliased", "plain"])
        assert again["batches"][0]["reasons"]["model.hooked.logged"] == "code changed"
        assert query(tmp_path, "hooked", "select stamp from main.hook_log order by stamp") == [("first",), ("second",)]

    def test_a_var_read_only_in_the_project_config_builds_the_models_it_configures_when_a_request_sets_it(
        self, hooked, tmp_path
    ):
        other = hooked("logged aliased plain", dbt_vars={"suffix": "y"})
        assert (built(other), reused(other)) == (["aliased"], ["logged", "plain"])
        tables = "select table_name from information_schema.tables where table_name like 'aliased%' order by 1"
        assert query(tmp_path, "hooked", tables) == [("aliased_x",), ("aliased_y",)]
