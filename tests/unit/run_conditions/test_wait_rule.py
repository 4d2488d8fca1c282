"""The wait rule for an upstream in another DAG whose latest run is in progress, and when a gate's
check of it starts. Pure."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.engine import ALL, Verdict
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.judging import RunView, evaluate
from airflow_leastaction.run_conditions.latest_run import LatestRuns, RunRecord
from airflow_leastaction.run_conditions.model import Dependency, GateSpec
from airflow_leastaction.run_conditions.wait_rule import (
    WaitClock,
    WaitPolicy,
    after_look,
    budget_left,
    due,
    look_at,
)

T0 = dt.datetime(2026, 11, 29, 8, 0, tzinfo=dt.UTC)
TEN_MIN = dt.timedelta(minutes=10)


class TestLooks:
    def test_it_looks_again_at_70_80_90_percent_of_the_average_run_length(self):
        policy = WaitPolicy()
        clock = WaitClock(T0)
        seen = []
        for _ in range(4):
            clock = after_look(clock, [(T0, TEN_MIN)], T0, policy)
            seen.append(clock.next_look - T0)
        assert seen == [
            dt.timedelta(minutes=7),
            dt.timedelta(minutes=8),
            dt.timedelta(minutes=9),
            dt.timedelta(minutes=10),
        ]

    def test_a_look_already_overdue_happens_now(self):
        late = T0 + dt.timedelta(hours=1)
        assert look_at(T0, TEN_MIN, 0, late, WaitPolicy()) == late

    def test_the_next_look_is_the_earliest_among_dependencies_in_progress_and_never_after_the_maximum_wait(self):
        policy = WaitPolicy(max_wait=dt.timedelta(minutes=5))
        clock = after_look(WaitClock(T0), [(T0, TEN_MIN), (T0, dt.timedelta(minutes=4))], T0, policy)
        assert clock.next_look == T0 + dt.timedelta(minutes=4) * 0.7
        clock = after_look(WaitClock(T0), [(T0, dt.timedelta(hours=2))], T0, policy)
        assert clock.next_look == T0 + dt.timedelta(minutes=5)

    def test_an_unknown_average_looks_every_fallback_step(self):
        policy = WaitPolicy(fallback_step=dt.timedelta(seconds=5))
        assert after_look(WaitClock(T0), [(T0, None)], T0, policy).next_look == T0 + dt.timedelta(seconds=5)


class TestBudget:
    def test_one_check_waits_at_most_max_wait(self):
        policy = WaitPolicy(max_wait=dt.timedelta(minutes=60))
        assert budget_left(WaitClock(T0), policy, T0 + dt.timedelta(minutes=59))
        assert not budget_left(WaitClock(T0), policy, T0 + dt.timedelta(minutes=60))

    def test_a_maximum_wait_of_zero_judges_at_once(self):
        assert not budget_left(WaitClock(T0), WaitPolicy(max_wait=dt.timedelta(0)), T0)

    def test_one_check_looks_at_most_30_times_across_all_its_dependencies(self):
        policy = WaitPolicy()
        clock = WaitClock(T0)
        for _ in range(30):
            assert budget_left(clock, policy, T0)
            clock = after_look(clock, [(T0, dt.timedelta(seconds=1)), (T0, dt.timedelta(seconds=2))], T0, policy)
        assert clock.looks == 30 and not budget_left(clock, policy, T0)

    def test_a_look_is_due_at_its_time(self):
        clock = WaitClock(T0, 1, T0 + TEN_MIN)
        assert not due(clock, T0) and due(clock, T0 + TEN_MIN)
        assert WaitClock.from_dict(clock.as_dict()) == clock

    @pytest.mark.parametrize("kwargs", [dict(max_wait=dt.timedelta(seconds=-1)), dict(max_looks=0)])
    def test_a_negative_wait_or_no_looks_is_rejected(self, kwargs):
        with pytest.raises(ConfigurationError):
            WaitPolicy(**kwargs)


class TestWhenTheCheckStarts:
    def test_a_check_that_has_not_started_has_spent_nothing_and_counts_no_look(self):
        policy = WaitPolicy(max_wait=dt.timedelta(0), max_looks=1)
        clock = WaitClock()
        assert budget_left(clock, policy, T0 + dt.timedelta(days=1))
        assert after_look(clock, [(T0, TEN_MIN)], T0, policy) == WaitClock()

    def test_a_look_that_finds_no_upstream_in_progress_does_not_count(self):
        clock = after_look(WaitClock(T0), [], T0, WaitPolicy())
        assert clock == WaitClock(T0, 0, None)  # not counted, and the next look is due at once
        assert after_look(WaitClock(T0), [(T0, None)], T0, WaitPolicy()).looks == 1


# -- the check of a gate across ticks: a long same-run upstream, then one elsewhere -------------------
OTHER = TaskIdentity("rc_other_pipeline", "other-team")
SPEC = GateSpec("child", (Dependency("slow"), Dependency(OTHER)), ALL)
TICK = dt.timedelta(seconds=5)


def other(state: str | None, started: dt.datetime | None = None, finished_ok: bool = False) -> LatestRuns:
    """The other DAG's task: yesterday's run failed; today's is ``state`` (None: not started)."""
    failed = RunRecord(1, 7, T0 - dt.timedelta(days=1), "o-1", "failed", 1, None, T0 - dt.timedelta(days=1), T0)
    today = None if state is None else RunRecord(2, 7, T0, "o-2", state, 1, 1, started, None)
    finished = today if finished_ok else failed
    return LatestRuns(7, today or failed, finished, TEN_MIN)


def tick(slow_state: str, runs: LatestRuns, clock: WaitClock, now: dt.datetime):
    view = RunView(
        "r1", {"slow": slow_state, "child__gate": "deferred"}, {"child__gate": ["slow"]}, frozenset({"child__gate"}), {}
    )
    return evaluate(SPEC, view, {OTHER: runs}, {}, clock, WaitPolicy(max_looks=3), now)


def test_the_budget_starts_when_the_same_run_upstreams_are_final_not_when_the_gate_starts():
    """The spec checks other pipelines "when the task itself starts": a same-run upstream running for
    hours spends none of the 3 looks, and a run elsewhere that started meanwhile is still waited for."""
    clock, now = WaitClock(), T0
    for n in range(2000):  # about 3 hours of ticks while `slow` runs; the other run starts after 1 hour
        runs = other("running", T0 + dt.timedelta(hours=1)) if n >= 720 else other(None)
        outcome, clock = tick("running", runs, clock, now)
        assert outcome.verdict is Verdict.WAIT and clock == WaitClock()
        now += TICK
    outcome, clock = tick("success", other("running", T0 + dt.timedelta(hours=1)), clock, now)
    assert outcome.verdict is Verdict.WAIT and clock.started == now and clock.looks == 1
    done = other("success", T0 + dt.timedelta(hours=1), finished_ok=True)
    outcome, clock = tick("success", done, clock, now + TICK)
    assert outcome.verdict is Verdict.ADMIT


def test_only_planned_looks_at_a_running_upstream_count():
    clock, now = WaitClock(), T0
    running = other("running", T0)
    outcome, clock = tick("success", running, clock, now)
    assert clock.looks == 1 and clock.next_look == T0 + TEN_MIN * 0.7
    for _ in range(50):  # ticks between planned looks are not looks
        now += TICK
        if now >= clock.next_look:
            break
        outcome, clock = tick("success", running, clock, now)
        assert clock.looks == 1 and outcome.verdict is Verdict.WAIT
