"""The gate engine's pure rules for upstreams in the same run, as plain tables of cases."""

from __future__ import annotations

import pytest

from airflow_leastaction.gating.engine import (
    ALL,
    ANY,
    DependencyType,
    RunCondition,
    Verdict,
    decide,
    judge_upstream_task,
    run_settled,
)

S, F, A, H = (DependencyType.SUCCESS, DependencyType.FAILURE, DependencyType.ALWAYS, DependencyType.HAS_DATA)

# (type, upstream state, rows written, satisfied, final)
SATISFIED_BY = [
    (S, "success", None, True, True),
    (S, "failed", None, False, False),
    (S, "skipped", None, False, True),
    (F, "success", None, False, True),
    (F, "failed", None, True, True),
    (F, "skipped", None, False, True),
    (A, "success", None, True, True),
    (A, "failed", None, True, True),
    (A, "skipped", None, True, True),
    (H, "success", 1, True, True),
    (H, "success", 0, False, True),
    (H, "success", None, False, True),
    (H, "failed", None, False, False),
    (H, "skipped", None, False, True),
]


class TestSatisfiedBy:
    @pytest.mark.parametrize("typ,state,rows,satisfied,final", SATISFIED_BY)
    def test_each_type_is_satisfied_by_the_outcome_it_names(self, typ, state, rows, satisfied, final):
        j = judge_upstream_task("task:up", typ, state, rows_written=rows)
        assert (j.satisfied, j.final) == (satisfied, final)
        assert j.reason.startswith(f"up ({typ.value}): ")

    @pytest.mark.parametrize(
        "state", [None, "scheduled", "queued", "running", "deferred", "up_for_retry", "up_for_reschedule", "restarting"]
    )
    @pytest.mark.parametrize("typ", list(DependencyType))
    def test_an_upstream_that_has_not_run_or_is_in_progress_satisfies_no_dependency(self, typ, state):
        j = judge_upstream_task("task:up", typ, state)
        assert not j.satisfied and not j.final

    def test_a_failed_upstream_becomes_final_once_the_run_is_settled(self):
        j = judge_upstream_task("task:up", S, "failed", run_settled=True)
        assert (j.satisfied, j.final, j.rejected) == (False, True, True)

    def test_has_data_waits_for_the_catalog_record_of_a_success(self):
        j = judge_upstream_task("task:up", H, "success", rows_written=None, record_known=False)
        assert not j.satisfied and not j.final

    def test_has_data_without_a_catalog_record_is_final_once_the_run_is_settled(self):
        j = judge_upstream_task("task:up", H, "success", record_known=False, run_settled=True)
        assert not j.satisfied and j.final

    def test_upstream_failed_counts_as_did_not_run(self):
        assert judge_upstream_task("task:up", F, "upstream_failed").final
        assert judge_upstream_task("task:up", A, "upstream_failed").satisfied


def j(ok: bool, final: bool = True):
    return judge_upstream_task("task:x", A if ok else S, "success" if ok else ("skipped" if final else None))


class TestDecide:
    @pytest.mark.parametrize(
        "condition,judgements,verdict",
        [
            (ALL, [j(True), j(True)], Verdict.ADMIT),
            (ALL, [j(True), j(False, final=False)], Verdict.WAIT),
            (ALL, [j(True), j(False)], Verdict.SKIP),
            (ANY, [j(False), j(True)], Verdict.ADMIT),
            (ANY, [j(False), j(False, final=False)], Verdict.WAIT),
            (ANY, [j(False), j(False)], Verdict.SKIP),
            (RunCondition("N", 2), [j(True), j(False, final=False), j(True)], Verdict.ADMIT),
            (RunCondition("N", 2), [j(True), j(False, final=False), j(False)], Verdict.WAIT),
            (RunCondition("N", 2), [j(True), j(False), j(False)], Verdict.SKIP),
        ],
    )
    def test_the_run_condition_decides_admit_wait_or_skip(self, condition, judgements, verdict):
        assert decide(condition, judgements).verdict is verdict


class TestRunSettled:
    UP = {"load": [], "other": [], "g": ["load"], "report": ["g"], "out": []}
    WAITING = {"g", "out"}

    def test_the_run_goes_on_while_a_task_runs(self):
        states = {"load": "failed", "other": "running", "g": "deferred", "report": None, "out": "deferred"}
        assert not run_settled(states, self.UP, self.WAITING)

    def test_nothing_can_start_once_every_other_task_is_finished_or_blocked_by_a_waiting_gate(self):
        states = {"load": "failed", "other": "success", "g": "deferred", "report": None, "out": "deferred"}
        assert run_settled(states, self.UP, self.WAITING)

    def test_a_task_whose_upstreams_all_finished_is_about_to_start(self):
        up = {**self.UP, "next": ["other"]}
        states = {
            "load": "failed",
            "other": "success",
            "g": "deferred",
            "report": None,
            "out": "deferred",
            "next": None,
        }
        assert not run_settled(states, up, self.WAITING)

    def test_a_failed_task_with_retries_left_keeps_the_run_going(self):
        states = {"load": "up_for_retry", "other": "success", "g": "deferred", "report": None, "out": "deferred"}
        assert not run_settled(states, self.UP, self.WAITING)
