"""A DAG's run condition (dag_run_condition): its declaration, and task gates held until the run gate admits."""

from __future__ import annotations

import pytest
from airflow.sdk import DAG, task

from airflow_leastaction.exceptions import (
    CountWithoutNError,
    InvalidCountError,
    RunConditionError,
    SelfDependencyError,
    UnknownDependencyTypeError,
)
from airflow_leastaction.gating.engine import ANY, Verdict
from airflow_leastaction.refs import airflow_dag
from airflow_leastaction.run_conditions import dag_run_condition, depends_on, run_condition, success
from airflow_leastaction.run_conditions.judging import RunView, held_by_run_gate
from airflow_leastaction.run_conditions.model import DAG_GATE_TASK_ID, Dependency, GateSpec
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from tests.dags.rc_pipeline_cases import OTHER, START
from tests.helpers.run_conditions import day

ORDERS = airflow_dag("rc_pipeline_orders")


def _dag(dag_id: str = "rc_pipeline_parse") -> DAG:
    return DAG(dag_id, schedule=None, start_date=START)


@task
def noop():
    return None


class TestDeclaration:
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
