"""Only what an Airflow trigger rule expresses can be native: refused at parse time otherwise, naming why."""

from __future__ import annotations

import pytest
from airflow.sdk import DAG, task

from airflow_leastaction.exceptions import ConfigurationError, RunConditionError
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.run_conditions import (
    always,
    dag_run_condition,
    failure,
    has_data,
    run_condition,
    success,
)
from airflow_leastaction.run_conditions.native import native_spec


def _dag(dag_id="rc_native_parse"):
    return DAG(dag_id, schedule=None)


def _tasks(*names):
    @task
    def t():
        return 1

    return [t.override(task_id=n)() for n in names]


class TestOnlyWhatATriggerRuleExpressesIsNative:
    @pytest.mark.parametrize(
        "declare, why",
        [
            (lambda a, b, c: run_condition(c, failure(a), native=True), "ALL of FAILURE has none"),
            (lambda a, b, c: run_condition(c, has_data(a), native=True), "ALL of HAS_DATA has none"),
            (lambda a, b, c: run_condition(c, always(a), always(b), when="ANY", native=True), "ANY of ALWAYS has none"),
            (lambda a, b, c: run_condition(c, a, b, when="N", count=1, native=True), "N=1 of SUCCESS has none"),
            (lambda a, b, c: run_condition(c, success(a), always(b), native=True), "mix the types ALWAYS, SUCCESS"),
            (
                lambda a, b, c: run_condition(c, a, airflow_task("other", "t"), native=True),
                "other.t is not in this DAG",
            ),
            (lambda a, b, c: run_condition(c, a, active=False, native=True), "an inactive task has no trigger rule"),
            (lambda a, b, c: run_condition(c, native=True), "it has no dependencies"),
        ],
    )
    def test_a_condition_no_trigger_rule_expresses_is_refused_at_parse_time_naming_why(self, declare, why):
        with _dag():
            a, b, c = _tasks("a", "b", "c")
            with pytest.raises(ConfigurationError, match="task 'c': native=True needs") as err:
                declare(a, b, c)
        assert why in str(err.value)

    def test_a_gate_option_is_refused_naming_it(self):
        with _dag():
            a, c = _tasks("a", "c")
            with pytest.raises(ConfigurationError, match="no gate to pass max_wait"):
                run_condition(c, a, native=True, max_wait=60)

    def test_refused_leaves_the_task_unwired(self):
        with _dag() as dag:
            a, c = _tasks("a", "c")
            with pytest.raises(ConfigurationError):
                run_condition(c, failure(a), native=True)
        assert dag.get_task("c").upstream_task_ids == set() and native_spec(dag.get_task("c")) is None

    def test_a_dag_run_condition_and_a_native_condition_do_not_mix_in_either_order(self):
        with _dag("rc_native_run_gate_first") as dag:
            a, c = _tasks("a", "c")
            dag_run_condition(dag, airflow_task("other", "t"))
            with pytest.raises(ConfigurationError, match="the DAG has a run condition"):
                run_condition(c, a, native=True)
        with _dag("rc_native_run_gate_after") as dag:
            a, c = _tasks("a", "c")
            run_condition(c, a, native=True)
            with pytest.raises(RunConditionError, match="c has a native run condition"):
                dag_run_condition(dag, airflow_task("other", "t"))

    def test_declared_twice_is_refused(self):
        with _dag():
            a, c = _tasks("a", "c")
            run_condition(c, a, native=True)
            with pytest.raises(ConfigurationError, match="already declared"):
                run_condition(c, a)

    def test_the_task_carries_the_trigger_rule_and_its_dependencies_as_edges(self):
        with _dag() as dag:
            a, b, c = _tasks("a", "b", "c")
            returned = run_condition(c, a, b, when="ANY", native=True)
        task = dag.get_task("c")
        assert returned is task and str(task.trigger_rule.value) == "one_success"
        assert task.upstream_task_ids == {"a", "b"} and "c__gate" not in dag.task_dict
        assert "leastaction_run_outcome" in dag.task_dict

    def test_the_graph_check_sees_the_native_condition_as_the_tasks_own(self):
        from airflow_leastaction.run_conditions import dag_nodes, gate_specs
        from airflow_leastaction.run_conditions.waves import Node

        with _dag() as dag:
            a, b, c = _tasks("a", "b", "c")
            run_condition(c, a, b, when="ANY", native=True)
        assert dag_nodes(dag)["c"] == Node("c", ("a", "b"), "ANY", True)
        assert [d.key for d in gate_specs(dag)["c"].dependencies] == ["task:a", "task:b"]
