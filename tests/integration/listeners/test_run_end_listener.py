"""Final states Airflow sets without a worker, and mapped tasks as a whole, in real DAG runs."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa

from airflow_leastaction.catalog.engine import dispose_all
from airflow_leastaction.cli import main as cli
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.parents import judge_parents

UTC = dt.UTC
DAY = dt.datetime(2026, 11, 23, tzinfo=UTC)


def named(task_id: str, partition: str = "") -> TaskIdentity:
    return TaskIdentity(f"re_outcomes.{task_id}", "airflow", "", partition)


@pytest.fixture
def spool(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path / "spool"


def slot_states(store, identities) -> dict[str, str]:
    found = store.runs.slot_records((i, DAY) for i in identities)
    return {f"{i.name}[{i.partition}]" if i.partition else i.name: r.state for (i, _), r in found.items()}


def assert_catalog_agrees_with_airflow(store, run) -> None:
    airflow = {(ti.task_id, ti.map_index): str(getattr(ti.state, "value", ti.state)) for ti in run.get_task_instances()}
    assert airflow[("after_boom", -1)] == "upstream_failed" and airflow[("cut", -1)] == "skipped"
    identities = [named(t, str(m) if m >= 0 else "") for t, m in airflow]
    expected = {f"re_outcomes.{t}[{m}]" if m >= 0 else f"re_outcomes.{t}": s for (t, m), s in airflow.items()}
    assert slot_states(store, identities) == expected


class TestRunEndRecordsEveryTask:
    def test_the_catalog_agrees_with_airflow_for_every_task_of_the_run(
        self, store, catalog_url, use_catalog, spool, run_dag
    ):
        use_catalog(catalog_url)
        run = run_dag("re_outcomes", DAY)
        assert run.state == "failed"
        assert_catalog_agrees_with_airflow(store, run)

    @pytest.mark.postgres
    def test_with_the_catalog_down_the_run_end_spools_what_no_worker_reported_and_replay_agrees(
        self, pg_url, pg_admin_url, use_catalog, spool, run_dag
    ):
        from airflow_leastaction.catalog.engine import get_engine
        from airflow_leastaction.catalog.store import CatalogStore

        get_engine(pg_url, migrate=True)
        use_catalog(pg_url)
        allow_connections(pg_admin_url, pg_url, False)
        try:
            run = run_dag("re_outcomes", DAY)
        finally:
            allow_connections(pg_admin_url, pg_url, True)
        spooled = [json.loads(line) for f in spool.glob("pending-*.jsonl") for line in f.read_text().splitlines()]
        whole = ("re_outcomes.double", "")  # a mapped task as a whole: recorded by its last map index and the end
        successes = [
            (e["identity"]["name"], e["identity"]["partition"])
            for e in spooled
            if e["state"] == "success" and (e["identity"]["name"], e["identity"]["partition"]) != whole
        ]
        # Each worker success once: the run's end, unable to read the catalog, adds none of its own.
        assert len(successes) == len(set(successes)) == 6  # double[0..2], half[0..1], gate_closed
        assert ("re_outcomes.cut", "skipped") in {(e["identity"]["name"], e["state"]) for e in spooled}
        assert cli(["catalog", "replay"]) == 0
        assert_catalog_agrees_with_airflow(CatalogStore(get_engine(pg_url)), run)

    def test_a_task_skipped_without_running_no_longer_waits_as_has_not_run_yet(
        self, store, catalog_url, use_catalog, spool, run_dag
    ):
        use_catalog(catalog_url)
        run_dag("re_outcomes", DAY)
        [skipped, upstream_failed] = judge_parents(
            [named("cut"), named("after_boom")], DAY, store.snapshot([(named("cut"), DAY), (named("after_boom"), DAY)])
        )
        assert "was skipped; waiting for a run that completes it" in skipped.reason
        assert upstream_failed.rejected and "upstream_failed" in upstream_failed.reason


def allow_connections(pg_admin_url: str, url: str, allowed: bool) -> None:
    name = sa.engine.make_url(url).database
    admin = sa.create_engine(pg_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}'))
        if not allowed:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name}
            )
    admin.dispose()
    dispose_all()


class TestMappedParents:
    def test_a_mapped_task_named_without_a_map_index_is_done_when_every_map_index_is(
        self, store, catalog_url, use_catalog, spool, run_dag
    ):
        use_catalog(catalog_url)
        run = run_dag("re_outcomes", DAY)
        assert slot_states(store, [named("double"), named("half")]) == {
            "re_outcomes.double": "success",
            "re_outcomes.half": "failed",
        }
        assert store.get_task(named("double"))["prev_interval_start"] == DAY
        # ...recorded by the last map index, before the run ended: a downstream task of the run saw it.
        assert run.get_task_instance("sees_double_done").state == "success"
        assert run_dag("re_mapped_child", DAY).state == "success"

    def test_a_mapped_task_that_fails_or_is_skipped_as_a_whole_is_recorded_by_its_last_map_index(
        self, store, catalog_url, use_catalog, spool, run_dag
    ):
        use_catalog(catalog_url)
        run = run_dag("re_mapped_whole", DAY)
        whole = [TaskIdentity(f"re_mapped_whole.{t}", "airflow") for t in ("fail_all", "skip_all")]
        assert slot_states(store, whole) == {
            "re_mapped_whole.fail_all": "failed",
            "re_mapped_whole.skip_all": "skipped",
        }
        # ...before the run ended: a downstream task of the run saw both.
        assert run.get_task_instance("sees_wholes").state == "success"
