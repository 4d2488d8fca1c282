"""Whole-interval coverage (``coverage="interval"``): plain cases and properties against a croniter oracle."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidCoverageError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import MAX_LISTED_SLOTS, check_coverage, judge_whole_interval
from airflow_leastaction.intervals.judging import SlotSnapshot, TaskSnapshot, judge_parents
from airflow_leastaction.intervals.slots import format_slot, slots_in
from airflow_leastaction.states import REJECTING_STATES

UTC = dt.UTC
HOURLY_LOADS = TaskIdentity("orders_hourly", "sales", coverage="interval")
DAY = dt.datetime(2026, 11, 28, tzinfo=UTC)
NEXT_DAY = DAY + dt.timedelta(days=1)


def hour(n: int) -> dt.datetime:
    return DAY + dt.timedelta(hours=n)


def snapshot(records: dict[dt.datetime, str], *, cron="0 * * * *", tz="UTC", watermark=None, revision=1):
    """A parent's task row and slot records as a catalog snapshot holds them."""
    slots = [
        SlotSnapshot(i + 1, 7, slot, state, revision if state == "success" else 0)
        for i, (slot, state) in enumerate(sorted(records.items()))
    ]
    done = [s.slot for s in slots if s.state == "success"]
    wm = max([w for w in [watermark, *done] if w is not None], default=None)
    task = TaskSnapshot(7, HOURLY_LOADS, cron, tz, "success", wm, bool(slots), min(records, default=None))
    return {HOURLY_LOADS: task}, slots


def judge(records, start=DAY, end=NEXT_DAY, consumed=None, **kw):
    tasks, slots = snapshot(records, **kw)
    return judge_whole_interval(HOURLY_LOADS, tasks[HOURLY_LOADS], slots, start, end, consumed=consumed)


class TestWholeIntervalCoverage:
    def test_a_daily_child_waits_for_every_hourly_parent_slot_of_its_day(self):
        j = judge({hour(h): "success" for h in range(23)})
        assert not j.satisfied
        assert j.reason == (
            "orders_hourly: 1 of 24 slots from 2026-11-28 00:00 up to 2026-11-29 00:00 not complete "
            "(whole interval): 2026-11-28 23:00 (has not run)"
        )
        j = judge({hour(h): "success" for h in range(24)})
        assert j.satisfied and j.upstream_slot == hour(23)
        assert (
            j.reason == "orders_hourly: all 24 slots from 2026-11-28 00:00 up to 2026-11-29 00:00 completed "
            "(whole interval)"
        )

    def test_the_default_rule_admits_the_same_child_once_the_midnight_slot_is_done(self):
        tasks, slots = snapshot({hour(0): "success"})
        plain = TaskIdentity("orders_hourly", "sales")
        assert judge_parents([plain], DAY, (tasks, slots))[0].satisfied
        assert not judge_parents([plain], DAY, (tasks, slots), interval_end=NEXT_DAY, coverage="interval")[0].satisfied

    def test_the_waiting_reason_lists_each_missing_slot_with_its_state(self):
        records = {hour(h): "success" for h in range(24)}
        records.update({hour(3): "running", hour(4): "failed", hour(5): "skipped"})
        del records[hour(6)]
        j = judge(records)
        assert not j.satisfied and j.rejected
        assert j.reason.endswith(
            "not complete (whole interval): 2026-11-28 03:00 (running), 2026-11-28 04:00 "
            "(failed), 2026-11-28 05:00 (skipped), 2026-11-28 06:00 (has not run)"
        )

    def test_a_long_list_of_missing_slots_is_cut_and_counted(self):
        j = judge({hour(0): "success"}, cron="*/15 * * * *")
        assert f"and {95 - MAX_LISTED_SLOTS} more" in j.reason and "95 of 96 slots" in j.reason

    def test_a_repair_in_flight_waits_and_a_consumed_slot_waits_for_a_new_revision(self):
        records = {hour(h): "success" for h in range(24)}
        records[hour(7)] = "running"  # re-running a completed slot
        assert "2026-11-28 07:00 (running)" in judge(records).reason
        records[hour(7)] = "success"
        j = judge(records, consumed={hour(7): 1})
        assert not j.satisfied and "2026-11-28 07:00 (revision 1 already consumed)" in j.reason
        assert judge(records, consumed={hour(7): 1}, revision=2).satisfied

    def test_slots_before_the_first_record_are_judged_by_the_watermark(self):
        j = judge({hour(h): "success" for h in range(12, 24)}, watermark=hour(11))
        assert j.satisfied
        assert j.reason.endswith("; 12 judged by its watermark, as its slot records start at 2026-11-28 12:00")
        j = judge({hour(h): "running" for h in range(12, 24)}, watermark=hour(9))
        assert not j.satisfied and "2026-11-28 10:00 (has not run), 2026-11-28 11:00 (has not run)" in j.reason
        assert j.reason.endswith("; 10 judged by its watermark, as its slot records start at 2026-11-28 12:00")

    def test_a_parent_slot_in_another_timezone_is_listed_on_its_own_clock(self):
        j = judge({}, cron="0 9 * * *", tz="Europe/Paris", start=DAY, end=DAY + dt.timedelta(days=2))
        assert "2 of 2 slots" in j.reason and "2026-11-28 09:00 Europe/Paris (has not run)" in j.reason

    @pytest.mark.parametrize("end", [None, DAY])
    def test_a_child_without_an_interval_end_falls_back_to_the_covering_slot(self, end):
        j = judge({hour(0): "success"}, end=end)
        assert j.satisfied and j.reason.endswith("(the child has no data interval end; the covering slot decides)")

    def test_a_child_interval_with_no_parent_slot_inside_falls_back_to_the_covering_slot(self):
        j = judge({DAY: "success"}, cron="0 0 * * *", start=hour(5), end=hour(6))
        assert j.satisfied and j.reason.endswith(
            "(no parent slot inside the child's interval; the covering slot decides)"
        )

    def test_an_ad_hoc_parent_falls_back_to_its_covering_run(self):
        j = judge({hour(2): "success"}, cron=None)
        assert j.satisfied and "ad hoc parent" in j.reason


