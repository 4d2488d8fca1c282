"""A DAG's run conditions validated at parse time, and its tasks laid out as waves."""

from __future__ import annotations

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_leastaction.exceptions import (
    ConfigurationError,
    CountWithoutNError,
    DependencyCycleError,
    InactiveDependencyError,
    InvalidCountError,
    InvalidDeadlineError,
    InvalidFallbackError,
    RunConditionError,
    SelfDependencyError,
    UnknownDependencyTypeError,
    UnknownTaskError,
)
from airflow_leastaction.run_conditions import depends_on, run_condition, success
from airflow_leastaction.run_conditions.waves import Node, validate, waves

ERROR_CLASSES = [
    SelfDependencyError,
    UnknownTaskError,
    DependencyCycleError,
    InvalidCountError,
    CountWithoutNError,
    UnknownDependencyTypeError,
    InactiveDependencyError,
    InvalidFallbackError,
    InvalidDeadlineError,
]


def three_tasks():
    dag = DAG("rc_graph_probe", schedule=None)
    a, b, c = (EmptyOperator(task_id=t, dag=dag) for t in "abc")
    return dag, a, b, c


class TestValidationAtParseTime:
    def test_each_error_class_has_its_own_exit_status(self):
        statuses = [cls.exit_status for cls in ERROR_CLASSES]
        assert len(set(statuses)) == len(statuses) and RunConditionError.exit_status not in statuses

    def test_a_task_that_depends_on_itself(self):
        dag, a, b, c = three_tasks()
        with pytest.raises(SelfDependencyError, match="'rc_graph_probe' task 'a': the task depends on itself"):
            run_condition(a, success("a"))

    def test_a_dependency_on_a_task_that_does_not_exist(self):
        dag, a, b, c = three_tasks()
        with pytest.raises(UnknownTaskError, match="depends on task 'nope'"):
            run_condition(a, success("nope"))

    def test_a_cycle(self):
        dag, a, b, c = three_tasks()
        run_condition(b, a)
        run_condition(c, b)
        with pytest.raises(DependencyCycleError, match="a -> b -> c -> a|c -> a -> b -> c|b -> c -> a -> b"):
            run_condition(a, c)

    @pytest.mark.parametrize("count", [0, 3])
    def test_a_count_below_1_or_above_the_number_of_dependencies(self, count):
        dag, a, b, c = three_tasks()
        with pytest.raises(InvalidCountError):
            run_condition(c, a, b, when="N", count=count)

    def test_a_count_without_n(self):
        dag, a, b, c = three_tasks()
        with pytest.raises(CountWithoutNError, match="only with run condition N, not ANY"):
            run_condition(c, a, b, when="ANY", count=1)

    def test_an_unknown_type(self):
        dag, a, b, c = three_tasks()
        with pytest.raises(UnknownDependencyTypeError, match="'SOMETIMES'"):
            run_condition(c, depends_on(a, "SOMETIMES"))

    def test_an_active_task_depending_on_an_inactive_one(self):
        dag, a, b, c = three_tasks()
        run_condition(b, a, active=False)
        with pytest.raises(InactiveDependencyError, match="depends on inactive task 'b'"):
            run_condition(c, b)

    def test_the_dependencies_of_an_inactive_task_are_ignored(self):
        nodes = {"a": Node("a"), "b": Node("b", ("missing",), active=False)}
        validate("d", nodes)
        assert waves(nodes) == [["a"]]

    def test_the_gate_shows_every_dependency_as_an_edge(self):
        dag, a, b, c = three_tasks()
        gate = run_condition(c, a, b, when="ANY")
        assert gate.task_id == "c__gate"
        assert gate.upstream_task_ids == {"a", "b"} and c.upstream_task_ids == {"c__gate"}
        assert "leastaction_run_outcome" in dag.task_dict

    def test_a_task_in_a_task_group_gets_its_gate_next_to_it(self):
        from airflow.sdk import TaskGroup

        dag, a, b, c = three_tasks()
        with TaskGroup("grp", dag=dag):
            d = EmptyOperator(task_id="d", dag=dag)
        assert run_condition(d, a).task_id == "grp.d__gate"

    def test_a_mapped_upstream_is_rejected_naming_it(self):
        from airflow.sdk import task

        dag, a, b, c = three_tasks()

        @task(dag=dag)
        def fan(x):
            return x

        fan.expand(x=[1, 2])
        with pytest.raises(ConfigurationError, match=r"mapped tasks \(fan\)"):
            run_condition(c, "fan")


class TestWaves:
    def test_each_wave_depends_only_on_earlier_ones_and_any_comes_after_all_its_upstreams(self):
        nodes = {
            "extract": Node("extract"),
            "slow": Node("slow", ("extract",)),
            "report": Node("report", ("extract", "slow"), "ANY"),
            "alert": Node("alert", ("report",)),
        }
        assert waves(nodes) == [["extract"], ["slow"], ["report"], ["alert"]]
