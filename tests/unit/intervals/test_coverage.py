"""Whole-interval coverage (``coverage="interval"``): plain cases, and properties against an oracle that
places each cron slot where Airflow runs it, clock changes included."""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidCoverageError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import MAX_LISTED_SLOTS, check_coverage, judge_whole_interval
from airflow_leastaction.intervals.interval_slots import slots_in
from airflow_leastaction.intervals.judging import SlotSnapshot, TaskSnapshot
from airflow_leastaction.intervals.parents import judge_parents
from airflow_leastaction.intervals.slots import format_slot
from airflow_leastaction.states import REJECTING_STATES
from tests.helpers.cron_grammar import ZONES as PROPERTY_ZONES
from tests.helpers.cron_grammar import anchors, parent_slots
from tests.helpers.cron_grammar import crons as cron_grammar

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

    def test_a_parent_slot_in_the_repeated_hour_of_a_clock_change_is_waited_for(self):
        # New York falls back at 06:00 UTC on 2026-11-01; Airflow runs that day's 01:30 at 01:30 EST (06:30
        # UTC), inside the child's interval: the previous day's slot does not complete it.
        start = dt.datetime(2026, 11, 1, 6, tzinfo=UTC)
        records = {dt.datetime(2026, 10, 31, 5, 30, tzinfo=UTC): "success"}
        j = judge(records, cron="30 1 * * *", tz="America/New_York", start=start, end=start + dt.timedelta(hours=1))
        assert not j.satisfied
        assert j.reason.endswith("not complete (whole interval): 2026-11-01 01:30 America/New_York (has not run)")
        records[dt.datetime(2026, 11, 1, 6, 30, tzinfo=UTC)] = "success"
        j = judge(records, cron="30 1 * * *", tz="America/New_York", start=start, end=start + dt.timedelta(hours=1))
        assert j.satisfied and j.upstream_slot == dt.datetime(2026, 11, 1, 6, 30, tzinfo=UTC)

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
            st.sampled_from(["0", "15", "30", "45", "*/20", "0,30", "5-50/15"]),
            # 1 and 2 o'clock are the hours clock changes repeat or skip.
            st.sampled_from(["*", "0", "1", "2", "6", "*/2", "*/6", "9-17/4", "1,13", "23"]),
            st.sampled_from(["*", "*", "1", "15", "*/10", "28-31"]),
            st.sampled_from(["*", "*", "*", "2", "1-6"]),
            st.sampled_from(["*", "*", "1-5", "0", "6", "MON", "sat"]),
        ),
    ),
)
instants = st.datetimes(min_value=dt.datetime(2025, 1, 1), max_value=dt.datetime(2027, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0, tzinfo=UTC)
)
#: Wall-clock time the oracle reads either side of an interval: more than any clock change moves a slot.
WALL_MARGIN = dt.timedelta(hours=6)


def _zone(name: str) -> dt.tzinfo:
    return UTC if name == "UTC" else ZoneInfo(name)


def _fires_every_hour(cron: str) -> bool:
    # Of the crons drawn above, the ones whose hour field names every hour.
    return cron == "@hourly" or (not cron.startswith("@") and cron.split()[1] == "*")


def oracle_slots(cron: str, zone: str, start: dt.datetime, end: dt.datetime, every_hour=None) -> list[dt.datetime]:
    """The parent's slots in [start, end), in the rule's words: every cron slot on the parent's wall clock,
    placed at the instant Airflow runs it (``parent_slots``), whose instant lies inside the interval."""
    tz = _zone(zone)
    every_hour = _fires_every_hour(cron) if every_hour is None else every_hour
    lo, hi = (t.astimezone(tz).replace(tzinfo=None) for t in (start, end))
    return [s for s in parent_slots(cron, tz, every_hour, lo - WALL_MARGIN, hi + WALL_MARGIN) if start <= s < end]


@cache
def clock_changes(zone: str) -> tuple[dt.datetime, ...]:
    """The instants ``zone`` changes its UTC offset, from the anchors of the interval check's properties."""
    tz = _zone(zone)
    return tuple(
        a
        for a in anchors(zone)
        if (a - dt.timedelta(minutes=1)).astimezone(tz).utcoffset() != a.astimezone(tz).utcoffset()
    )


