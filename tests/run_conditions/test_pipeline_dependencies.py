"""Dependencies on other pipelines (``dag_run_condition``): judged once per run at its start, recorded as
the run's decisions, consumed when the run succeeds; a run they can never admit skips every task; a re-run
of the same run resumes with its decisions. Real DAG runs (``dag.test()``); the upstream DAG's runs reach
the catalog through the DAG-run listener."""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.sdk import DAG, task

from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.exceptions import (
    CountWithoutNError,
    InvalidCountError,
    RunConditionError,
    SelfDependencyError,
    UnknownDependencyTypeError,
)
from airflow_leastaction.gate import ANY, Judgement, Verdict
from airflow_leastaction.refs import airflow_dag, airflow_task
from airflow_leastaction.run_conditions import dag_run_condition, depends_on, run_condition, success
from airflow_leastaction.run_conditions.judging import RunView, held_by_run_gate
from airflow_leastaction.run_conditions.model import DAG_GATE_TASK_ID, Dependency, GateSpec
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from tests.dags.rc_pipeline_cases import OTHER, START
from tests.run_conditions.conftest import consumed, day, decisions, states

ORDERS = airflow_dag("rc_pipeline_orders")
PIPELINE = airflow_dag("rc_pipeline")
TASKS = ("extract", "load", "cleanup", "report", "report__gate", "audit", "audit__gate")


def _after(n: int) -> dt.datetime:
    """A fixed ``run_after``: dag.test() then re-creates the same run (same run id), as a clear does."""
    return day(n) + dt.timedelta(hours=1)


def _dag(dag_id: str = "rc_pipeline_parse") -> DAG:
    return DAG(dag_id, schedule=None, start_date=START)


@task
def noop():
    return None


class TestDeclaration:
    def test_every_root_task_and_root_gate_waits_for_the_run_gate(self, dagbag):
        dag = dagbag.get_dag("rc_pipeline")
        gate = dag.get_task(DAG_GATE_TASK_ID)
        assert sorted(gate.downstream_task_ids) == ["audit__gate", "extract"]
        assert {t.run_gate for t in dag.tasks if t.task_id.endswith("__gate")} == {DAG_GATE_TASK_ID}

    def test_a_task_gated_after_the_run_condition_is_held_by_its_own_gate(self):
        with _dag() as dag:
            first = noop.override(task_id="first")()
            dag_run_condition(dag, success(ORDERS))
            run_condition(first, success(OTHER))
        assert sorted(dag.get_task(DAG_GATE_TASK_ID).downstream_task_ids) == ["first__gate"]
        assert dag.get_task("first").upstream_task_ids == {"first__gate"}

    def test_a_task_of_the_same_dag_is_rejected_naming_the_dag(self):
        with _dag() as dag:
            up = noop.override(task_id="up")()
            with pytest.raises(RunConditionError, match="DAG 'rc_pipeline_parse'.*'up'.*not another pipeline"):
                dag_run_condition(dag, success(up))

    @pytest.mark.parametrize(
        "kwargs,error",
        [
            (dict(when="N", count=3), InvalidCountError),
            (dict(when="N", count=0), InvalidCountError),
            (dict(when="ANY", count=1), CountWithoutNError),
            (dict(when="SOME"), RunConditionError),
        ],
    )
    def test_the_run_condition_is_validated_as_a_tasks_is(self, kwargs, error):
        with _dag() as dag, pytest.raises(error, match=f"DAG 'rc_pipeline_parse' task '{DAG_GATE_TASK_ID}'"):
            dag_run_condition(dag, success(ORDERS), success(OTHER), **kwargs)

    def test_an_unknown_dependency_type_is_rejected(self):
        with _dag() as dag, pytest.raises(UnknownDependencyTypeError, match="SOMETIMES"):
            dag_run_condition(dag, depends_on(ORDERS, "SOMETIMES"))

    def test_a_dag_that_depends_on_its_own_runs_is_rejected(self):
        with _dag() as dag, pytest.raises(SelfDependencyError, match="depends on its own runs"):
            dag_run_condition(dag, success(airflow_dag("rc_pipeline_parse")))

    def test_a_dags_identity_can_never_be_a_tasks(self):
        assert airflow_dag("orders").name == "orders::run"
        with pytest.raises(ValueError, match="has to be made of alphanumeric"):  # no ":" in DAG or task ids
            DAG("orders::run", schedule=None, start_date=START)

    def test_no_dependency_and_a_second_declaration_are_rejected(self):
        with _dag() as dag:
            with pytest.raises(RunConditionError, match="at least one dependency"):
                dag_run_condition(dag)
            dag_run_condition(dag, ORDERS)
            with pytest.raises(RunConditionError, match="already declared"):
                dag_run_condition(dag, OTHER)


