"""Graph validation at DAG parse time, waves, and ``airflow-leastaction graph``."""

from __future__ import annotations

import textwrap

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_leastaction.cli import main
from airflow_leastaction.exceptions import (
    ConfigurationError,
    CountWithoutNError,
    DependencyCycleError,
    InactiveDependencyError,
    InvalidCountError,
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


def write_dag(tmp_path, body: str) -> str:
    path = tmp_path / "probe_dag.py"
    path.write_text(
        textwrap.dedent("""
        from airflow.sdk import DAG
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow_leastaction.run_conditions import run_condition, success, depends_on
        with DAG("rc_probe", schedule=None):
            a, b, c = (EmptyOperator(task_id=t) for t in "abc")
    """)
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return str(path)


@pytest.mark.integration
class TestGraphCommand:
    @pytest.mark.parametrize(
        "body,error",
        [
            ("run_condition(a, success('a'))", SelfDependencyError),
            ("run_condition(a, success('zz'))", UnknownTaskError),
            ("run_condition(b, a)\nrun_condition(a, b)", DependencyCycleError),
            ("run_condition(c, a, b, when='N', count=5)", InvalidCountError),
            ("run_condition(c, a, when='ALL', count=1)", CountWithoutNError),
            ("run_condition(c, depends_on(a, 'MAYBE'))", UnknownDependencyTypeError),
            ("run_condition(b, a, active=False)\nrun_condition(c, b)", InactiveDependencyError),
        ],
    )
    def test_graph_exits_with_a_distinct_status_per_error_class(self, airflow_db, tmp_path, capsys, body, error):
        assert main(["graph", "rc_probe", "--dag-file", write_dag(tmp_path, body)]) == error.exit_status
        assert "rc_probe" in capsys.readouterr().err

    def test_graph_prints_the_waves(self, airflow_db, tmp_path, capsys):
        body = "run_condition(b, a)\nrun_condition(c, a, b, when='ANY')"
        assert main(["graph", "rc_probe", "--dag-file", write_dag(tmp_path, body)]) == 0
        out = capsys.readouterr().out.splitlines()
        head = out.index("DAG rc_probe: 3 active tasks in 3 waves")
        assert out[head + 1 :] == ["wave 1: a", "wave 2: b", "wave 3: c [ANY of a, b]"]

    def test_graph_reads_the_dags_folder(self, airflow_db, capsys):
        assert main(["graph", "rc_failure_path"]) == 0
        out = capsys.readouterr().out
        assert "wave 1: load, other" in out and "alert" in out

    def test_an_unknown_dag_id_exits_3(self, airflow_db, tmp_path, capsys):
        assert main(["graph", "rc_nope", "--dag-file", write_dag(tmp_path, "")]) == 3
