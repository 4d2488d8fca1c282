"""The rules of "During a run", each on a real DAG run (``dag.test()``)."""

from __future__ import annotations

import json

from airflow.models.xcom import XComModel
from airflow.utils.session import create_session

from airflow_leastaction.run_conditions.run_outcome import RUN_OUTCOME_TASK_ID, RUN_SUMMARY_KEY
from tests.helpers.run_conditions import consumed, decisions, later, states, tis


def run_summary(run) -> dict:
    query = XComModel.get_many(run_id=run.run_id, dag_ids=run.dag_id, task_ids=RUN_OUTCOME_TASK_ID, key=RUN_SUMMARY_KEY)
    with create_session() as session:
        value = session.scalars(query).first().value
    return json.loads(value) if isinstance(value, str) else value


def failure_path(module_runs):
    """One run of rc_failure_path: `load` fails at once, `other` keeps the run going for 3 more seconds."""
    return module_runs("rc_failure_path", 5, before=lambda m: later(3.0, (m / "release_other").write_text, "go"))


class TestStartingEarly:
    def test_any_starts_as_soon_as_one_dependency_is_satisfied_not_when_every_upstream_is_done(self, module_runs):
        # `slow` can only finish once the child has run: waiting for every upstream would deadlock.
        run = module_runs("rc_any_starts_early", 4)
        got, ti = states(run), tis(run)
        assert got["child"] == "success" and got["slow"] == "success"
        assert ti["child"].end_date < ti["slow"].end_date

    def test_n_starts_as_soon_as_n_dependencies_are_satisfied(self, module_runs):
        run = module_runs("rc_n_starts_early", 4)
        got, ti = states(run), tis(run)
        assert got["child"] == "success" and got["slow"] == "success"
        assert ti["child"].end_date < ti["slow"].end_date
        satisfied = [
            d["dependency"]
            for d in decisions(module_runs.store, "rc_n_starts_early", "child__gate")
            if d["result"] == "SATISFIED"
        ]
        assert sorted(satisfied) == ["task:u0", "task:u1"]


class TestFailures:
    def test_a_failed_upstream_is_not_final_while_the_run_goes_on(self, module_runs):
        run = failure_path(module_runs)
        ti = tis(run)
        assert ti["load"].state == "failed"
        # report waits on the failure while `other` still runs, and is skipped only once nothing can start
        assert ti["report__gate"].state == "skipped"
        assert ti["report__gate"].end_date >= ti["other"].end_date

    def test_once_nothing_else_can_start_waiting_tasks_are_skipped_and_failure_paths_run(self, module_runs):
        run = failure_path(module_runs)
        got = states(run)
        assert got["report"] == "skipped"
        assert got["publish"] == "skipped"  # SUCCESS on a skipped task: the skip cascades
        assert got["alert"] == "success"  # FAILURE on the failed load
        assert got["cleanup"] == "success"  # ALWAYS on the skipped report

    def test_the_run_ends_failed_and_its_summary_names_the_tasks_skipped_because_of_the_failure(self, module_runs):
        run = failure_path(module_runs)
        assert run.state == "failed"
        assert states(run)[RUN_OUTCOME_TASK_ID] == "failed"
        assert run_summary(run) == {"failed": ["load"], "skipped_because_of_failure": ["publish", "report"]}

    def test_a_failed_upstream_with_retries_left_is_not_final(self, module_runs):
        run = module_runs("rc_retry_is_not_final", 8)
        got = states(run)
        assert got["flaky"] == "success"
        assert got["child"] == "success"
        assert got["alert"] == "skipped"  # FAILURE: the retry succeeded
        assert run.state == "success"
        [decision] = decisions(module_runs.store, "rc_retry_is_not_final", "child__gate")
        assert decision["result"] == "SATISFIED"


class TestSkipped:
    def test_a_failure_dependency_on_a_task_that_succeeded_is_skipped(self, module_runs):
        run = module_runs("rc_skip_cascade", 9)
        assert states(run)["on_failure"] == "skipped"
        [decision] = decisions(module_runs.store, "rc_skip_cascade", "on_failure__gate")
        assert decision["result"] == "UNSATISFIED"
        assert "can never be met" in decision["reason"]

    def test_skipping_cascades_to_success_dependents_while_always_dependents_run(self, module_runs):
        run = module_runs("rc_skip_cascade", 9)
        got = states(run)
        assert got["needs_success"] == "skipped"
        assert got["runs_always"] == "success"
        assert run.state == "success"

    def test_skipped_and_failed_work_consumes_nothing(self, module_runs):
        module_runs("rc_skip_cascade", 9)
        eaten = consumed(module_runs.store, "rc_skip_cascade")
        assert {r["task_id"] for r in eaten} == {"runs_always"}
        assert decisions(module_runs.store, "rc_skip_cascade", "needs_success__gate")[0]["result"] == "UNSATISFIED"

    def test_an_inactive_task_never_runs_and_its_dependencies_are_ignored(self, module_runs):
        run = module_runs("rc_inactive", 12)
        got = states(run)
        assert got["dormant"] == "skipped"
        assert got["child"] == "success"
        assert decisions(module_runs.store, "rc_inactive", "dormant__gate") == []


class TestRetriesResume:
    def test_a_task_that_succeeded_is_not_run_again_and_its_gate_decides_once(self, module_runs):
        run = module_runs("rc_retry_is_not_final", 8)
        assert tis(run)["child"].try_number == 1
        assert len(decisions(module_runs.store, "rc_retry_is_not_final", "child__gate")) == 1
        assert len([r for r in consumed(module_runs.store, "rc_retry_is_not_final") if r["task_id"] == "child"]) == 1
