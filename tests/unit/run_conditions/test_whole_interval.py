"""Catalog dependencies judged on the whole interval (coverage="interval"): the judgement and the declaration."""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.sdk import DAG, task

from airflow_leastaction.exceptions import ConfigurationError, InvalidCoverageError
from airflow_leastaction.gating.engine import ALL, Verdict
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import SlotSnapshot, TaskSnapshot
from airflow_leastaction.refs import external_task
from airflow_leastaction.run_conditions import has_data, run_condition, success
from airflow_leastaction.run_conditions.judging import RunView, evaluate, judge_whole_intervals
from airflow_leastaction.run_conditions.model import Dependency, GateSpec
from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy
from tests.helpers.run_conditions import day

UTC = dt.UTC


HOURLY = external_task("rc_hourly", "other-team", coverage="interval")


SPEC = GateSpec("child", (Dependency(HOURLY),), ALL)


START, END = day(20), day(21)
NOW = dt.datetime(2026, 11, 21, 0, 5, tzinfo=UTC)


POLICY = WaitPolicy(dt.timedelta(minutes=60), 30, dt.timedelta(seconds=5))


def hourly_snapshot(hours: int, then: str | None = None):
    """The first ``hours`` hourly slots of the day completed; the next one in state ``then`` (None: no record)."""
    slots = [SlotSnapshot(h + 1, 7, START + dt.timedelta(hours=h), "success", 1) for h in range(hours)]
    if then is not None:
        slots.append(SlotSnapshot(hours + 1, 7, START + dt.timedelta(hours=hours), then, 1))
    task_row = TaskSnapshot(
        7,
        TaskIdentity("rc_hourly", "other-team"),
        "0 * * * *",
        "UTC",
        "success",
        slots[-1].slot if slots else None,
        bool(slots),
        START if slots else None,
    )
    return {TaskIdentity("rc_hourly", "other-team"): task_row}, slots


def judge(hours: int, clock: WaitClock, then: str | None = None, now: dt.datetime = NOW):
    intervals = judge_whole_intervals(SPEC, hourly_snapshot(hours, then), START, END)
    view = RunView("run", {}, {}, frozenset(), {})
    return evaluate(SPEC, view, {}, {}, clock, POLICY, now, intervals)


class TestJudging:
    def test_the_gate_waits_while_a_slot_of_the_interval_is_missing_and_names_it(self):
        outcome, clock = judge(23, WaitClock(NOW))
        assert outcome.verdict is Verdict.WAIT
        [j] = outcome.judgements
        assert j.reason == (
            "other-team/rc_hourly (SUCCESS): 1 of 24 slots from 2026-11-20 00:00 up to 2026-11-21 "
            "00:00 not complete (whole interval): 2026-11-20 23:00 (has not run)"
        )

    def test_a_look_that_finds_no_missing_slot_running_is_not_counted(self):
        # Nothing runs: looking again waits for nothing, so however often the gate looks within max_wait,
        # it spends none of its looks and keeps waiting.
        clock = WaitClock(NOW)
        for n in range(POLICY.max_looks + 5):
            outcome, clock = judge(23, clock, now=NOW + dt.timedelta(seconds=n * 6))
            assert outcome.verdict is Verdict.WAIT and clock.looks == 0

    @pytest.mark.parametrize("state", ["queued", "running", "up_for_retry"])
    def test_a_look_that_finds_a_missing_slot_running_counts_against_the_budget(self, state):
        outcome, clock = judge(23, WaitClock(NOW), then=state)
        assert outcome.verdict is Verdict.WAIT and clock.looks == 1
        assert outcome.judgements[0].reason.endswith(f"2026-11-20 23:00 ({state})")
        outcome, _ = judge(23, WaitClock(NOW, looks=POLICY.max_looks), then=state)
        assert outcome.verdict is Verdict.SKIP  # its looks spent: the judgement stands

    def test_a_failed_slot_is_waited_for_a_repair_without_spending_looks(self):
        outcome, clock = judge(23, WaitClock(NOW), then="failed")
        assert outcome.verdict is Verdict.WAIT and clock.looks == 0

    def test_the_gate_admits_once_every_slot_of_the_interval_completed(self):
        outcome, _ = judge(24, WaitClock(NOW))
        assert outcome.verdict is Verdict.ADMIT
        assert outcome.judgements[0].upstream_slot == START + dt.timedelta(hours=23)

    def test_the_gate_skips_once_its_waiting_budget_is_spent(self):
        outcome, _ = judge(23, WaitClock(NOW - dt.timedelta(minutes=61), looks=3))
        assert outcome.verdict is Verdict.SKIP

    def test_the_coverage_survives_the_trip_to_the_triggerer(self):
        again = Dependency.from_dict(Dependency(HOURLY).as_dict())
        assert again.whole_interval and again.upstream.coverage == "interval"
        assert not Dependency.from_dict(Dependency(TaskIdentity("x", "y")).as_dict()).whole_interval


class TestDeclaration:
    def _declare(self, *deps):
        with DAG("rc_coverage_parse", schedule=None, start_date=START):

            @task
            def child():
                return 1

            run_condition(child(), *deps)

    def test_a_bad_coverage_fails_the_dag_naming_the_dependency(self):
        bad = TaskIdentity("rc_hourly", "other-team", coverage="whole")
        with pytest.raises(
            InvalidCoverageError,
            match="DAG 'rc_coverage_parse' task 'child' dependency other-team/rc_hourly: coverage='whole'",
        ):
            self._declare(success(bad))

    def test_whole_interval_coverage_applies_to_success_dependencies_only(self):
        with pytest.raises(
            ConfigurationError, match="coverage='interval' applies to SUCCESS dependencies only, not HAS_DATA"
        ):
            self._declare(has_data(HOURLY))
