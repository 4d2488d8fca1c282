"""Dependencies on other pipelines (``dag_run_condition``): judged once per run at its start, recorded as
the run's decisions, consumed when the run succeeds; a run they can never admit skips every task; a re-run
of the same run resumes with its decisions. Real DAG runs (``dag.test()``); the upstream DAG's runs reach
the catalog through the DAG-run listener."""

from __future__ import annotations

import datetime as dt

from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.refs import airflow_dag, airflow_task
from airflow_leastaction.run_conditions.model import DAG_GATE_TASK_ID
from tests.dags.rc_pipeline_cases import OTHER
from tests.helpers.run_conditions import consumed, day, decisions, states

ORDERS = airflow_dag("rc_pipeline_orders")
PIPELINE = airflow_dag("rc_pipeline")
TASKS = ("extract", "load", "cleanup", "report", "report__gate", "audit", "audit__gate")


def _after(n: int) -> dt.datetime:
    """A fixed ``run_after``: dag.test() then re-creates the same run (same run id), as a clear does."""
    return day(n) + dt.timedelta(hours=1)


def test_every_root_task_and_root_gate_waits_for_the_run_gate(dagbag):
    dag = dagbag.get_dag("rc_pipeline")
    gate = dag.get_task(DAG_GATE_TASK_ID)
    assert sorted(gate.downstream_task_ids) == ["audit__gate", "extract"]
    assert {t.run_gate for t in dag.tasks if t.task_id.endswith("__gate")} == {DAG_GATE_TASK_ID}


class TestCatalogReads:
    def test_rows_written_by_a_run_sum_what_its_tasks_reported(self, store):
        for task_id, run_id, rows in (("a", "r1", 3), ("b", "r1", None), ("c", "r0", 100)):
            store.record_success(
                airflow_task("orders", task_id),
                day(1),
                run_id=run_id,
                rows_written=rows,
                meta=TaskMeta(dag_id="orders", task_id=task_id),
            )
        assert store.runs.run_rows_written("orders", "r1") == (3, None)
        assert store.runs.run_rows_written("orders", "r0") == (100, None)
        assert store.runs.run_rows_written("orders", "r2") == (None, None)

    def test_a_run_with_a_task_whose_rows_could_not_be_read_says_why(self, store):
        error = "ConnectionError: the API server cannot be reached"
        for task_id, rows, why in (("a", 0, None), ("b", None, error)):
            meta = TaskMeta(dag_id="orders", task_id=task_id)
            store.record_success(
                airflow_task("orders", task_id), day(1), run_id="r1", rows_written=rows, rows_error=why, meta=meta
            )
        assert store.runs.run_rows_written("orders", "r1") == (0, error)

    def test_a_runs_decisions_are_those_of_its_latest_attempt_that_recorded_any(self, store):
        judged = [Judgement(ORDERS.key, True, "ok")]
        for attempt in (1, 2):
            store.audit.record_decisions(
                AttemptKey("p", DAG_GATE_TASK_ID, "r1", -1, attempt), judged, downstream_slot=day(1)
            )
        assert [d["attempt"] for d in store.audit.run_decisions("p", DAG_GATE_TASK_ID, "r1")] == [2]
        assert store.audit.run_decisions("p", DAG_GATE_TASK_ID, "r2") == []


