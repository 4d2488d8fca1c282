"""The dependency-type and run-condition tables, each row on a real DAG run (``dag.test()``)."""

from __future__ import annotations

import pytest

from tests.helpers.run_conditions import consumed, decisions, states

# (dag, expected state of the gated task): every row of "Satisfied when the upstream task is".
TYPE_TABLE = [
    ("rc_type_success_success", "success"),
    ("rc_type_success_failed", "skipped"),
    ("rc_type_success_skipped", "skipped"),
    ("rc_type_failure_success", "skipped"),
    ("rc_type_failure_failed", "success"),
    ("rc_type_failure_skipped", "skipped"),
    ("rc_type_always_success", "success"),
    ("rc_type_always_failed", "success"),
    ("rc_type_always_skipped", "success"),
    ("rc_type_has_data_success", "success"),
    ("rc_type_has_data_failed", "skipped"),
    ("rc_type_has_data_skipped", "skipped"),
    ("rc_type_has_data_success_zero_rows", "skipped"),
    ("rc_type_has_data_success_unknown_rows", "skipped"),
]


class TestDependencyTypes:
    @pytest.mark.parametrize("dag_id,expected", TYPE_TABLE, ids=[d for d, _ in TYPE_TABLE])
    def test_a_dependency_is_satisfied_only_by_the_outcome_its_type_names(self, module_runs, dag_id, expected):
        run = module_runs(dag_id, 2)
        got = states(run)
        assert got["child"] == expected
        [decision] = decisions(module_runs.store, dag_id, "child__gate")
        assert decision["result"] == ("SATISFIED" if expected == "success" else "UNSATISFIED")
        assert decision["dependency"] == "task:up"
        assert decision["reason"].startswith("up (")
        # The run ends failed exactly when a task of it failed.
        assert run.state == ("failed" if got["up"] == "failed" else "success")

    def test_has_data_names_the_rows_written_in_its_decision(self, module_runs):
        module_runs("rc_type_has_data_success", 2)
        [decision] = decisions(module_runs.store, "rc_type_has_data_success", "child__gate")
        assert "wrote 3 rows" in decision["reason"]
        assert decision["upstream_revision"] == 1

    def test_an_upstream_that_reports_nothing_does_not_satisfy_has_data(self, module_runs):
        module_runs("rc_type_has_data_success_unknown_rows", 2)
        [decision] = decisions(module_runs.store, "rc_type_has_data_success_unknown_rows", "child__gate")
        assert "reported no rows written" in decision["reason"]


# (dag, expected state of the gated task, satisfied dependencies when the gate decided): a and c succeed,
# b fails. ANY admits on the first success, whether or not the other one has run yet.
CONDITION_TABLE = [
    ("rc_condition_all", "skipped", {2}),
    ("rc_condition_any", "success", {1, 2}),
    ("rc_condition_n2", "success", {2}),
    ("rc_condition_n3", "skipped", {2}),
]


class TestRunConditions:
    @pytest.mark.parametrize("dag_id,expected,satisfied", CONDITION_TABLE, ids=[d for d, *_ in CONDITION_TABLE])
    def test_the_task_starts_when_enough_dependencies_are_satisfied(self, module_runs, dag_id, expected, satisfied):
        run = module_runs(dag_id, 3)
        assert states(run)["child"] == expected
        rows = decisions(module_runs.store, dag_id, "child__gate")
        assert sorted(r["dependency"] for r in rows) == ["task:a", "task:b", "task:c"]
        admitted = sorted(r["dependency"] for r in rows if r["result"] == "SATISFIED")
        assert len(admitted) in satisfied and set(admitted) <= {"task:a", "task:c"}
        # Consumption is written only when the gated task succeeds, from the SATISFIED decisions.
        eaten = consumed(module_runs.store, dag_id)
        if expected == "success":
            assert sorted(r["dependency"] for r in eaten) == admitted
            assert {r["task_id"] for r in eaten} == {"child"}
        else:
            assert eaten == []