class TestCoverageValues:
    @pytest.mark.parametrize("value", ["whole", "Interval", "", 1])
    def test_a_bad_coverage_is_rejected_naming_its_owner(self, value):
        with pytest.raises(InvalidCoverageError, match=r"task 'load': coverage=.*expected 'slot'.*or 'interval'"):
            check_coverage(value, "task 'load'")

    @pytest.mark.parametrize("value", [None, "slot", "interval"])
    def test_good_coverages_pass(self, value):
        assert check_coverage(value, "x") == value

    def test_the_coverage_of_a_parent_is_not_part_of_its_identity(self):
        assert (
            TaskIdentity("orders_hourly", "sales") == HOURLY_LOADS and HOURLY_LOADS.key == "catalog:sales/orders_hourly"
        )
        assert hash(HOURLY_LOADS) == hash(TaskIdentity("orders_hourly", "sales"))


# -- properties ------------------------------------------------------------------------------------
ZONES = ["UTC", "Asia/Kolkata", "Asia/Tokyo", "America/New_York", "Europe/Paris", "Australia/Lord_Howe"]
LENGTHS = [
    dt.timedelta(hours=1),
    dt.timedelta(hours=6),
    dt.timedelta(days=1),
    dt.timedelta(days=7),
    dt.timedelta(days=31),
]
STATES = ["success", "success", "success", None, "running", "failed", "skipped"]

crons = st.one_of(
    st.sampled_from(["@hourly", "@daily", "@weekly", "@monthly"]),
    st.builds(
        " ".join,
        st.tuples(
            st.sampled_from(["0", "15", "30", "*/20", "0,30", "5-50/15"]),
            st.sampled_from(["*", "0", "6", "*/6", "9-17/4", "1,13", "23"]),
            st.sampled_from(["*", "*", "1", "15", "*/10", "28-31"]),
            st.sampled_from(["*", "*", "*", "2", "1-6"]),
            st.sampled_from(["*", "*", "1-5", "0", "6", "MON", "sat"]),
        ),
    ),
)
instants = st.datetimes(min_value=dt.datetime(2025, 1, 1), max_value=dt.datetime(2027, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0, tzinfo=UTC)
)


def _zone(name: str) -> dt.tzinfo:
    return UTC if name == "UTC" else ZoneInfo(name)


def oracle_slots(cron: str, zone: str, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """The parent's slots in [start, end): croniter on the parent's wall clock, read as instants."""
    tz = _zone(zone)
    it = croniter(cron, start.astimezone(tz).replace(tzinfo=None) - dt.timedelta(seconds=1))
    out = []
    while True:
        slot = it.get_next(dt.datetime).replace(tzinfo=tz).astimezone(UTC)
        if slot >= end:
            return out
        out.append(slot)


def no_clock_change(zone: str, start: dt.datetime, end: dt.datetime) -> bool:
    # DST instants belong to the interval check's own properties; here the wall clock stays put.
    tz = _zone(zone)
    return (start - dt.timedelta(days=2)).astimezone(tz).utcoffset() == (end + dt.timedelta(days=2)).astimezone(
        tz
    ).utcoffset()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cron=crons, zone=st.sampled_from(ZONES), start=instants, length=st.sampled_from(LENGTHS))
@example(cron="0 0 * * *", zone="UTC", start=DAY, length=dt.timedelta(days=1))
@example(cron="*/20 * 28-31 * *", zone="Asia/Kolkata", start=DAY, length=dt.timedelta(days=31))
def test_slots_in_agrees_with_croniter(cron, zone, start, length):
    end = start + length
    assume(no_clock_change(zone, start, end))
    assert list(slots_in(cron, start, end, timezone=zone)) == oracle_slots(cron, zone, start, end)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cron=crons, zone=st.sampled_from(ZONES), start=instants, length=st.sampled_from(LENGTHS), data=st.data())
