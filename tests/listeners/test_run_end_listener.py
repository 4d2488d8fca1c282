"""Final states Airflow sets without a worker, and mapped tasks as a whole, in real DAG runs."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.parents import judge_parents

pytestmark = pytest.mark.integration

UTC = dt.timezone.utc
DAY = dt.datetime(2026, 11, 23, tzinfo=UTC)


def named(task_id: str, partition: str = "") -> TaskIdentity:
    return TaskIdentity(f"re_outcomes.{task_id}", "airflow", "", partition)


@pytest.fixture
def spool(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path / "spool"


def slot_states(store, identities) -> dict[str, str]:
    found = store.slot_records((i, DAY) for i in identities)
    return {f"{i.name}[{i.partition}]" if i.partition else i.name: r.state for (i, _), r in found.items()}


class TestRunEndRecordsEveryTask:
    def test_the_catalog_agrees_with_airflow_for_every_task_of_the_run(self, store, catalog_url, use_catalog,
                                                                       spool, run_dag):
        use_catalog(catalog_url)
        run = run_dag("re_outcomes", DAY)
        assert run.state == "failed"
        airflow = {(ti.task_id, ti.map_index): str(getattr(ti.state, "value", ti.state))
                   for ti in run.get_task_instances()}
        assert airflow[("after_boom", -1)] == "upstream_failed" and airflow[("cut", -1)] == "skipped"
        identities = [named(t, str(m) if m >= 0 else "") for t, m in airflow]
        expected = {f"re_outcomes.{t}[{m}]" if m >= 0 else f"re_outcomes.{t}": s for (t, m), s in airflow.items()}
        recorded = slot_states(store, identities)
        assert recorded == expected

    def test_a_task_skipped_without_running_no_longer_waits_as_has_not_run_yet(self, store, catalog_url,
                                                                                use_catalog, spool, run_dag):
        use_catalog(catalog_url)
        run_dag("re_outcomes", DAY)
        [skipped, upstream_failed] = judge_parents(
            [named("cut"), named("after_boom")], DAY, store.snapshot([(named("cut"), DAY), (named("after_boom"), DAY)]))
        assert "was skipped; waiting for a run that completes it" in skipped.reason
        assert upstream_failed.rejected and "upstream_failed" in upstream_failed.reason


class TestMappedParents:
    def test_a_mapped_task_named_without_a_map_index_is_done_when_every_map_index_is(
        self, store, catalog_url, use_catalog, spool, run_dag
    ):
        use_catalog(catalog_url)
        run = run_dag("re_outcomes", DAY)
        assert slot_states(store, [named("double"), named("half")]) == {
            "re_outcomes.double": "success", "re_outcomes.half": "failed"}
        assert store.get_task(named("double"))["prev_interval_start"] == DAY
        # ...recorded by the last map index, before the run ended: a downstream task of the run saw it.
        assert run.get_task_instance("sees_double_done").state == "success"
        assert run_dag("re_mapped_child", DAY).state == "success"
