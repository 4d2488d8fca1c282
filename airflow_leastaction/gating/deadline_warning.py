"""Early warnings before a gate's deadline. Pure, no Airflow import.

A gate (a run condition, a DAG's run condition, a ``ParentIntervalSensor``) given ``deadline=`` warns,
while it waits, when the chance that its task completes after that deadline (read from the runs of its
history still possible, :mod:`airflow_leastaction.expectations.miss`) is high enough for how far the
deadline still is (:class:`WarningRule`): at once when a miss is near certain, and at its last call, the
minutes before the warning's lead, when a miss is likely; never later, when the warning would leave no time
to act. Once per run, task and deadline, then once more, "back on time", if the chance falls back under the
likely bar. A gate without its own
deadline warns against its DAG's ``DeadlineAlert`` when the provider can compute that alert's time for
the run (:data:`DAG_REFERENCES`).

This module holds the declaration (:class:`DeadlineWarning`), its parse-time checks, when the deadline is
for a run (a gate's own by the local-clock rule of :mod:`~airflow_leastaction.gating.local_deadline`, the
fallback's rule), the one rule of when to warn and when to clear (:func:`next_step`), and the message.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from airflow_leastaction.exceptions import InvalidDeadlineError
from airflow_leastaction.gating.local_deadline import (
    At,
    at_as_dict,
    at_from_dict,
    deadline_at,
    describe_at,
    nominal,
    parse_at,
)

#: The references of an Airflow ``DeadlineAlert`` whose time the provider computes for a run, as
#: ``DeadlineReference`` names them: the run's logical date, when it was queued, a fixed instant.
DAG_REFERENCES = ("DAGRUN_LOGICAL_DATE", "DAGRUN_QUEUED_AT", "FIXED_DATETIME")
#: Callback kinds: awaited in the process that warns, or called in a thread of it.
CALLBACK_KINDS = ("async", "sync")

WARNED, CLEARED = "warned", "cleared"
#: What :func:`next_step` asks for: claim the warning and call the callback, or mark it back on time.
WARN, CLEAR = "warn", "clear"
#: The chance of missing a deadline at which a gate warns at its last call, unless ``[leastaction]
#: deadline_warning_probability`` says otherwise: a miss more likely than not.
DEFAULT_CHANCE = 0.5
#: Before its last call, a gate warns only when a miss is near certain (``[leastaction]
#: deadline_warning_early_probability``): hours ahead little is known yet, and a warning raised then on an
#: even chance is as often false as not.
DEFAULT_EARLY_CHANCE = 0.9
#: A warning leaves at least this long to act (``[leastaction] deadline_warning_lead_minutes``): later, the
#: deadline is the DAG's ``DeadlineAlert``'s to report.
DEFAULT_LEAD = dt.timedelta(minutes=30)
#: The last call: the minutes before the lead in which a likely miss (not only a near-certain one) warns.
#: Several looks of a gate (one a minute at least) fall in it.
LAST_CALL = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class WarningRule:
    """When a look warns: the chance of missing it takes, by how far the deadline still is.

    * Before its last call: a chance of ``early`` or more (``probability``, if that is higher).
    * In its last call, the :data:`LAST_CALL` before the ``lead``: a chance of ``probability`` or more.
    * Within the lead: nothing (too late to act on), except at the first look of a gate that did not judge in
      its last call (looks further apart than it, a gate started or restarted late, looks that could not
      read the catalog or had no estimate then): that look is its last call, so that no gate goes without
      one.
    """

    probability: float = DEFAULT_CHANCE
    early: float = DEFAULT_EARLY_CHANCE
    lead: dt.timedelta = DEFAULT_LEAD

    def bar(self, deadline: dt.datetime, now: dt.datetime, previous: dt.datetime | None = None) -> float | None:
        """The chance of missing at or above which a look at ``now`` warns, given the gate's ``previous`` look
        (None: none known); None: no warning now."""
        if now >= deadline:
            return None
        last_call = deadline - self.lead - LAST_CALL
        if now < last_call:
            return max(self.early, self.probability)
        if now <= deadline - self.lead or previous is None or previous < last_call:
            return self.probability
        return None


@dataclass(frozen=True)
class DeadlineWarning:
    """What a gate warns against, and whom it tells.

    :param at: the gate's own deadline (``deadline=``): a ``timedelta`` after the slot, or a local time of
        day, on the DAG's clock. None: the DAG's deadline alert (``reference``; neither: the DAG's alert,
        once read from the DAG, with this ``callback`` instead of the alert's own).
    :param reference: one of :data:`DAG_REFERENCES`: the DAG's ``DeadlineAlert`` this warning stands for.
    :param interval: that alert's interval after its reference.
    :param fixed: ``FIXED_DATETIME``'s instant (aware).
    :param callback: what to call: ``{"kind": "async" | "sync", "path": dotted path, "kwargs": {...}}``
        (Airflow's ``AsyncCallback`` / ``SyncCallback``, as :mod:`~airflow_leastaction.airflow_seam.
        deadline_alerts` reads them), or None (the warning is logged and recorded only).
    """

    at: At | None = None
    reference: str | None = None
    interval: dt.timedelta = dt.timedelta(0)
    fixed: dt.datetime | None = None
    callback: dict | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.at is not None:
            object.__setattr__(self, "at", parse_at(self.at, "deadline"))

    def instant(
        self,
        slot: dt.datetime,
        timezone: str,
        logical_date: dt.datetime | None = None,
        queued_at: dt.datetime | None = None,
    ) -> dt.datetime | None:
        """The deadline of the run whose slot is ``slot``, in UTC; None when the run lacks what the DAG's
        alert is measured from (a run without a logical date, one not queued yet)."""
        if self.at is not None:
            return deadline_at(self.at, slot, timezone)
        start = {"DAGRUN_LOGICAL_DATE": logical_date, "DAGRUN_QUEUED_AT": queued_at, "FIXED_DATETIME": self.fixed}
        base = start.get(self.reference or "")
        return None if base is None else base.astimezone(dt.UTC) + self.interval

    def describe(self) -> str:
        if self.at is not None:
            return f"deadline {describe_at(self.at)}"
        return f"the DAG's deadline alert ({self.reference} + {self.interval})"

    def as_dict(self) -> dict:
        """The form a trigger's kwargs carry (plain JSON)."""
        if self.at is not None:
            out: dict = {**at_as_dict(self.at)}
        else:
            out = {"reference": self.reference, "interval": self.interval.total_seconds()}
            if self.fixed is not None:
                out["fixed"] = self.fixed.isoformat()
        return {**out, "callback": self.callback}

    @classmethod
    def from_dict(cls, data: dict) -> DeadlineWarning:
        callback = data.get("callback")
        if "reference" in data:
            fixed = data.get("fixed")
            return cls(
                None,
                data["reference"],
                dt.timedelta(seconds=float(data.get("interval") or 0)),
                dt.datetime.fromisoformat(fixed) if fixed else None,
                callback,
            )
        return cls(at_from_dict(data), callback=callback)


def check_deadline(
    dag_id: str | None,
    task_id: str | None,
    value,
    wait_limit: dt.timedelta | None,
    limit_name: str = "max_wait",
) -> At | None:
    """A gate's ``deadline=`` parsed, or :class:`InvalidDeadlineError` naming the DAG and task: not an
    offset of zero or more nor a local time of day (the forms of a fallback's ``at``), or after the gate's
    ``max_wait`` (the sensor's ``timeout``: ``limit_name``), where the gate would have given up already."""
    if value is None:
        return None
    try:
        at = parse_at(value, "deadline")
    except ValueError as bad:
        raise InvalidDeadlineError(dag_id, task_id, str(bad)) from None
    if wait_limit is not None and nominal(at) > wait_limit:
        raise InvalidDeadlineError(
            dag_id,
            task_id,
            f"the deadline ({describe_at(at)}) is after {limit_name} ({wait_limit}): the task would give up "
            "before it, and a warning could only come too late",
        )
    return at


def default_wait(value) -> float:
    """Seconds a gate without its own ``max_wait`` waits at least, given ``deadline=value``: until the
    deadline (as it does for a fallback's), so that it is still waiting when a warning is due. 0 without a
    deadline, or with one :func:`check_deadline` refuses."""
    try:
        return 0.0 if value is None else nominal(parse_at(value, "deadline")).total_seconds()
    except ValueError:
        return 0.0


def warning_chance(value: str, option: str = "deadline_warning_probability") -> float:
    """A chance option read (``deadline_warning_probability``, ``deadline_warning_early_probability``): a
    number above 0 and at most 1, or :class:`ValueError` naming the option."""
    try:
        chance = float(value)
    except ValueError:
        chance = float("nan")
    if not 0 < chance <= 1:
        raise ValueError(f"[leastaction] {option} must be a number above 0 and at most 1, not {value!r}")
    return chance


def warning_lead(value: str) -> dt.timedelta:
    """``deadline_warning_lead_minutes`` read: minutes, 0 or more (0: warn until the deadline itself), or
    :class:`ValueError` naming the option."""
    try:
        minutes = float(value)
    except ValueError:
        minutes = float("nan")
    if not 0 <= minutes <= 7 * 24 * 60:
        raise ValueError(
            f"[leastaction] deadline_warning_lead_minutes must be a number of minutes from 0 to 10080, not {value!r}"
        )
    return dt.timedelta(minutes=minutes)


def next_step(
    state: str | None,
    chance: float | None,
    deadline: dt.datetime,
    now: dt.datetime,
    rule: WarningRule = WarningRule(),
    previous: dt.datetime | None = None,
) -> str | None:
    """What one look at the expectation asks for, given the warning's recorded ``state`` (None: none yet),
    the ``chance`` the task completes after the deadline and the gate's ``previous`` look (None: none known).

    :data:`WARN` when nothing was recorded and the chance is at or above the ``rule``'s bar for now (a
    warning is early or it is not one: within the lead, the deadline is Airflow's to report);
    :data:`CLEAR` when a warning stands, the deadline is still ahead and the chance is back under the rule's
    ``probability``; None otherwise (no estimate, on time, already warned, already cleared: a run is warned
    once per deadline, and cleared once)."""
    if chance is None:
        return None
    if state is None:
        bar = rule.bar(deadline, now, previous)
        return WARN if bar is not None and chance >= bar else None
    if state == WARNED and now < deadline and chance < rule.probability:
        return CLEAR
    return None


def task_names(critical_path: Sequence[str]) -> list[str]:
    """The task names of a critical path of node keys (``task@slot``)."""
    return [key.rpartition("@")[0] or key for key in critical_path]


def path_text(critical_path: Sequence[str]) -> str:
    """The tasks a critical path waits on, nearest first: ``feed_it, which waits on ingest``."""
    return ", which waits on ".join(task_names(critical_path))


def local_text(instant: dt.datetime, timezone: str) -> str:
    """``instant`` on the DAG's clock, as a message says it: ``2026-11-20 06:00 CET``."""
    return instant.astimezone(ZoneInfo(timezone)).strftime("%Y-%m-%d %H:%M %Z")


def chance_text(chance: float) -> str:
    """``62%``: a chance as a message says it, in whole percent (rounded down, so 99.6% is not "100%"; the
    product is rounded to 9 places first, so 0.57, which is 56.99999... in binary, says 57%)."""
    return f"{int(round(chance * 100, 9))}%"


def warning_message(
    task: str,
    slot: dt.datetime,
    deadline: dt.datetime,
    chance: float,
    p90: dt.datetime,
    critical_path: Sequence[str],
    timezone: str,
) -> str:
    """What the callback and the log are told: the task, its slot, how likely it is to miss the deadline,
    the expected p90 and the tasks it waits on, on the DAG's clock."""
    waiting = path_text(critical_path) or "nothing but itself"
    return (
        f"{task} (slot {local_text(slot, timezone)}) is {chance_text(chance)} likely to miss its deadline "
        f"{local_text(deadline, timezone)} (expected by {local_text(p90, timezone)}, p90); waiting on {waiting}"
    )


def cleared_message(
    task: str, slot: dt.datetime, deadline: dt.datetime, chance: float, p90: dt.datetime, timezone: str
) -> str:
    return (
        f"{task} (slot {local_text(slot, timezone)}) is back on time: {chance_text(chance)} likely to miss its "
        f"deadline {local_text(deadline, timezone)} (expected by {local_text(p90, timezone)}, p90)"
    )


__all__ = [
    "CLEAR",
    "CLEARED",
    "DAG_REFERENCES",
    "DEFAULT_CHANCE",
    "DEFAULT_EARLY_CHANCE",
    "DEFAULT_LEAD",
    "DeadlineWarning",
    "LAST_CALL",
    "WARN",
    "WARNED",
    "WarningRule",
    "chance_text",
    "check_deadline",
    "cleared_message",
    "default_wait",
    "next_step",
    "path_text",
    "task_names",
    "warning_chance",
    "warning_lead",
    "warning_message",
]