class TestTaskGatesWaitForTheRunGate:
    SPEC = GateSpec("child", (Dependency(OTHER, "ALWAYS"),), ANY, run_gate=DAG_GATE_TASK_ID)

    @pytest.mark.parametrize(
        "state,verdict",
        [
            (None, Verdict.WAIT),
            ("running", Verdict.WAIT),
            ("deferred", Verdict.WAIT),
            ("skipped", Verdict.SKIP),
            ("failed", Verdict.SKIP),
        ],
    )
    def test_nothing_is_judged_before_the_run_gate_admitted_the_run(self, state, verdict):
        run = RunView("r1", {DAG_GATE_TASK_ID: state}, {}, frozenset({DAG_GATE_TASK_ID}), {})
        held = held_by_run_gate(self.SPEC, run)
        assert held.verdict is verdict and held.judgements[0].dependency == f"task:{DAG_GATE_TASK_ID}"

    def test_once_the_run_gate_admitted_the_run_the_task_gate_judges_its_own_dependencies(self):
        run = RunView("r1", {DAG_GATE_TASK_ID: "success"}, {}, frozenset({DAG_GATE_TASK_ID}), {})
        assert held_by_run_gate(self.SPEC, run) is None

    def test_the_trigger_carries_the_run_gate_through_serialization(self):
        trigger = RunConditionTrigger(
            dag_id="rc_t",
            run_id="r1",
            task_id="child",
            dependencies=[Dependency(OTHER).as_dict()],
            condition="ALL",
            count=None,
            slot_requests={},
            slot=day(2).isoformat(),
            upstream={},
            waiting=[],
            run_gate=DAG_GATE_TASK_ID,
        )
        _, kwargs = trigger.serialize()
        assert RunConditionTrigger(**kwargs).spec().run_gate == DAG_GATE_TASK_ID


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
        assert store.run_rows_written("orders", "r1") == 3
        assert store.run_rows_written("orders", "r0") == 100
        assert store.run_rows_written("orders", "r2") is None

    def test_a_runs_decisions_are_those_of_its_latest_attempt_that_recorded_any(self, store):
        judged = [Judgement(ORDERS.key, True, "ok")]
        for attempt in (1, 2):
            store.record_decisions(AttemptKey("p", DAG_GATE_TASK_ID, "r1", -1, attempt), judged, downstream_slot=day(1))
        assert [d["attempt"] for d in store.run_decisions("p", DAG_GATE_TASK_ID, "r1")] == [2]
        assert store.run_decisions("p", DAG_GATE_TASK_ID, "r2") == []


@pytest.mark.integration
class TestPipelineRuns:
    def test_a_satisfied_pipeline_runs_and_consumes_its_decisions_when_the_run_succeeds(self, rc_catalog, run_dag):
        assert run_dag("rc_pipeline_orders", day(1)).state == "success"
        orders = rc_catalog.latest_runs([ORDERS])[ORDERS].latest_finished  # recorded by the DAG-run listener
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
