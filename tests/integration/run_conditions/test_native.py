"""Native run conditions: the condition a trigger rule expresses runs with no gate, on real DAG runs."""

from __future__ import annotations

import pytest

from tests.helpers.run_conditions import consumed, day, decisions, states

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


class TestResumes:
    def test_an_attempt_that_resumes_keeps_the_decisions_it_started_with(self, run_dag, rc_catalog, markers):
        run = run_dag("rc_native_sensor_resumes", day(3))
        assert states(run)["child"] == "success"
        assert (markers / "pokes").read_text() == "xxx"  # started, then resumed twice
        assert (markers / "own_hook").read_text() == "xxx"  # the task's own hook still runs, each time
        rows = decisions(rc_catalog, "rc_native_sensor_resumes", "child")
        assert [(r["dependency"], r["result"], r["attempt"]) for r in rows] == [("task:up", "SATISFIED", 1)]
        assert [c["decision_id"] for c in consumed(rc_catalog, "rc_native_sensor_resumes")] == [rows[0]["id"]]
