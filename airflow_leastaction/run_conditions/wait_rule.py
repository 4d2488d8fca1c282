"""How long a gate waits for an upstream in another DAG whose latest run is still in progress. Pure.

The gate looks again at 70 % of the upstream's average run length (measured from the start of that
run), then 80 %, 90 % and so on. One check waits at most ``max_wait`` (60 minutes unless set; 0 judges
at once) and looks at most ``max_looks`` times (30), across all its dependencies. When the budget is
spent, the upstream's latest *finished* run decides.

The check is made "when the task itself starts": its clock starts once every dependency of the task
in its own run is final, not when the gate starts, so same-run upstreams that run for hours spend none
of it. Only a look at an upstream whose latest run is in progress counts against ``max_looks``; a
look that finds nothing running waits for nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from airflow_leastaction.exceptions import ConfigurationError

DEFAULT_MAX_WAIT = dt.timedelta(minutes=60)
DEFAULT_MAX_LOOKS = 30
FIRST_FRACTION = 0.7
STEP_FRACTION = 0.1


@dataclass(frozen=True)
class WaitPolicy:
    """Budget of one gate check. ``fallback_step`` spaces the looks when the average run length is unknown."""

    max_wait: dt.timedelta = DEFAULT_MAX_WAIT
    max_looks: int = DEFAULT_MAX_LOOKS
    fallback_step: dt.timedelta = dt.timedelta(seconds=30)

    def __post_init__(self):
        if self.max_wait < dt.timedelta(0):
            raise ConfigurationError(f"max wait must not be negative, got {self.max_wait}")
        if self.max_looks < 1:
            raise ConfigurationError(f"max looks must be at least 1, got {self.max_looks}")


@dataclass(frozen=True)
class WaitClock:
    """Where one check stands: when it started (None: not yet), how many looks it took, when the next
    one is due."""

    started: dt.datetime | None = None
    looks: int = 0
    next_look: dt.datetime | None = None  # None: look now

    def as_dict(self) -> dict:
        return {
            "started": self.started.isoformat() if self.started else None,
            "looks": self.looks,
            "next_look": self.next_look.isoformat() if self.next_look else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> WaitClock:
        started, nxt = data.get("started"), data.get("next_look")
        return cls(
            dt.datetime.fromisoformat(started) if started else None,
            int(data.get("looks", 0)),
            dt.datetime.fromisoformat(nxt) if nxt else None,
        )


def start(clock: WaitClock, now: dt.datetime) -> WaitClock:
    """The check starts now (the task's same-run dependencies are final), unless it already has."""
    return clock if clock.started is not None else WaitClock(now)


def look_at(
    run_started: dt.datetime, average: dt.timedelta | None, index: int, now: dt.datetime, policy: WaitPolicy
) -> dt.datetime:
    """The instant of look number ``index`` (0-based) at a run that started at ``run_started``."""
    if average is None or average <= dt.timedelta(0):
        return now + policy.fallback_step
    when = run_started + average * (FIRST_FRACTION + STEP_FRACTION * index)
    return max(when, now)


def budget_left(clock: WaitClock, policy: WaitPolicy, now: dt.datetime) -> bool:
    """May this check still wait for a run in progress? A check that has not started has spent nothing."""
    if clock.started is None:
        return True
    return clock.looks < policy.max_looks and now - clock.started < policy.max_wait


def due(clock: WaitClock, now: dt.datetime) -> bool:
    return clock.next_look is None or now >= clock.next_look


def after_look(
    clock: WaitClock, in_progress: list[tuple[dt.datetime, dt.timedelta | None]], now: dt.datetime, policy: WaitPolicy
) -> WaitClock:
    """Count a look and schedule the next one: the earliest next look among the runs still in progress.

    A look that finds no upstream run in progress is not counted, and the next one is due at once. A
    check that has not started counts nothing.

    :param in_progress: (run start, average run length) of each dependency still in progress.
    """
    if clock.started is None or not in_progress:
        return replace(clock, next_look=None)
    nxt = min(look_at(run_start, avg, clock.looks, now, policy) for run_start, avg in in_progress)
    deadline = clock.started + policy.max_wait
    return replace(clock, looks=clock.looks + 1, next_look=min(nxt, deadline))
