"""The re-run plan's rules on plain tables: who is reached, the waves, the backfill ranges. Pure."""

from __future__ import annotations

import datetime as dt
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.cli import build_parser
from airflow_leastaction.exceptions import PlanApplyError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.reruns.plan import Consumed, PlannedTask, backfill_ranges, plan_rerun

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


#: Catalog names are anybody's text: shell syntax, quotes, spaces, leading dashes, any script.
names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=30
).filter(str.strip)


@settings(max_examples=300, deadline=None)
@given(name=names, project=names, account=names | st.just(""), partition=names | st.just(""))
def test_an_owners_command_pasted_in_a_shell_gives_back_the_exact_arguments(name, project, account, partition):
    task = PlannedTask(1, TaskIdentity(name, project, account, partition), source="external")
    printed = task.report_command(day(3))
    assert shlex.split(printed) == task.report_arguments(day(3))
    args = build_parser().parse_args(shlex.split(printed)[1:])
    assert (args.name, args.project, args.account, args.partition) == (name, project, account, partition)
    assert (args.slot, args.repair, args.cron, args.run_id) == (day(3), True, None, None)


def test_an_owners_command_is_quoted_so_a_name_cannot_run_a_command():
    task = PlannedTask(1, TaskIdentity("x$(touch pwned)", "p;rm -rf ~"), source="external")
    assert task.report_command(day(3)) == (
        "airflow-leastaction catalog report 'x$(touch pwned)' --project 'p;rm -rf ~' "
        "--slot 2026-11-03T00:00:00+00:00 --repair"
    )


def test_tasks_that_consumed_each_others_runs_both_ways_are_refused_naming_them():
    known = tasks("ledger", "balance")
    # balance read the ledger of the 1st; the ledger of the 2nd read the balance of the 1st.
    edges = [Consumed(1, day(1), 2, day(1)), Consumed(2, day(1), 1, day(2))]
    with pytest.raises(PlanApplyError, match="cannot re-run one after another: .*p/balance, p/ledger"):
        plan_rerun(known[1], day(1), day(1), [day(1)], reader(edges), lambda pks: known)
    assert PlanApplyError.exit_status == 1
