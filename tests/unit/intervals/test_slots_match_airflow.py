"""The expected parent slot is the latest slot Airflow's own cron timetable schedules at or before the child.

Around DST changes Airflow places a skipped wall-clock time when the clock reaches it and a repeated one at
its second occurrence (both occurrences for crons that fire every hour). The interval check must agree with
the timetable the parent DAG actually runs, so this compares the two on the days the clocks change: the
expected slot, and the slots a child interval holds (``coverage="interval"``), against both of Airflow's
cron timetables.
"""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.intervals.interval_slots import slots_in
from airflow_leastaction.intervals.slots import expected_slot

UTC = dt.UTC
CRONS = [
    "30 1 * * *",
    "30 2 * * *",
    "0 0 * * *",
    "45 2 * * *",
    "15 1,2,3 * * *",
    "0 * * * *",
    "*/20 * * * *",
    "0 */2 * * *",
]
# A day either side of a change of each kind; Sao Paulo changed at midnight (a skipped and a repeated one).
CHANGES = [
    ("America/New_York", dt.datetime(2026, 3, 8, 7, tzinfo=UTC)),
    ("America/New_York", dt.datetime(2026, 11, 1, 6, tzinfo=UTC)),
    ("Europe/Paris", dt.datetime(2026, 10, 25, 1, tzinfo=UTC)),
    ("Australia/Sydney", dt.datetime(2026, 4, 4, 16, tzinfo=UTC)),
    ("America/Sao_Paulo", dt.datetime(2018, 11, 4, 3, tzinfo=UTC)),
    ("America/Sao_Paulo", dt.datetime(2018, 2, 18, 2, tzinfo=UTC)),
    ("Pacific/Chatham", dt.datetime(2026, 9, 26, 14, tzinfo=UTC)),
]


def airflow_slots(cron: str, zone: str, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """The data-interval starts Airflow schedules for ``cron`` in ``zone`` from ``start`` to ``end``."""
    import pendulum
    from airflow.timetables.base import TimeRestriction

    from airflow_leastaction.timetables import IntervalCronTimetable

    timetable = IntervalCronTimetable(cron, zone)
    restriction = TimeRestriction(earliest=pendulum.instance(start), latest=None, catchup=True)
    slots, last = [], None
    while True:
        info = timetable.next_dagrun_info(last_automated_data_interval=last, restriction=restriction)
        if info is None or info.data_interval.start > end:
            return slots
        slots.append(info.data_interval.start.astimezone(UTC))
        last = info.data_interval


def trigger_slots(cron: str, zone: str, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """The instants Airflow's CronTriggerTimetable runs ``cron`` in ``zone`` from ``start`` to ``end``."""
    import pendulum
    from airflow.timetables.base import TimeRestriction
    from airflow.timetables.trigger import CronTriggerTimetable

    timetable = CronTriggerTimetable(cron, timezone=zone)
    restriction = TimeRestriction(earliest=pendulum.instance(start), latest=None, catchup=True)
    slots, last = [], None
    while True:
        info = timetable.next_dagrun_info(last_automated_data_interval=last, restriction=restriction)
        if info is None or info.run_after > end:
            return slots
        slots.append(info.run_after.astimezone(UTC))
        last = info.data_interval


IDS = [f"{z}-{c:%Y-%m-%d}" for z, c in CHANGES]


@pytest.mark.parametrize("zone, change", CHANGES, ids=IDS)
@pytest.mark.parametrize("cron", CRONS)
def test_the_expected_slot_is_the_latest_slot_airflow_schedules_at_or_before_the_child(cron, zone, change):
    start, end = change - dt.timedelta(days=2), change + dt.timedelta(days=1)
    slots = airflow_slots(cron, zone, start, end)
    child = change - dt.timedelta(hours=20)
    while child < end:
        latest = max(s for s in slots if s <= child)
        assert expected_slot(cron, child, timezone=zone) == latest, f"child {child.isoformat()}"
        child += dt.timedelta(minutes=10)


@pytest.mark.parametrize("zone, change", CHANGES, ids=IDS)
@pytest.mark.parametrize("cron", CRONS)
def test_a_child_interval_holds_the_slots_airflow_schedules_inside_it(cron, zone, change):
    start, end = change - dt.timedelta(days=1), change + dt.timedelta(days=1)
    # Airflow's slots from a day earlier: a timetable's first run need not fall on its earliest date.
    early = start - dt.timedelta(days=1)
    # Hour-long child intervals starting every 10 minutes across the change, and the two days whole.
    children = [(start, end)]
    children += [
        (t, t + dt.timedelta(hours=1)) for t in (change - dt.timedelta(minutes=10 * k) for k in range(-36, 37))
    ]
    for timetable, slots in (
        ("CronDataIntervalTimetable", airflow_slots(cron, zone, early, end)),
        ("CronTriggerTimetable", trigger_slots(cron, zone, early, end)),
    ):
        for lo, hi in children:
            inside = tuple(s for s in slots if lo <= s < hi)
            assert slots_in(cron, lo, hi, timezone=zone) == inside, f"{timetable}, child [{lo:%H:%M}, {hi:%H:%M}) UTC"
