"""The wait rule for an upstream in another DAG whose latest run is in progress. Pure."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.run_conditions.wait_rule import (
    WaitClock,
    WaitPolicy,
    after_look,
    budget_left,
    due,
    look_at,
)

T0 = dt.datetime(2026, 11, 29, 8, 0, tzinfo=dt.timezone.utc)
TEN_MIN = dt.timedelta(minutes=10)


class TestLooks:
    def test_it_looks_again_at_70_80_90_percent_of_the_average_run_length(self):
        policy = WaitPolicy()
        clock = WaitClock(T0)
        seen = []
        for _ in range(4):
            clock = after_look(clock, [(T0, TEN_MIN)], T0, policy)
            seen.append(clock.next_look - T0)
        assert seen == [dt.timedelta(minutes=7), dt.timedelta(minutes=8), dt.timedelta(minutes=9),
                        dt.timedelta(minutes=10)]

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
