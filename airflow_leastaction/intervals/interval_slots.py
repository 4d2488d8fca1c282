"""The parent slots inside an interval: every slot of a cron in ``[start, end)``. Pure logic.

The slots are the ones :func:`~airflow_leastaction.intervals.slots.expected_slot` names, listed for a whole
interval: what ``coverage="interval"`` judges one by one, and the slots a re-run plan's backfill ranges
must hold.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

from croniter import croniter

from airflow_leastaction.intervals.slots import (
    _SHIFT,
    UTC,
    _aware,
    _covers_every_hour,
    _slot_instants,
    _steady,
    normalize_cron,
    resolve_timezone,
)


def slots_in(
    parent_cron: str, start: dt.datetime, end: dt.datetime, *, timezone: str | dt.tzinfo = "UTC"
) -> tuple[dt.datetime, ...]:
    """Every parent slot in ``[start, end)``, oldest first, as aware UTC instants.

    The slots are the ones :func:`~airflow_leastaction.intervals.slots.expected_slot` names: cron read on
    the parent's wall clock, each slot placed at the instant Airflow's cron timetables run it
    (``_slot_instants`` of :mod:`~airflow_leastaction.intervals.slots`), and kept when that instant lies
    inside the interval.
    """
    start, end = _plain_utc(_aware(start, "start")), _plain_utc(_aware(end, "end"))
    return _slots_in(normalize_cron(parent_cron), resolve_timezone(timezone), start, end)


@lru_cache(maxsize=4096)
def _slots_in(cron: str, tz: dt.tzinfo, start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, ...]:
    if end <= start:
        return ()
    every_hour = _covers_every_hour(cron)
    # Near a clock change a slot's wall-clock time and its instant disagree by up to _SHIFT: 01:30 of a
    # fall-back day runs at its second occurrence, and a skipped 02:30 when the clock reaches 03:30. So
    # the wall clock is read that much beyond an end of the interval that lies near a change.
    low = _wall(start, tz) - (dt.timedelta(0) if _steady(tz, start) else _SHIFT)
    high = _wall(end, tz) + (dt.timedelta(0) if _steady(tz, end) else _SHIFT)
    walls = croniter(cron, low - dt.timedelta(seconds=1))
    found: set[dt.datetime] = set()  # a skipped 02:00 runs at 03:00: one slot, however many walls
    while (wall := walls.get_next(dt.datetime)) < high:
        found.update(instant for instant in _slot_instants(wall, tz, every_hour) if start <= instant < end)
    return tuple(sorted(found))


#: How far :func:`next_slot` looks, span after span: an hour-grained cron is found in the first, a
#: yearly one in the fourth; a cron with no slot for years (a 29 February) in the last.
_LOOKAHEAD = (dt.timedelta(hours=2), dt.timedelta(days=2), dt.timedelta(days=35), dt.timedelta(days=370))
_FAR_LOOKAHEAD = dt.timedelta(days=366 * 9)


def next_slot(cron: str, after: dt.datetime, *, timezone: str | dt.tzinfo = "UTC") -> dt.datetime | None:
    """The first slot of ``cron`` strictly after ``after``, as :func:`slots_in` places it (None: none for
    years). The slot a task runs next once its watermark is ``after``; a child interval's end."""
    start = _plain_utc(_aware(after, "after")) + dt.timedelta(microseconds=1)
    for span in (*_LOOKAHEAD, _FAR_LOOKAHEAD):
        found = slots_in(cron, start, start + span, timezone=timezone)
        if found:
            return found[0]
    return None


def _wall(instant: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    return instant.astimezone(tz).replace(tzinfo=None, fold=0)


def _plain_utc(value: dt.datetime) -> dt.datetime:
    # Subclasses (pendulum's, from Airflow contexts) may drop the zone in arithmetic: use a plain datetime.
    utc = value.astimezone(UTC)
    return dt.datetime(utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second, utc.microsecond, tzinfo=UTC)
