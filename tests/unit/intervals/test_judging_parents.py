"""Judging a parent with partial history: slot records where they exist, the watermark before them."""

from __future__ import annotations

import datetime as dt

from hypothesis import example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import SlotSnapshot, TaskSnapshot, judge_parent
from airflow_leastaction.states import IN_FLIGHT_STATES

UTC = dt.UTC
RAW = TaskIdentity("orders_raw", "sales")
STATES = ["success", "success", "running", "failed", "skipped"]


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, 1, tzinfo=UTC) + dt.timedelta(days=n - 1)


def parent(records: dict[int, str], history: int | None) -> tuple[TaskSnapshot, list[SlotSnapshot]]:
    """A daily parent: slot records by day, and a watermark from before them (``history``)."""
    slots = [SlotSnapshot(n, 1, day(n), state, 1 if state == "success" else 0) for n, state in sorted(records.items())]
    done = [n for n, state in records.items() if state == "success"]
    wm = max([n for n in [history, *done] if n is not None], default=None)
    first = min(records, default=None)
    task = TaskSnapshot(
        1, RAW, "0 0 * * *", "UTC", "success", day(wm) if wm else None, bool(records), day(first) if first else None
    )
    return task, slots


@settings(max_examples=300, deadline=None)
@given(
    records=st.dictionaries(st.integers(1, 20), st.sampled_from(STATES), max_size=12),
    history=st.one_of(st.none(), st.integers(1, 20)),
    child=st.integers(1, 22),
    hour=st.integers(0, 23),
)
@example(records={5: "success"}, history=None, child=3, hour=0)  # an external system reporting its latest day
@example(records={1: "success", 5: "success"}, history=None, child=2, hour=0)  # a backfill finishing day 5 first
def test_slots_before_the_first_record_are_judged_by_the_watermark_and_after_it_by_the_records(
    records, history, child, hour
):
    task, slots = parent(records, history)
    j = judge_parent(RAW, task, slots, day(child) + dt.timedelta(hours=hour))

    # The oracle, in the rule's words: the covering slot is the child's day. Its own record decides
    # when it has one; before the parent's first record its watermark decides; after it, no record
    # means it has not run.
    first = min(records, default=None)
    wm = max([n for n in [history, *(n for n, s in records.items() if s == "success")] if n is not None], default=None)
    if child in records:
        expected = records[child] == "success"
    elif first is None or child < first:
        expected = wm is not None and wm >= child
    else:
        expected = False
    assert j.satisfied == expected
    if child not in records and first is not None and child < first:
        assert "judged by its watermark, as its slot records start at" in j.reason
    elif child not in records and first is not None and wm is not None and wm >= child:
        assert j.reason.endswith("judged by its slot records)")
    if child in records and records[child] in IN_FLIGHT_STATES:
        assert "is running" in j.reason


def test_gates_on_the_two_instants_of_a_repeated_hour_get_their_own_judgement_from_one_snapshot():
    # 01:30 in New York on 2026-11-01 happens twice (EDT, then EST): equal, and hashed alike, as aware times
    # in their own zone, an hour apart as instants. Gates judged against one snapshot share judgements per
    # (parent, interval); the two must not share one.
    from zoneinfo import ZoneInfo

    from airflow_leastaction.intervals.judging import SlotIndex
    from airflow_leastaction.intervals.parents import judge_parents

    hourly = TaskSnapshot(1, RAW, "0 * * * *", "UTC", "success", dt.datetime(2026, 11, 1, 5, tzinfo=UTC), True)
    records = SlotIndex([SlotSnapshot(1, 1, dt.datetime(2026, 11, 1, 5, tzinfo=UTC), "success", 1)])
    snapshot = ({RAW: hourly}, records)
    first = dt.datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"))
    second = first.replace(fold=1)
    assert [j.satisfied for j in judge_parents([RAW], first, snapshot)] == [True]  # 05:00 UTC completed
    assert [j.satisfied for j in judge_parents([RAW], second, snapshot)] == [False]  # 06:00 UTC has not run
