"""Native run conditions: the condition a trigger rule expresses runs with no gate, on real DAG runs."""

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
from tests.run_conditions.conftest import consumed, day, decisions, states

# Native task state where its gate twin skips: Airflow's trigger rule says upstream_failed when an
# upstream failed, skipped when they only skipped. Admitted cases are admitted alike.
TABLE = {
    "all_ok": ("success", "success"),
    "all_one_failed": ("skipped", "upstream_failed"),
    "all_one_skipped": ("skipped", "skipped"),
    "any_one_ok": ("success", "success"),
    "any_failed_and_skipped": ("skipped", "upstream_failed"),
    "any_all_skipped": ("skipped", "skipped"),
    "always_all": ("success", "success"),
}


@pytest.fixture(scope="module")
def table_run(module_runs):
    return module_runs("rc_native_table", 2)


def results(rows) -> set[tuple[str, str]]:
    return {(r["dependency"], r["result"]) for r in rows}


pytestmark = pytest.mark.integration


class TestANativeConditionAdmitsWhatItsGateAdmits:
    @pytest.mark.parametrize("name", TABLE)
    def test_the_native_task_runs_exactly_when_its_gate_twin_is_admitted(self, table_run, name):
        got = states(table_run)
        assert (got[f"gated_{name}"], got[f"native_{name}"]) == TABLE[name]
        assert f"native_{name}__gate" not in got  # no gate task at all

    @pytest.mark.parametrize("name", [n for n, (gated, _) in TABLE.items() if gated == "success"])
    def test_an_admitted_native_task_records_the_decisions_its_gate_records_under_its_own_attempt(
        self, module_runs, table_run, name
    ):
        store = module_runs.store
        native = decisions(store, "rc_native_table", f"native_{name}")
        gated = decisions(store, "rc_native_table", f"gated_{name}__gate")
        assert results(native) == results(gated) and native
        assert {r["attempt"] for r in native} == {1}
        assert all(r["run_id"] == table_run.run_id for r in native)

    @pytest.mark.parametrize("name", [n for n, (gated, _) in TABLE.items() if gated == "success"])
    def test_its_success_consumes_its_satisfied_decisions(self, module_runs, table_run, name):
        store = module_runs.store
        satisfied = {
            r["id"] for r in decisions(store, "rc_native_table", f"native_{name}") if r["result"] == "SATISFIED"
        }
        mine = [c for c in consumed(store, "rc_native_table") if c["task_id"] == f"native_{name}"]
        assert {c["decision_id"] for c in mine} == satisfied and satisfied

    @pytest.mark.parametrize("name", [n for n, (gated, _) in TABLE.items() if gated != "success"])
    def test_a_native_task_airflow_never_started_records_nothing(self, module_runs, table_run, name):
        assert decisions(module_runs.store, "rc_native_table", f"native_{name}") == []

    def test_the_run_still_ends_failed_because_a_task_of_it_failed(self, table_run):
        assert table_run.state == "failed"


class TestNativeAny:
    def test_any_starts_on_the_first_success_while_the_other_upstream_still_waits(self, run_dag, rc_catalog, markers):
        run = run_dag("rc_native_any_starts_early", day(3))
        assert states(run)["child"] == "success" and states(run)["slow"] == "success"
        rows = decisions(rc_catalog, "rc_native_any_starts_early", "child")
        assert {r["dependency"]: r["result"] for r in rows} == {"task:fast": "SATISFIED", "task:slow": "UNSATISFIED"}
        assert "waiting for it to finish" in next(r["reason"] for r in rows if r["dependency"] == "task:slow")

    def test_a_task_started_against_its_rule_judges_for_itself_and_skips(self, run_dag, rc_catalog, markers):
        run = run_dag("rc_native_started_against_its_rule", day(3))
        assert states(run)["child"] == "skipped"
        assert not (markers / "own_hook").exists()  # skipped before the task's own pre-execute hook
        rows = decisions(rc_catalog, "rc_native_started_against_its_rule", "child")
        assert results(rows) == {("task:bad", "UNSATISFIED"), ("task:off", "UNSATISFIED")}
        assert consumed(rc_catalog, "rc_native_started_against_its_rule") == []


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


class TestResumes:
    def test_an_attempt_that_resumes_keeps_the_decisions_it_started_with(self, run_dag, rc_catalog, markers):
        run = run_dag("rc_native_sensor_resumes", day(3))
        assert states(run)["child"] == "success"
        assert (markers / "pokes").read_text() == "xxx"  # started, then resumed twice
        assert (markers / "own_hook").read_text() == "xxx"  # the task's own hook still runs, each time
        rows = decisions(rc_catalog, "rc_native_sensor_resumes", "child")
        assert [(r["dependency"], r["result"], r["attempt"]) for r in rows] == [("task:up", "SATISFIED", 1)]
        assert [c["decision_id"] for c in consumed(rc_catalog, "rc_native_sensor_resumes")] == [rows[0]["id"]]