@st.composite
def near_clock_changes(draw, zones=ZONES, uniform=True):
    """A zone and an interval start: anywhere, or up to a day before or a few hours after a clock change."""
    zone = draw(st.sampled_from(zones))
    changes = clock_changes(zone)
    if not changes or (uniform and draw(st.booleans())):
        return zone, draw(instants)
    minutes = draw(st.one_of(st.integers(-26 * 60, 4 * 60), st.integers(-26, 4).map(lambda h: 60 * h)))
    return zone, draw(st.sampled_from(changes)) + dt.timedelta(minutes=minutes)


NEW_YORK_FALLS_BACK = dt.datetime(2026, 11, 1, 6, tzinfo=UTC)  # 02:00 EDT becomes 01:00 EST


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cron=crons, where=near_clock_changes(), length=st.sampled_from(LENGTHS))
@example(cron="0 0 * * *", where=("UTC", DAY), length=dt.timedelta(days=1))
@example(cron="*/20 * 28-31 * *", where=("Asia/Kolkata", DAY), length=dt.timedelta(days=31))
# The repeated hour: Airflow runs 01:30 at 01:30 EST (06:30 UTC), inside a child interval of 06:00-07:00 UTC.
@example(cron="30 1 * * *", where=("America/New_York", NEW_YORK_FALLS_BACK), length=dt.timedelta(hours=1))
@example(
    cron="0 * * * 1-5",
    where=("Australia/Lord_Howe", dt.datetime(2026, 3, 29, 1, tzinfo=UTC)),
    length=dt.timedelta(days=7),
)  # found: the slot before a weekend that ends with a clock change
def test_slots_in_agrees_with_the_oracle(cron, where, length):
    zone, start = where
    end = start + length
    assert list(slots_in(cron, start, end, timezone=zone)) == oracle_slots(cron, zone, start, end)


DST_ZONES = [z for z in [*PROPERTY_ZONES, "Australia/Lord_Howe"] if clock_changes(z)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cron=cron_grammar(),
    where=near_clock_changes(DST_ZONES, uniform=False),
    length=st.sampled_from([dt.timedelta(hours=1), dt.timedelta(hours=3), dt.timedelta(days=1)]),
)
# found: an every-hour cron runs 02:01 twice when Paris falls back; the second, 01:01 UTC, was missed.
@example(
    cron=("1 * * * *", "hour", True),
    where=("Europe/Paris", dt.datetime(2017, 10, 29, 1, 0, 28, 125000, tzinfo=UTC)),
    length=dt.timedelta(hours=1),
)
def test_slots_in_across_clock_changes_agrees_with_the_oracle_for_any_cron(cron, where, length):
    text, _, every_hour = cron
    zone, start = where
    end = start + length
    assert list(slots_in(text, start, end, timezone=zone)) == oracle_slots(text, zone, start, end, every_hour)


@st.composite
def whole_interval_cases(draw, where, lengths):
    """A parent cron and zone, a child interval, and the parent's slot records and prior watermark."""
    cron, (zone, start), length = draw(crons), draw(where), draw(st.sampled_from(lengths))
    end = start + length
    slots = oracle_slots(cron, zone, start, end)
    assume(slots)
    before = oracle_slots(cron, zone, start - dt.timedelta(days=40), start)[-1:]
    after = oracle_slots(cron, zone, end, end + dt.timedelta(days=40))[:1]
    grid = before + slots + after
    # Records start somewhere (the listener was installed then); before it only a watermark may know.
    cut = draw(st.integers(0, len(grid)))
    states = draw(st.lists(st.sampled_from(STATES), min_size=len(grid), max_size=len(grid)))
    records = {s: state for s, state in list(zip(grid, states, strict=True))[cut:] if state is not None}
    history = draw(st.one_of(st.none(), st.sampled_from(grid[:cut]))) if cut else None
    return cron, zone, start, end, records, history


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=whole_interval_cases(near_clock_changes(), LENGTHS))
def test_whole_interval_coverage_agrees_with_the_oracle(case):
    check_whole_interval_against_the_oracle(*case)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=whole_interval_cases(near_clock_changes([z for z in ZONES if clock_changes(z)], uniform=False), LENGTHS[:3])
)
# The repeated hour: the 10-31 slot does not complete a child of 06:00-07:00 UTC, whose 01:30 EST has not run.
@example(
    case=(
        "30 1 * * *",
        "America/New_York",
        NEW_YORK_FALLS_BACK,
        NEW_YORK_FALLS_BACK + dt.timedelta(hours=1),
        {dt.datetime(2026, 10, 31, 5, 30, tzinfo=UTC): "success"},
        None,
    )
)
# found: an hourly parent's 01:00 EST slot (06:00 UTC), the second 01:00 of the day, was not waited for.
@example(
    case=(
        "@hourly",
        "America/New_York",
        dt.datetime(2017, 11, 5, 6, tzinfo=UTC),
        dt.datetime(2017, 11, 5, 7, tzinfo=UTC),
        {dt.datetime(2017, 11, 5, 5, tzinfo=UTC): "success", dt.datetime(2017, 11, 5, 7, tzinfo=UTC): "success"},
        None,
    )
)
def test_whole_interval_coverage_across_clock_changes_agrees_with_the_oracle(case):
    check_whole_interval_against_the_oracle(*case)


