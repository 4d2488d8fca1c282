"""The verdict of one gate attempt: its condition, how many dependencies were met, and what came of it. Pure.

A gate records its decisions (one row per dependency) when it admits or skips, never while it waits
(:mod:`airflow_leastaction.gating.admission`). So an attempt with decisions was decided: admitted when enough
were met for its condition (or the gates were relaxed: BYPASSED rows), admitted degraded at its fallback's
deadline when some are MISSING (only such an admission records them), skipped otherwise. An attempt
without decisions is waiting, or was never judged, as Airflow's own record of the task instance says.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.gating.engine import DecisionResult
from airflow_leastaction.states import ALIVE_STATES
from airflow_leastaction.www.declared import Gate

#: Airflow task-instance states of an attempt that has not ended: it waits, or is about to judge.
WAITING_STATES = ALIVE_STATES | {"up_for_retry"}


def attempt_of(row) -> AttemptKey:
    """The attempt a decision row was recorded under."""
    return AttemptKey(row["dag_id"], row["task_id"], row["run_id"], row["map_index"], row["attempt"])


@dataclass(frozen=True)
class TaskInstanceFacts:
    """What Airflow knows of a task instance (read by :mod:`airflow_leastaction.www.airflow_state`).

    :param clock: a waiting gate's check (``started``, ``looks``, ``next_look``), from its trigger.
    :param deadline: when Airflow's trigger timeout ends the wait, if set.
    :param unserved_queue: the triggerer queue of a waiting trigger no triggerer has taken in
        ``[triggerer] triggerer_health_check_threshold`` (None: taken, just made, or no queue).
    """

    state: str | None = None
    try_number: int = 0
    start_date: dt.datetime | None = None
    end_date: dt.datetime | None = None
    deadline: dt.datetime | None = None
    clock: dict = field(default_factory=dict)
    unserved_queue: str | None = None


@dataclass(frozen=True)
class Tally:
    """How an attempt's decisions came out, over all of them (a page shows only the first few rows of an
    attempt that judged thousands of dependencies)."""

    total: int
    met: int
    bypassed: int
    at: dt.datetime | None
    missing: int = 0

    @classmethod
    def of(cls, rows: Sequence[dict]) -> Tally:
        return cls(
            len(rows),
            sum(1 for r in rows if r["result"] == DecisionResult.SATISFIED.value),
            sum(1 for r in rows if r["result"] == DecisionResult.BYPASSED.value),
            max((r["decided_at"] for r in rows), default=None),
            sum(1 for r in rows if r["result"] == DecisionResult.MISSING.value),
        )


#: Reasons of unmet dependencies a verdict quotes before it says how many more there are.
QUOTED = 5


@dataclass(frozen=True)
class Verdict:
    """What one gate attempt came to, as the page shows it first."""

    outcome: str  # admitted | bypassed | degraded | skipped | decided | waiting | failed | not judged
    met: int
    total: int
    condition: str
    at: dt.datetime | None = None
    since: dt.datetime | None = None
    deadline: dt.datetime | None = None
    next_look: dt.datetime | None = None
    why: str = ""

    @property
    def headline(self) -> str:
        """``admitted: 2 of 3 met``, ``waiting: 0 of 2 met``, ``not judged yet``."""
        if self.outcome == "not judged":
            return "not judged yet"
        if self.outcome == "bypassed":
            return f"admitted, gate bypassed: {self.met} of {self.total} met"
        if self.outcome == "degraded":
            return f"admitted degraded at its deadline: {self.met} of {self.total} met"
        return f"{self.outcome}: {self.met} of {self.total} met"

    @property
    def folded(self) -> bool:
        """Admitted attempts keep their dependency rows folded: the answer is the verdict."""
        return self.outcome in ("admitted", "bypassed")


def verdict(
    rows: Sequence[dict],
    gate: Gate | None,
    ti: TaskInstanceFacts | None,
    *,
    decided_state: str | None = None,
    tally: Tally | None = None,
) -> Verdict:
    """The verdict of one attempt from its decision ``rows``, its ``gate`` and Airflow's facts.

    :param decided_state: the Airflow state of the task whose attempt recorded ``rows`` (decides an
        attempt whose condition the serialized DAG does not say).
    :param tally: the counts over all the attempt's decisions, when ``rows`` are only the first of them.
    """
    condition = gate.condition_text if gate is not None else "condition not known"
    if rows:
        return _decided(rows, tally or Tally.of(rows), gate, condition, decided_state)
    total = len(gate.dependencies) if gate is not None else 0
    if ti is None or ti.state is None:
        return Verdict("not judged", 0, total, condition)
    if ti.state in WAITING_STATES:
        return _waiting(gate, ti, total, condition)
    if ti.state in ("failed", "upstream_failed"):
        return Verdict("failed", 0, total, condition, at=ti.end_date, why=_failed_why(gate, ti))
    if ti.state == "skipped":
        return Verdict("skipped", 0, total, condition, at=ti.end_date, why="skipped before any dependency was judged")
    return Verdict(
        "not judged", 0, total, condition, at=ti.end_date, why=f"the task is {ti.state}; no decision recorded"
    )


def _decided(
    rows: Sequence[dict], tally: Tally, gate: Gate | None, condition: str, decided_state: str | None
) -> Verdict:
    met, total, at = tally.met, tally.total, tally.at
    unmet = _unmet(rows, total - met)
    if tally.bypassed:
        return Verdict("bypassed", met, total, condition, at=at, why="[leastaction] gates relaxed: admitted unmet")
    if tally.missing:
        why = "ran without what had not landed by its fallback's deadline: " + "; ".join(unmet)
        return Verdict("degraded", met, total, condition, at=at, why=why)
    if gate is not None and gate.condition is not None:
        needed = gate.condition.needed(total)
        if met >= needed:
            return Verdict("admitted", met, total, condition, at=at)
        return Verdict("skipped", met, total, condition, at=at, why=_skip_why(needed, total, unmet))
    if decided_state == "skipped":
        return Verdict("skipped", met, total, condition, at=at, why="; ".join(unmet))
    if decided_state == "success" or met == total:
        return Verdict("admitted", met, total, condition, at=at)
    return Verdict("decided", met, total, condition, at=at, why="; ".join(unmet))


def _unmet(rows: Sequence[dict], count: int) -> list[str]:
    quoted = [r["reason"] for r in rows if r["result"] != DecisionResult.SATISFIED.value][:QUOTED]
    return quoted + ([f"and {count - len(quoted)} more"] if count > len(quoted) else [])


def _skip_why(needed: int, total: int, unmet: list[str]) -> str:
    return f"needs {needed} of {total}; can never be met in this run: " + "; ".join(unmet)


def _waiting(gate: Gate | None, ti: TaskInstanceFacts, total: int, condition: str) -> Verdict:
    since = _instant(ti.clock.get("started")) or ti.start_date
    deadline = ti.deadline
    if gate is not None and gate.max_wait is not None and since is not None and gate.kind == "gate":
        deadline = since + dt.timedelta(seconds=gate.max_wait)
    elif gate is not None and gate.timeout is not None and ti.start_date is not None:
        deadline = ti.start_date + dt.timedelta(seconds=gate.timeout)
    return Verdict(
        "waiting",
        0,
        total,
        condition,
        since=since,
        deadline=deadline,
        next_look=_instant(ti.clock.get("next_look")),
        why=f"waiting for a triggerer serving queue {ti.unserved_queue}"
        if ti.unserved_queue is not None and ti.state == "deferred"
        else _WAITING_WHY.get(str(ti.state), f"Airflow state {ti.state}"),
    )


#: What a waiting attempt is doing, by its Airflow state.
_WAITING_WHY = {
    "deferred": "waits in the triggerer (deferred): it looks again at each poll and decides once it can",
    "up_for_reschedule": "waits between looks (rescheduled)",
    "running": "is judging its dependencies now",
    "queued": "is about to judge its dependencies",
    "scheduled": "is about to judge its dependencies",
    "up_for_retry": "could not read and will try again",
}


def _failed_why(gate: Gate | None, ti: TaskInstanceFacts) -> str:
    if gate is not None and gate.kind == "sensor":
        return "the sensor failed before its parents were met (its timeout, or a parent that failed)"
    return f"the task is {ti.state}; no decision recorded"


def _instant(text) -> dt.datetime | None:
    if not text:
        return None
    try:
        value = dt.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def group_attempts(rows: Iterable[dict]) -> dict[AttemptKey, list[dict]]:
    """Decision rows by attempt, in the order the attempts first appear."""
    out: dict[AttemptKey, list[dict]] = {}
    for row in rows:
        out.setdefault(attempt_of(row), []).append(row)
    return out