def test_whole_interval_coverage_agrees_with_the_oracle(cron, zone, start, length, data):
    end = start + length
    slots = oracle_slots(cron, zone, start, end)
    assume(slots and no_clock_change(zone, start, end))
    before = oracle_slots(cron, zone, start - dt.timedelta(days=40), start)[-1:]
    after = oracle_slots(cron, zone, end, end + dt.timedelta(days=40))[:1]
    grid = before + slots + after
    # Records start somewhere (the listener was installed then); before it only a watermark may know.
    cut = data.draw(st.integers(0, len(grid)))
    states = data.draw(st.lists(st.sampled_from(STATES), min_size=len(grid), max_size=len(grid)))
    records = {s: state for s, state in list(zip(grid, states, strict=True))[cut:] if state is not None}
    history = data.draw(st.one_of(st.none(), st.sampled_from(grid[:cut]))) if cut else None
    j = judge_whole_interval(HOURLY_LOADS, *_task_and_slots(records, cron, zone, history), start, end)

    # The oracle, in the rule's words: every parent slot inside [start, end) is complete: its record says
    # success, or, before the parent's first record, its watermark has reached it.
    first = min(records, default=None)
    watermark = max([w for w in [history, *(s for s, st_ in records.items() if st_ == "success")] if w], default=None)
    missing = [
        s
        for s in slots
        if records.get(s) != "success"
        and not (s not in records and (first is None or s < first) and watermark is not None and watermark >= s)
    ]
    assert j.satisfied == (not missing)
    assert j.rejected == any(records.get(s) in REJECTING_STATES for s in missing)
    if missing:
        assert f"{len(missing)} of {len(slots)} slots" in j.reason
        for s in missing[:MAX_LISTED_SLOTS]:
            assert format_slot(s, "minute", _zone(zone)) in j.reason
    else:
        assert f"all {len(slots)} slots" in j.reason


def _task_and_slots(records, cron, zone, history):
    slots = [
        SlotSnapshot(i + 1, 7, s, state, 1 if state == "success" else 0)
        for i, (s, state) in enumerate(sorted(records.items()))
    ]
    done = [s for s, state in records.items() if state == "success"]
    wm = max([w for w in [history, *done] if w is not None], default=None)
    task = TaskSnapshot(7, HOURLY_LOADS, cron, zone, "success", wm, bool(records), min(records, default=None))
    return task, slots


CLOCK_CHANGES = [
    dt.datetime(2026, 3, 8, 7, tzinfo=UTC),
    dt.datetime(2026, 11, 1, 6, tzinfo=UTC),
    dt.datetime(2026, 3, 29, 1, tzinfo=UTC),
    dt.datetime(2026, 10, 25, 1, tzinfo=UTC),
]
# Lord Howe's half-hour clock changes (2026-04-04 15:00 and 2026-10-03 15:30 UTC) are left out: across them
# an every-hour cron's slots step in real time and land off the cron's wall clock (Airflow's own stepping
# is irregular there too). A known gap, not yet specified.


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cron=crons,
    zone=st.sampled_from(ZONES),
    change=st.sampled_from(CLOCK_CHANGES),
    before=st.integers(0, 48 * 60),
    length=st.sampled_from(LENGTHS[:4]),
)
@example(
    cron="0 * * * 1-5",
    zone="Australia/Lord_Howe",
    change=dt.datetime(2026, 3, 29, 1, tzinfo=UTC),
    before=0,
    length=dt.timedelta(days=7),
)  # found: the slot before a weekend that ends with a clock change
def test_slots_in_across_clock_changes_are_cron_slots_in_order(cron, zone, change, before, length):
    from airflow_leastaction.intervals.slots import normalize_cron

    start = change - dt.timedelta(minutes=before)
    end = start + length
    tz = _zone(zone)
    slots = list(slots_in(cron, start, end, timezone=zone))
    assert slots == sorted(set(slots)) and all(start <= s < end for s in slots)
    # Every slot sits on the cron's wall clock; away from the clock change they are croniter's, one for one.
    assert all(croniter.match(normalize_cron(cron), s.astimezone(tz).replace(tzinfo=None)) for s in slots)
    day_start = start
    while day_start < end:
        day_end = min(day_start + dt.timedelta(days=1), end)
        if no_clock_change(zone, day_start + dt.timedelta(days=2), day_end - dt.timedelta(days=2)):
            assert [s for s in slots if day_start <= s < day_end] == oracle_slots(cron, zone, day_start, day_end)
        day_start = day_end


def test_the_last_weekday_slot_before_a_weekend_with_a_clock_change_is_on_the_hour():
    # Regression: walking back from the Monday after Lord Howe's clock change named Friday 23:30.
    slots = slots_in(
        "0 * * * 1-5",
        dt.datetime(2026, 4, 3, 12, tzinfo=UTC),
        dt.datetime(2026, 4, 5, 13, tzinfo=UTC),
        timezone="Australia/Lord_Howe",
    )
    assert slots == (dt.datetime(2026, 4, 3, 12, tzinfo=UTC),)
