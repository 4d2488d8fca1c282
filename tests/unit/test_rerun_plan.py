"""The re-run plan's rules on plain tables: who is reached, the waves, the backfill ranges. Pure."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.rerun_plan import Consumed, PlannedTask, backfill_ranges, plan_rerun

UTC = dt.UTC


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, n, tzinfo=UTC)


def tasks(*names: str) -> dict[int, PlannedTask]:
    return {i: PlannedTask(i, TaskIdentity(name, "p"), dag_id=name) for i, name in enumerate(names, 1)}


def reader(edges: list[Consumed]):
    def consumers(frontier):
        return [e for e in edges if e.upstream_slot in frontier.get(e.upstream_pk, ())]

    return consumers


def test_a_chain_reaches_each_run_once_in_order():
    known = tasks("raw", "enriched", "report")
    edges = [Consumed(1, day(d), 2, day(d)) for d in (1, 2, 3)] + [Consumed(2, day(d), 3, day(d)) for d in (1, 2, 3)]
    plan = plan_rerun(known[1], day(1), day(2), [day(1), day(2)], reader(edges), lambda pks: known)
    assert plan.runs == {1: [day(1), day(2)], 2: [day(1), day(2)], 3: [day(1), day(2)]}
    assert (plan.waves, plan.count, plan.stale) == ([[1], [2], [3]], 6, 4)


def test_a_weekly_consumer_of_daily_slots_is_one_run():
    known = tasks("daily", "weekly")
    edges = [Consumed(1, day(d), 2, day(16)) for d in range(16, 23)]
    plan = plan_rerun(known[1], day(16), day(22), [day(d) for d in range(16, 23)], reader(edges), lambda p: known)
    assert plan.runs[2] == [day(16)]


def test_a_task_consuming_its_own_earlier_run_reaches_its_later_runs_without_a_cycle():
    known = tasks("balance")
    edges = [Consumed(1, day(d), 1, day(d + 1)) for d in (1, 2, 3)]
    plan = plan_rerun(known[1], day(1), day(1), [day(1)], reader(edges), lambda p: known)
    assert (plan.runs, plan.waves) == ({1: [day(1), day(2), day(3), day(4)]}, [[1]])


@pytest.mark.parametrize(
    "slots, schedule, expected",
    [
        pytest.param([1, 2, 3], [1, 2, 3], [(1, 3)], id="consecutive slots are one range"),
        pytest.param([1, 3], [1, 2, 3], [(1, 1), (3, 3)], id="an unaffected run in between splits the range"),
        pytest.param([1, 2, 5], [1, 2, 3, 4, 5], [(1, 2), (5, 5)], id="several gaps"),
        pytest.param([2, 4], [], [(2, 4)], id="without a schedule: one range"),
    ],
)
def test_backfill_ranges_hold_affected_runs_only(slots, schedule, expected):
    ranges = backfill_ranges([day(s) for s in slots], [day(s) for s in schedule])
    assert ranges == [(day(a), day(b)) for a, b in expected]
