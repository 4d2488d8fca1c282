"""When a deadline written in a DAG is, on the DAG's local clock: the one rule a fallback's ``at`` and a
gate's ``deadline`` share. Pure, no Airflow import.

A deadline is written as an offset or a time of day, read on the DAG's local clock, daylight-saving
changes included:

- ``timedelta(hours=6)``: six hours after the slot *on the local clock*, so a midnight slot's deadline
  is 06:00 local on the days the clocks change too (five or seven hours of elapsed time);
- ``"06:00"`` (or ``datetime.time(6)``): 06:00 local on the slot's local day.

Either way the deadline is the first instant, at or after the slot, at which the local clock reads that
time or later: a time the clocks skip (spring forward) is reached when they jump past it, a time they
repeat (fall back) the first time it is read, and a time of day already past at the slot is the slot.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

#: A deadline as written, once parsed: after the slot, or a local time of day.
At = dt.timedelta | dt.time


def parse_at(value, what: str) -> At:
    """``value`` as a timedelta or a local time of day; ValueError saying why it is neither. ``what``
    names the argument in the message (``fallback at``, ``deadline``)."""
    if isinstance(value, dt.timedelta):
        if value < dt.timedelta(0):
            raise ValueError(f"{what}={value}: an offset after the slot cannot be negative")
        return value
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            raise ValueError(f"{what}={value}: a time of day is read in the DAG's timezone")
        return value
    if isinstance(value, str):
        try:
            parsed = dt.time.fromisoformat(value.strip())
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is None:
            return parsed
    raise ValueError(f"{what}={value!r}: expected a timedelta after the slot or a local time of day 'HH:MM'")


def nominal(at: At) -> dt.timedelta:
    """How long after a midnight slot the deadline is on an ordinary day: what the parse-time checks
    compare with a gate's ``max_wait`` or a sensor's ``timeout``."""
    if isinstance(at, dt.timedelta):
        return at
    return dt.timedelta(hours=at.hour, minutes=at.minute, seconds=at.second)


def describe_at(at: At) -> str:
    return f"{at} after the slot" if isinstance(at, dt.timedelta) else f"{at:%H:%M} local"


def at_as_dict(at: At) -> dict:
    return {"after": at.total_seconds()} if isinstance(at, dt.timedelta) else {"time": at.isoformat()}


def at_from_dict(data: dict) -> At | str | None:
    """What :func:`at_as_dict` wrote, as the declaration takes it (a time of day stays text)."""
    return dt.timedelta(seconds=data["after"]) if "after" in data else data.get("time")


def deadline_at(at: At, slot: dt.datetime, timezone: str | dt.tzinfo) -> dt.datetime:
    """The deadline of a run whose slot is ``slot`` (aware), in UTC: see the module's rule."""
    tz = ZoneInfo(timezone) if isinstance(timezone, str) else timezone
    start = slot.astimezone(dt.UTC)
    wall = start.astimezone(tz).replace(tzinfo=None)
    target = wall + at if isinstance(at, dt.timedelta) else dt.datetime.combine(wall.date(), at)
    return first_reading(target, tz, start)


def first_reading(target: dt.datetime, tz: dt.tzinfo, not_before: dt.datetime) -> dt.datetime:
    """The first instant at or after ``not_before`` (UTC) at which the clock of ``tz`` reads ``target`` (a
    wall time) or later, in UTC."""
    if _wall(not_before, tz) >= target:
        return not_before
    readings = {target.replace(tzinfo=tz, fold=fold).astimezone(dt.UTC) for fold in (0, 1)}
    if all(_wall(t, tz) != target for t in readings):  # skipped by the clocks: reached when they jump past it
        readings = {_jump(tz, *sorted(readings))}
    return min((t for t in readings if t >= not_before), default=not_before)


def _wall(instant: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    return instant.astimezone(tz).replace(tzinfo=None)


def _jump(tz: dt.tzinfo, before: dt.datetime, after: dt.datetime) -> dt.datetime:
    """The instant the clocks of ``tz`` jump forward, between ``before`` (still on the old offset) and
    ``after`` (on the new one), to the second."""
    new = after.astimezone(tz).utcoffset()
    while after - before > dt.timedelta(seconds=1):
        middle = before + (after - before) / 2
        if middle.astimezone(tz).utcoffset() == new:
            after = middle
        else:
            before = middle
    return after.replace(microsecond=0)


__all__ = ["At", "at_as_dict", "at_from_dict", "deadline_at", "describe_at", "first_reading", "nominal", "parse_at"]
