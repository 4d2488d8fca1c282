"""Judging a dependency on another DAG's task by its latest run. Pure."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.gating.engine import DependencyType
from airflow_leastaction.run_conditions.latest_run import LatestRuns, RunRecord, is_fresh, judge_latest_run

UTC = dt.UTC
D1, D2 = dt.datetime(2026, 11, 1, tzinfo=UTC), dt.datetime(2026, 11, 2, tzinfo=UTC)


def record(slot, state="success", revision=1, rows=5):
    return RunRecord(1, 7, slot, f"r-{slot.day}", state, revision, rows, slot, slot + dt.timedelta(minutes=5))


def runs(latest, finished=None):
    return LatestRuns(7, latest, finished if finished is not None else latest, dt.timedelta(minutes=5))


class TestLastRunDecides:
    def test_a_success_yesterday_does_not_count_when_today_failed(self):
        j = judge_latest_run("catalog:x", DependencyType.SUCCESS, "x", runs(record(D2, "failed")), may_wait=True)
        assert not j.satisfied and j.final and j.upstream_slot == D2

    def test_a_run_in_progress_is_waited_for_while_the_budget_lasts(self):
        latest = runs(record(D2, "running"), record(D1))
        assert not judge_latest_run("catalog:x", DependencyType.SUCCESS, "x", latest, may_wait=True).final
        spent = judge_latest_run("catalog:x", DependencyType.SUCCESS, "x", latest, may_wait=False)
        assert spent.satisfied and spent.upstream_slot == D1

    @pytest.mark.parametrize(
        "typ,state,satisfied",
        [
            (DependencyType.SUCCESS, "success", True),
            (DependencyType.FAILURE, "failed", True),
            (DependencyType.FAILURE, "success", False),
            (DependencyType.ALWAYS, "skipped", True),
            (DependencyType.HAS_DATA, "success", True),
        ],
    )
    def test_the_latest_finished_run_must_satisfy_the_type(self, typ, state, satisfied):
        j = judge_latest_run("catalog:x", typ, "x", runs(record(D1, state)), may_wait=False)
        assert j.satisfied is satisfied

    def test_a_task_never_reported_is_not_satisfied(self):
        j = judge_latest_run(
            "catalog:x", DependencyType.SUCCESS, "x", LatestRuns(None, None, None, None), may_wait=True
        )
        assert not j.satisfied and j.final


class TestFreshness:
    def test_a_higher_run_is_new(self):
        assert is_fresh(record(D2), (D1, 3), consume_repairs=False)

    def test_the_same_run_is_new_only_with_a_higher_revision_and_consume_repairs(self):
        assert is_fresh(record(D1, revision=2), (D1, 1), consume_repairs=True)
        assert not is_fresh(record(D1, revision=2), (D1, 1), consume_repairs=False)
        assert not is_fresh(record(D1, revision=1), (D1, 1), consume_repairs=True)

    def test_an_older_run_never_becomes_new_by_gaining_a_revision(self):
        assert not is_fresh(record(D1, revision=9), (D2, 1), consume_repairs=True)
