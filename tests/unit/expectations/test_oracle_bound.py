"""The best any warning rule could do on the backtest's mornings (bench/expectation_oracle.py): the generator's
own chance of missing, drawn from futures consistent with what the catalog holds at an instant."""

from __future__ import annotations

import datetime as dt
import math
import statistics

import pytest

from bench.expectation_oracle import Oracle
from tests.helpers.expectation_replay import Morning
from tests.helpers.expected_times import DAY, EPOCH, WEEKDAY_LOAD, generate

TINY = {"dags": 2, "tasks_per_dag": 6, "outside": 3, "feeds": 1}
MIN = dt.timedelta(minutes=1)


@pytest.fixture(scope="module")
def history():
    return generate(1, 12, **TINY)


def at(seconds: float) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=seconds)


def test_a_slot_already_done_misses_its_deadline_for_certain_or_not_at_all(history):
    morning = Morning(history, 10)
    done = next(m for m in morning.members.values() if m.run.finished_at < m.run.slot + 2 * DAY)
    now = done.run.finished_at + MIN
    oracle = Oracle(morning, samples=50, seed=1)
    chances = oracle.chances(now, {done.key: done.run.finished_at - MIN})
    assert chances == {done.key: 1.0}
    assert oracle.chances(now, {done.key: done.run.finished_at + MIN}) == {done.key: 0.0}


def test_an_outside_load_not_reported_yet_is_drawn_from_its_own_pace_on_that_weekday(history):
    morning = Morning(history, 6)  # the slot of a Sunday: its interval ends on a Monday, a heavy day
    key = next(k for k in morning.targets if morning.members[k].task == "load_00")
    member, task = morning.members[key], history.tasks["load_00"]
    end = member.run.slot + DAY
    oracle = Oracle(morning, samples=4000, seed=2)
    draws = oracle.futures(end, [key])[key]
    assert end.weekday() == 0
    usual = 60 * task.minutes * WEEKDAY_LOAD[0]
    median = statistics.median(draws) - (end - EPOCH).total_seconds()
    assert math.isclose(median, usual, rel_tol=0.03), (median, usual)


def test_a_future_never_puts_a_slot_before_what_the_catalog_already_shows(history):
    morning = Morning(history, 10)
    oracle = Oracle(morning, samples=200, seed=3)
    now = min(m.run.finished_at for m in morning.members.values()) + 30 * MIN
    drawn = oracle.futures(now, morning.targets)
    now_s = (now - EPOCH).total_seconds()
    for key, value in drawn.items():
        member = morning.members[key]
        if member.run.finished_at <= now:
            assert value == (member.run.finished_at - EPOCH).total_seconds()
        else:
            assert min(value) > now_s, (key, min(value) - now_s)


def test_a_load_not_landed_two_hours_past_its_usual_time_is_read_as_the_days_late_one(history):
    late = [(t, d) for t in history.tasks for d in range(history.days) if history.runs[t][d].incident == "late"]
    assert late, "the tiny history has no late load"
    task, day = late[0]
    morning = Morning(history, day)
    member = next(m for m in morning.members.values() if m.task == task)
    end = member.run.slot + DAY
    now = member.run.finished_at - MIN  # two hours past its usual landing, not landed yet
    draws = Oracle(morning, samples=500, seed=4).futures(now, [member.key])[member.key]
    two_hours_on = (end - EPOCH).total_seconds() + dt.timedelta(hours=2).total_seconds()
    assert sum(1 for d in draws if d > two_hours_on) / len(draws) >= 0.95