class TestPipelineRuns:
    def test_a_run_whose_task_rows_could_not_be_read_is_recorded_with_why_not_as_none(
        self, rc_catalog, run_dag, monkeypatch
    ):
        from airflow_leastaction import rows

        def unreachable(ti):
            raise ConnectionError("the API server cannot be reached")

        monkeypatch.setattr(rows, "take_reported", lambda ti: None)  # as if the count were pushed elsewhere
        monkeypatch.setattr(rows, "_read_pushed", unreachable)
        monkeypatch.setattr(rows, "READ_PAUSE", 0.0)
        assert run_dag("rc_pipeline_orders", day(1)).state == "success"
        orders = rc_catalog.runs.latest_runs([ORDERS])[ORDERS].latest_finished  # recorded by the DAG-run listener
        assert (orders.state, orders.rows_written) == ("success", None)
        assert orders.rows_error == "ConnectionError: the API server cannot be reached"

    def test_a_satisfied_pipeline_runs_and_consumes_its_decisions_when_the_run_succeeds(self, rc_catalog, run_dag):
        assert run_dag("rc_pipeline_orders", day(1)).state == "success"
        orders = rc_catalog.runs.latest_runs([ORDERS])[ORDERS].latest_finished  # recorded by the DAG-run listener
        assert (orders.slot, orders.state, orders.rows_written) == (day(1), "success", 7)
        run = run_dag("rc_pipeline", day(1))
        assert run.state == "success"
        assert {t: s for t, s in states(run).items() if t in TASKS} == {t: "success" for t in TASKS}
        made = {d["dependency"]: d for d in decisions(rc_catalog, "rc_pipeline", DAG_GATE_TASK_ID)}
        assert made[ORDERS.key]["result"] == "SATISFIED" and made[ORDERS.key]["upstream_slot"] == day(1)
        assert made[OTHER.key]["result"] == "UNSATISFIED"  # ANY: one is enough
        [row] = [c for c in consumed(rc_catalog, "rc_pipeline") if c["task_id"] == DAG_GATE_TASK_ID]
        assert (row["decision_id"], row["upstream_slot"]) == (made[ORDERS.key]["id"], day(1))
        assert row["downstream_task_pk"] == rc_catalog.get_task(PIPELINE)["id"]

    def test_a_pipeline_whose_dependencies_can_never_be_met_skips_every_task_of_the_run(self, rc_catalog, run_dag):
        rc_catalog.record_finished(ORDERS, day(2), "failed", run_id="orders-2")
        run = run_dag("rc_pipeline", day(2))
        assert {t: s for t, s in states(run).items() if t != "leastaction_run_outcome"} == {
            DAG_GATE_TASK_ID: "skipped",
            **{t: "skipped" for t in TASKS},
        }  # cleanup runs on all_done, yet
        reasons = {
            d["dependency"]: (d["result"], d["reason"]) for d in decisions(rc_catalog, "rc_pipeline", DAG_GATE_TASK_ID)
        }
        assert reasons[ORDERS.key][0] == "UNSATISFIED" and "is failed" in reasons[ORDERS.key][1]
        assert reasons[OTHER.key][0] == "UNSATISFIED" and "never reported" in reasons[OTHER.key][1]
        assert consumed(rc_catalog, "rc_pipeline") == []
        _, slots = rc_catalog.snapshot([(PIPELINE, day(2))])
        assert [s.state for s in slots if s.slot == day(2)] == ["skipped"]  # so SUCCESS on it is not met

    def test_a_rerun_of_a_skipped_run_resumes_with_its_decisions(self, rc_catalog, run_dag):
        first = run_dag("rc_pipeline", day(3), run_after=_after(3))
        assert states(first)["extract"] == "skipped"
        before = decisions(rc_catalog, "rc_pipeline", DAG_GATE_TASK_ID)
        rc_catalog.report_completion(OTHER, day(3), rows_written=4)  # would satisfy a new judgement
        again = run_dag("rc_pipeline", day(3), run_after=_after(3))
        assert again.run_id == first.run_id
        assert {t: s for t, s in states(again).items() if t in TASKS} == {t: "skipped" for t in TASKS}
        assert decisions(rc_catalog, "rc_pipeline", DAG_GATE_TASK_ID) == before

    def test_a_rerun_of_an_admitted_run_resumes_with_its_decisions(self, rc_catalog, run_dag):
        run_dag("rc_pipeline_orders", day(4))
        assert states(run_dag("rc_pipeline", day(4), run_after=_after(4)))["extract"] == "success"
        before = decisions(rc_catalog, "rc_pipeline", DAG_GATE_TASK_ID)
        rc_catalog.record_finished(ORDERS, day(5), "failed", run_id="orders-5")  # would not satisfy now
        run = run_dag("rc_pipeline", day(4), run_after=_after(4))
        assert {t: s for t, s in states(run).items() if t in TASKS} == {t: "success" for t in TASKS}
        assert decisions(rc_catalog, "rc_pipeline", DAG_GATE_TASK_ID) == before
        assert len([c for c in consumed(rc_catalog, "rc_pipeline") if c["task_id"] == DAG_GATE_TASK_ID]) == 1