def check_whole_interval_against_the_oracle(cron, zone, start, end, records, history):
    slots = oracle_slots(cron, zone, start, end)
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


@pytest.mark.parametrize(
    "cron, zone, start, end, expected",
    [
        # New York falls back on 2026-11-01 at 06:00 UTC: 01:00-01:59 happens in EDT, then again in EST.
        # Airflow runs 01:30 once, at its second occurrence (06:30 UTC).
        ("30 1 * * *", "America/New_York", NEW_YORK_FALLS_BACK, NEW_YORK_FALLS_BACK + dt.timedelta(hours=1), [(6, 30)]),
        ("30 1 * * *", "America/New_York", NEW_YORK_FALLS_BACK - dt.timedelta(hours=1), NEW_YORK_FALLS_BACK, []),
        # Every-hour crons step in real time: both occurrences of 01:20 and 01:40 are slots.
        (
            "*/20 * * * *",
            "America/New_York",
            NEW_YORK_FALLS_BACK - dt.timedelta(minutes=30),
            NEW_YORK_FALLS_BACK + dt.timedelta(hours=1),
            [(5, 40), (6, 0), (6, 20), (6, 40)],
        ),
        # Paris springs forward on 2026-03-29 at 01:00 UTC: 02:45 is skipped and runs at 03:45 CEST (01:45 UTC).
        (
            "45 2 * * *",
            "Europe/Paris",
            dt.datetime(2026, 3, 29, 1, tzinfo=UTC),
            dt.datetime(2026, 3, 29, 2, tzinfo=UTC),
            [(1, 45)],
        ),
        # Every other hour: 02:00 is skipped and runs at 03:00 CEST (01:00 UTC), then 04:00 CEST at 02:00 UTC.
        (
            "0 */2 * * *",
            "Europe/Paris",
            dt.datetime(2026, 3, 29, 0, 30, tzinfo=UTC),
            dt.datetime(2026, 3, 29, 3, tzinfo=UTC),
            [(1, 0), (2, 0)],
        ),
    ],
)
def test_slots_in_places_each_slot_where_airflow_runs_it_across_a_clock_change(cron, zone, start, end, expected):
    day = start.replace(hour=0, minute=0)
    assert slots_in(cron, start, end, timezone=zone) == tuple(day.replace(hour=h, minute=m) for h, m in expected)


def test_the_last_weekday_slot_before_a_weekend_with_a_clock_change_is_on_the_hour():
    # Regression: an earlier reading named Friday 23:30, off the hour, for the weekend of a Lord Howe clock change.
    slots = slots_in(
        "0 * * * 1-5",
        dt.datetime(2026, 4, 3, 12, tzinfo=UTC),
        dt.datetime(2026, 4, 5, 13, tzinfo=UTC),
        timezone="Australia/Lord_Howe",
    )
    assert slots == (dt.datetime(2026, 4, 3, 12, tzinfo=UTC),)


class TestMissingWhileRepairedOverTheInterval:
    def test_a_slot_of_the_interval_being_repaired_at_the_deadline_is_missing_at_the_revision_it_held(self):
        records = [SlotSnapshot(h + 1, 7, hour(h), "running" if h == 5 else "success", 2) for h in range(24)]
        tasks, _ = snapshot({hour(h): "success" for h in range(24)})
        j = judge_whole_interval(HOURLY_LOADS, tasks[HOURLY_LOADS], records, DAY, NEXT_DAY)
        missing = j.as_missing(DAY)
        assert (j.satisfied, missing.upstream_slot, missing.upstream_run_pk, missing.upstream_revision) == (
            False,
            hour(5),
            6,
            2,
        )
