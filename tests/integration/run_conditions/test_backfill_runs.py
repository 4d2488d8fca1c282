"""Backfill runs of another pipeline never satisfy, block or get waited for as its latest run.

Airflow marks a backfill's runs with run type ``backfill``; the listener records each slot's run type,
and the gate's read of another DAG's latest run leaves backfill records out.
"""

from __future__ import annotations

from airflow_leastaction.catalog.run_reads import BACKFILL_RUN_TYPE
from airflow_leastaction.catalog.schema import task_run
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.run_conditions import day, decisions, states

OTHER = TaskIdentity("rc_other_pipeline", "other-team")
META = TaskMeta(cron="0 0 * * *", source="external")


def other_run(store, n: int, state: str, run_type: str, rows: int | None = 5, finish: bool = True):
    run_id = f"{run_type}__{n}"
    store.record_running(OTHER, day(n), meta=META, run_id=run_id, run_type=run_type)
    if not finish:
        return None
    if state == "success":
        return store.record_success(OTHER, day(n), meta=META, run_id=run_id, rows_written=rows, run_type=run_type)
    return store.record_finished(OTHER, day(n), state, meta=META, run_id=run_id, run_type=run_type)


def test_the_backfill_run_type_is_airflows_own():
    from airflow.utils.types import DagRunType

    from airflow_leastaction.listeners.catalog import run_type_of

    class Run:
        run_type = DagRunType.BACKFILL_JOB

    assert run_type_of(Run()) == BACKFILL_RUN_TYPE


class TestLatestRunLeavesBackfillsOut:
    def test_a_running_backfill_is_not_the_latest_run(self, store):
        other_run(store, 5, "success", "scheduled")
        other_run(store, 2, "running", BACKFILL_RUN_TYPE, finish=False)  # started after day 5 finished
        runs = store.runs.latest_runs([OTHER])[OTHER]
        assert (runs.latest.slot, runs.latest.state) == (day(5), "success")
        assert runs.latest_finished.slot == day(5)

    def test_a_finished_backfill_is_not_the_latest_finished_run(self, store):
        other_run(store, 5, "failed", "scheduled")
        other_run(store, 3, "success", BACKFILL_RUN_TYPE)
        runs = store.runs.latest_runs([OTHER])[OTHER]
        assert (runs.latest_finished.slot, runs.latest_finished.state) == (day(5), "failed")

    def test_a_task_with_only_backfill_runs_has_no_latest_run(self, store):
        other_run(store, 3, "success", BACKFILL_RUN_TYPE)
        runs = store.runs.latest_runs([OTHER])[OTHER]
        assert runs.task_pk is not None and runs.latest is None and runs.latest_finished is None


class TestGatesIgnoreBackfillsOfOtherPipelines:
    def test_a_failed_backfill_of_the_upstream_does_not_block_its_dependents(self, rc_catalog, run_dag):
        other_run(rc_catalog, 5, "success", "scheduled")
        other_run(rc_catalog, 2, "failed", BACKFILL_RUN_TYPE)  # finished last, but re-ran history
        assert states(run_dag("rc_cross_dag_has_data", day(6)))["child"] == "success"
        [decision] = decisions(rc_catalog, "rc_cross_dag_has_data", "child__gate")
        assert (decision["result"], decision["upstream_slot"]) == ("SATISFIED", day(5))

    def test_a_successful_backfill_of_the_upstream_does_not_satisfy_its_dependents(self, rc_catalog, run_dag):
        other_run(rc_catalog, 5, "failed", "scheduled")
        other_run(rc_catalog, 4, "success", BACKFILL_RUN_TYPE)
        assert states(run_dag("rc_cross_dag_has_data", day(6)))["child"] == "skipped"
        [decision] = decisions(rc_catalog, "rc_cross_dag_has_data", "child__gate")
        assert (decision["result"], decision["upstream_slot"]) == ("UNSATISFIED", day(5))

    def test_the_listener_records_the_airflow_run_type(self, rc_catalog, run_dag):
        run_dag("rc_cross_dag_has_data", day(7))  # dag.test() makes a manual run
        with rc_catalog.engine.connect() as conn:
            types = set(conn.execute(task_run.select().with_only_columns(task_run.c.run_type)).scalars())
        assert types == {"manual"}
