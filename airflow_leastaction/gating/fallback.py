"""A gate's fallback: at a deadline, run with the dependencies that are there. Pure, no Airflow import.

``Fallback(at=..., require=N)`` on a run condition, a DAG's run condition or a ``ParentIntervalSensor``:
until the deadline the gate waits as it always does; at the deadline, if at least ``require`` of its
dependencies are satisfied, the task is admitted *degraded* (the others are recorded MISSING, see
:func:`~airflow_leastaction.gating.engine.decide_at_deadline`). This module holds the declaration, its checks,
and the one rule of when the deadline is.

The deadline is read on the DAG's local clock, daylight-saving changes included:

- ``at=timedelta(hours=6)``: six hours after the slot *on the local clock*, so a midnight slot's deadline
  is 06:00 local on the days the clocks change too (five or seven hours of elapsed time);
- ``at="06:00"`` (or ``datetime.time(6)``): 06:00 local on the slot's local day.

Either way the deadline is the first instant, at or after the slot, at which the local clock reads that
time or later: a time the clocks skip (spring forward) is reached when they jump past it, a time they
repeat (fall back) the first time it is read, and a time of day already past at the slot is the slot.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from airflow_leastaction.exceptions import InvalidFallbackError
from airflow_leastaction.gating.engine import (
    ALL,
    DependencyType,
    GateOutcome,
    Judgement,
    Verdict,
    decide,
    decide_at_deadline,
)

#: What a degraded task does when its missing dependencies arrive: nothing (None, listed stale) or
#: ``"rerun"`` (its run is cleared and re-run once through Airflow's API).
LATE_ARRIVAL = (None, "rerun")
#: Dependency types a fallback cannot stand in for: their "missing" upstream is an outcome, not late data.
NO_FALLBACK_TYPES = (DependencyType.FAILURE, DependencyType.ALWAYS)


@dataclass(frozen=True)
class Fallback:
    """Run at ``at`` with at least ``require`` satisfied dependencies, recording the others MISSING.

    :param at: the deadline: a ``timedelta`` after the slot on the DAG's local clock, or a time of day
        (``"06:00"`` or ``datetime.time``) on the slot's local day.
    :param require: how many dependencies must be satisfied at the deadline (at least 1, at most the
        number of dependencies); below it the task is not admitted (a gate skips it, a sensor waits on).
    :param on_late_arrival: ``"rerun"``: once every missing dependency completed the slot it was awaited
        for, clear and re-run the degraded task through Airflow's API, once. Default: it is listed stale.
    """

    at: dt.timedelta | dt.time | str
    require: int
    on_late_arrival: str | None = None

    #: What is wrong with the values given, or None. Kept, not raised: a ``Fallback`` is written as an
    #: argument, before the task it belongs to exists, and the error must name that DAG and task
    #: (:func:`check_fallback`, called where the fallback is attached, raises it).
    problem: str | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self):
        problems = []
        try:
            object.__setattr__(self, "at", _parse_at(self.at))
        except ValueError as bad:
            problems.append(str(bad))
        if isinstance(self.require, bool) or not isinstance(self.require, int) or self.require < 1:
            problems.append(f"fallback require={self.require!r}: it must be a whole number >= 1")
        if self.on_late_arrival not in LATE_ARRIVAL:
            problems.append(f"fallback on_late_arrival={self.on_late_arrival!r}: expected None or 'rerun'")
        object.__setattr__(self, "problem", "; ".join(problems) or None)

    @property
    def nominal(self) -> dt.timedelta:
        """How long after a midnight slot the deadline is on an ordinary day: what the parse-time checks
        compare with the gate's ``max_wait`` or the sensor's ``timeout``."""
        if isinstance(self.at, dt.timedelta):
            return self.at
        return dt.timedelta(hours=self.at.hour, minutes=self.at.minute, seconds=self.at.second)

    def describe(self) -> str:
        when = f"{self.at} after the slot" if isinstance(self.at, dt.timedelta) else f"{self.at:%H:%M} local"
        return f"fallback at {when} with at least {self.require}"

    def as_dict(self) -> dict:
        at = {"after": self.at.total_seconds()} if isinstance(self.at, dt.timedelta) else {"time": self.at.isoformat()}
        return {**at, "require": self.require, "on_late_arrival": self.on_late_arrival}

    @classmethod
    def from_dict(cls, data: dict) -> Fallback:
        at = dt.timedelta(seconds=data["after"]) if "after" in data else data.get("time")
        return cls(at, data.get("require"), data.get("on_late_arrival"))


def _parse_at(value) -> dt.timedelta | dt.time:
    """``at`` as a timedelta or a local time of day; ValueError saying why it is neither."""
    if isinstance(value, dt.timedelta):
        if value < dt.timedelta(0):
            raise ValueError(f"fallback at={value}: an offset after the slot cannot be negative")
        return value
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            raise ValueError(f"fallback at={value}: a time of day is read in the DAG's timezone")
        return value
    if isinstance(value, str):
        try:
            parsed = dt.time.fromisoformat(value.strip())
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is None:
            return parsed
    raise ValueError(f"fallback at={value!r}: expected a timedelta after the slot or a local time of day 'HH:MM'")


def check_fallback(
    dag_id: str | None,
    task_id: str | None,
    fallback: Fallback | None,
    types: Sequence[DependencyType],
    wait_limit: dt.timedelta | None,
    limit_name: str = "max_wait",
) -> Fallback | None:
    """The parse-time checks of a task's fallback, with errors naming the DAG and task: its own values
    (:attr:`Fallback.problem`), ``require`` at most the number of dependencies, no FAILURE or ALWAYS
    dependency, the deadline not after the gate's ``max_wait`` (or the sensor's ``timeout``: ``limit_name``)."""
    if fallback is None:
        return None
    if not isinstance(fallback, Fallback):
        raise InvalidFallbackError(dag_id, task_id, f"fallback={fallback!r}: expected Fallback(at=..., require=N)")
    if fallback.problem is not None:
        raise InvalidFallbackError(dag_id, task_id, fallback.problem)
    if fallback.require > len(types):
        raise InvalidFallbackError(
            dag_id,
            task_id,
            f"fallback require={fallback.require} but the task has only {len(types)} dependencies; "
            "it could never run degraded",
        )
    barred = sorted({t.value for t in types if t in NO_FALLBACK_TYPES})
    if barred:
        raise InvalidFallbackError(
            dag_id,
            task_id,
            f"a fallback cannot stand in for {' or '.join(barred)} dependencies: they wait for an outcome, "
            "not for late data",
        )
    if wait_limit is not None and fallback.nominal > wait_limit:
        raise InvalidFallbackError(
            dag_id,
            task_id,
            f"the fallback deadline ({fallback.describe()}) is after {limit_name} ({wait_limit}): the task "
            "would give up before it",
        )
    return fallback


def fallback_deadline(at: dt.timedelta | dt.time, slot: dt.datetime, timezone: str | dt.tzinfo) -> dt.datetime:
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


def awaits_own_run(deadline: dt.datetime, run_started: dt.datetime | None) -> bool:
    """Whether a gate waits for the unfinished tasks of its own run rather than count them MISSING at its
    deadline: when the run started at or after the deadline (a backfill or catch-up of past slots, a clear
    of a past run). Such a run meets its deadline at once, and which of its tasks had finished when the
    gate first looked would depend only on the order the scheduler ran them in. None (not known: a gate
    deferred by an earlier release) keeps the rule for runs that started in time."""
    return run_started is not None and run_started >= deadline


def decide_all_with_fallback(
    judgements: Sequence[Judgement], fallback: tuple[dt.datetime, int] | None, now: dt.datetime
) -> GateOutcome:
    """A ``ParentIntervalSensor``'s decision: every parent (ALL); from the fallback's deadline (``fallback``
    = (deadline, require)) on, at least ``require`` of them, degraded; otherwise it waits, as a sensor does
    until its timeout (it never skips)."""
    outcome = decide(ALL, judgements)
    if outcome.verdict is Verdict.ADMIT or fallback is None or now < fallback[0]:
        return outcome
    at = decide_at_deadline(ALL, judgements, fallback[1], fallback[0].isoformat())
    return at if at.verdict is Verdict.ADMIT else GateOutcome(Verdict.WAIT, ALL, outcome.judgements)


__all__ = [
    "Fallback",
    "LATE_ARRIVAL",
    "awaits_own_run",
    "check_fallback",
    "decide_all_with_fallback",
    "fallback_deadline",
    "first_reading",
]
