"""A gate's fallback: at a deadline, run with the dependencies that are there. Pure, no Airflow import.

``Fallback(at=..., require=N)`` on a run condition, a DAG's run condition or a ``ParentIntervalSensor``:
until the deadline the gate waits as it always does; at the deadline, if at least ``require`` of its
dependencies are satisfied, the task is admitted *degraded* (the others are recorded MISSING, see
:func:`~airflow_leastaction.gating.engine.decide_at_deadline`). This module holds the declaration and its
checks. When the deadline is (on the DAG's local clock, daylight-saving changes included) is the rule of
:mod:`~airflow_leastaction.gating.local_deadline`, which a gate's ``deadline=`` (an early warning) reads too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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
from airflow_leastaction.gating.local_deadline import (
    at_as_dict,
    at_from_dict,
    describe_at,
    first_reading,
    nominal,
    parse_at,
)
from airflow_leastaction.gating.local_deadline import deadline_at as fallback_deadline

#: What a degraded task does when its missing dependencies arrive: nothing (None, listed stale) or
#: ``"rerun"`` (its run is cleared and re-run once through Airflow's API).
LATE_ARRIVAL = (None, "rerun")


def reruns_on_late_arrival(fallback: Fallback | Mapping | None) -> bool:
    """Whether a run admitted degraded under ``fallback`` (a :class:`Fallback`, or the form a trigger carries,
    :meth:`Fallback.as_dict`) re-runs once what it ran without arrives: ``on_late_arrival="rerun"``."""
    if fallback is None:
        return False
    chosen = fallback.get("on_late_arrival") if isinstance(fallback, Mapping) else fallback.on_late_arrival
    return chosen == "rerun"


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
            object.__setattr__(self, "at", parse_at(self.at, "fallback at"))
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
        return nominal(self.at)

    def describe(self) -> str:
        return f"fallback at {describe_at(self.at)} with at least {self.require}"

    def as_dict(self) -> dict:
        return {**at_as_dict(self.at), "require": self.require, "on_late_arrival": self.on_late_arrival}

    @classmethod
    def from_dict(cls, data: dict) -> Fallback:
        return cls(at_from_dict(data), data.get("require"), data.get("on_late_arrival"))


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


def awaits_own_run(deadline: dt.datetime, run_started: dt.datetime | None) -> bool:
    """Whether a gate waits for the unfinished tasks of its own run rather than count them MISSING at its
    deadline: when the run started at or after the deadline (a backfill or catch-up of past slots, a clear
    of a past run). Such a run meets its deadline at once, and which of its tasks had finished when the
    gate first looked would depend only on the order the scheduler ran them in. None (not known) keeps the
    rule for runs that started in time."""
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
