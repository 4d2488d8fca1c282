"""Judging one catalog parent for one child interval, from a snapshot of the catalog. Pure logic.

The watermark (``prev_interval_start``) answers "has the parent finished the interval that covers
mine". Slot records refine it, because Airflow completes intervals out of order: a covering slot that is
being re-run does not satisfy its children until it completes again, a covering slot that failed rejects
them, and a child that must wait for fresh parent output (a repair) names the revision it needs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from functools import lru_cache
from itertools import chain
from typing import NamedTuple

from airflow_leastaction.exceptions import InvalidCronError, InvalidTimezoneError
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.slots import (
    check_parent_interval,
    cron_granularity,
    expected_slot,
    format_slot,
    normalize_cron,
    resolve_timezone,
    slot_window,
)
from airflow_leastaction.states import IN_FLIGHT_STATES, REJECTING_STATES

FAR_FUTURE = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)


class TaskSnapshot(NamedTuple):
    """A catalog task row as gates judge it.

    Snapshots are named tuples: a triggerer holds one per watched parent and slot record, tens of
    thousands of them, and tuples of plain values are built fast and left alone by the garbage collector.
    """

    pk: int
    identity: TaskIdentity
    cron: str | None
    timezone: str
    state: str | None
    prev_interval_start: dt.datetime | None
    #: The task keeps slot records (Airflow tasks and reporters do). Then a missing covering record means
    #: that slot has not run, even when a later slot already moved the watermark past it.
    records_slots: bool = False
    #: The earliest slot the task has a record of. Slots before it predate its history (the listener was
    #: installed later, or an external system reported only its latest completion): its watermark judges them.
    first_slot: dt.datetime | None = None


class SlotSnapshot(NamedTuple):
    """One slot record of a parent, as gates judge it (the column order of the snapshot's read)."""

    pk: int
    task_pk: int
    slot: dt.datetime
    state: str
    output_revision: int
    rows_written: int | None = None
    repair_pending: bool = False
    rows_error: str | None = None  # why rows_written is unknown: its read failed


def schedule_error(task: TaskSnapshot) -> str | None:
    """Why the catalog's cron or timezone of ``task`` cannot be judged, or None.

    A row written by another reporter, or by an older version with looser cron rules, may hold one; its
    children then wait with this reason instead of failing every gate that reads the catalog with them.
    """
    return _schedule_error(task.cron, task.timezone)


@lru_cache(maxsize=4096)
def _schedule_error(cron: str | None, timezone: str) -> str | None:
    try:
        resolve_timezone(timezone)
        if cron is not None:
            normalize_cron(cron)
    except (InvalidCronError, InvalidTimezoneError) as exc:
        return str(exc)
    return None


def covering_window(task: TaskSnapshot, child_interval: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The [start, end) UTC window of parent slots that cover ``child_interval``."""
    return _covering_window(task.cron, task.timezone, child_interval)


def _covering_window(cron: str | None, timezone: str, child_interval: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    tz = resolve_timezone(timezone)
    if cron is None:
        return child_interval, FAR_FUTURE
    return slot_window(expected_slot(cron, child_interval, timezone=tz), cron_granularity(cron), tz)


def read_window(
    task: TaskSnapshot, child_interval: dt.datetime, interval_end: dt.datetime | None = None
) -> tuple[dt.datetime, dt.datetime]:
    """The [start, end) UTC window of slot records a judgement of ``task`` reads: the covering window,
    stretched to ``interval_end`` for a parent judged on the child's whole interval."""
    return _read_window(task.cron, task.timezone, child_interval, interval_end)


def _read_window(cron, timezone, child_interval, interval_end):
    start, end = _covering_window(cron, timezone, child_interval)
    if interval_end is not None and cron is not None:
        end = max(end, interval_end)
    return start, end


def read_windows(task: TaskSnapshot, intervals) -> tuple[tuple[dt.datetime, dt.datetime], ...]:
    """The merged windows of slot records that judging ``task`` for ``intervals`` (``(start, end)`` pairs,
    ``end`` None but for a whole-interval judgement) reads: none when its schedule cannot be judged (its
    children wait, saying why). Computed once per schedule and set of intervals (parents on one schedule
    waited on for the same intervals share it)."""
    return _read_windows(task.cron, task.timezone, frozenset(intervals))


@lru_cache(maxsize=4096)
def _read_windows(cron, timezone, intervals: frozenset) -> tuple[tuple[dt.datetime, dt.datetime], ...]:
    if _schedule_error(cron, timezone) is not None:
        return ()
    return tuple(merge_windows(_read_window(cron, timezone, ci, end) for ci, end in intervals))


def merge_windows(windows) -> list[tuple[dt.datetime, dt.datetime]]:
    """Overlapping or touching [start, end) windows joined, in order."""
    merged: list[list[dt.datetime]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


class SlotIndex(list):
    """A snapshot's slot records, with a per-task index and a judgement memo built on first use.

    Thousands of waiting gates judge against one snapshot each tick: each judgement reads only its
    parent's records, and a (parent, interval) pair that many gates wait on is judged once.
    """

    _by_task: dict[int, list[SlotSnapshot]] | None = None
    _judged: dict | None = None

    @classmethod
    def grouped(cls, by_task: dict[int, list[SlotSnapshot]]) -> SlotIndex:
        """An index of records already grouped by task, each group in slot order (taken as they are)."""
        index = cls(chain.from_iterable(by_task.values()))
        index._by_task = by_task
        return index

    def for_task(self, task_pk: int) -> list[SlotSnapshot]:
        if self._by_task is None:
            by_task: dict[int, list[SlotSnapshot]] = {}
            for record in self:
                by_task.setdefault(record.task_pk, []).append(record)
            for records in by_task.values():
                records.sort(key=lambda r: r.slot)
            self._by_task = by_task
        return self._by_task.get(task_pk, [])

    def memo(self) -> dict:
        """Judgements already made against this snapshot, keyed by (parent, child interval)."""
        if self._judged is None:
            self._judged = {}
        return self._judged


def _slots_of(slots, task_pk: int) -> list[SlotSnapshot]:
    if isinstance(slots, SlotIndex):
        return slots.for_task(task_pk)
    return sorted((s for s in slots if s.task_pk == task_pk), key=lambda s: s.slot)


def judge_parent(
    identity: TaskIdentity,
    task: TaskSnapshot | None,
    slots: list[SlotSnapshot],
    child_interval: dt.datetime,
    *,
    consumed: Mapping[dt.datetime, int] | None = None,
) -> Judgement:
    """Judge ``identity`` for ``child_interval``. ``slots`` may hold any of the parent's slot records.

    ``consumed`` maps parent slots to the revision the child already consumed; when given, only a higher
    revision (a repair) counts as new output, which is how a re-run child waits for its re-run parent.
    """
    consumed = consumed or {}
    label = identity.name
    dep = identity.key
    if task is None:
        return Judgement(dep, False, f"{label}: not in the catalog (unknown parent); waiting for it to report")
    base = dict(upstream_task_pk=task.pk)
    if (error := schedule_error(task)) is not None:
        return Judgement(
            dep, False, f"{label}: its schedule in the catalog cannot be judged ({error}); waiting for it", **base
        )
    if task.cron is None:
        return _judge_ad_hoc(identity, task, slots, child_interval, consumed)
    tz = resolve_timezone(task.timezone)
    check = check_parent_interval(task.cron, task.prev_interval_start, child_interval, timezone=tz, parent_name=label)
    base["awaited_slot"] = check.expected_slot
    start, end = slot_window(check.expected_slot, check.granularity, tz)
    covering = [s for s in _slots_of(slots, task.pk) if start <= s.slot < end]
    slot_label = f"{format_slot(check.expected_slot, check.granularity, tz)} ({check.granularity})"
    for s in covering:
        if s.state in IN_FLIGHT_STATES:
            # The record is named with the revision it holds while re-run: a task admitted without it at a
            # fallback's deadline ran without that revision's successor, not without any output at all.
            return Judgement(
                dep,
                False,
                f"{label}: slot {slot_label} is {s.state} (being re-run); waiting for it to complete",
                in_flight=True,
                **base,
                upstream_run_pk=s.pk,
                upstream_slot=s.slot,
                upstream_revision=s.output_revision,
            )
    if covering:
        latest = covering[-1]
        sel = dict(upstream_run_pk=latest.pk, upstream_slot=latest.slot, upstream_revision=latest.output_revision)
        if latest.state in REJECTING_STATES:
            return Judgement(
                dep,
                False,
                f"{label}: slot {slot_label} is {latest.state}; waiting for a retry or repair",
                rejected=True,
                **base,
                **sel,
            )
        if latest.state == "skipped":
            # Skipped, first time or on a re-run of a completed slot: this slot's record decides, and it
            # completed nothing the child can read now.
            return Judgement(
                dep,
                False,
                f"{label}: slot {slot_label} was skipped; waiting for a run that completes it",
                **base,
                **sel,
            )
        if latest.state == "success":
            min_revision = consumed.get(latest.slot, 0) + 1
            if latest.output_revision < min_revision:
                return Judgement(
                    dep,
                    False,
                    f"{label}: slot {slot_label} is at revision {latest.output_revision}, already consumed; "
                    f"waiting for revision {min_revision} (a re-run of that slot)",
                    **base,
                    **sel,
                )
            return Judgement(
                dep,
                True,
                f"{label}: slot {slot_label} completed (revision {latest.output_revision}); judged by its slot records",
                **base,
                **sel,
            )
    return _judge_without_covering_record(identity, task, check, end, tz)


def _judge_without_covering_record(identity, task: TaskSnapshot, check, end: dt.datetime, tz) -> Judgement:
    """No record of the covering slot: the slot records or the watermark decide, as the reason says."""
    dep, base, reason = identity.key, {"upstream_task_pk": task.pk, "awaited_slot": check.expected_slot}, check.reason
    if not task.records_slots and task.state in REJECTING_STATES:
        # A parent that reports only its latest outcome (no slot records): a parent in error is rejected
        # outright, before the timing check, as its error may be in the very interval the child reads.
        return Judgement(dep, False, f"{reason}; parent is {task.state}", rejected=True, **base)
    if task.first_slot is not None and task.first_slot >= end:
        # The covering slot predates the parent's slot records: only its watermark knows about it.
        reason += (
            f"; judged by its watermark, as its slot records start at "
            f"{format_slot(task.first_slot, check.granularity, tz)}"
        )
    elif task.records_slots:
        if check.satisfied:
            # Completed out of order (a backfill, parallel runs): a later slot moved the watermark past a
            # slot that has not run yet.
            slot_label = f"{format_slot(check.expected_slot, check.granularity, tz)} ({check.granularity})"
            return Judgement(
                dep,
                False,
                f"{identity.name}: expected slot {slot_label} has not run yet (later slots "
                f"completed up to {format_slot(task.prev_interval_start, check.granularity, tz)}; "
                "judged by its slot records)",
                **base,
            )
        # No record of the covering slot, and the watermark has not reached it either.
        reason += "; judged by its slot records"
    if check.satisfied:
        return Judgement(dep, True, reason, **base)
    if task.state in REJECTING_STATES:
        return Judgement(dep, False, f"{reason}; parent is {task.state}", rejected=True, **base)
    return Judgement(dep, False, reason, **base)


def _judge_ad_hoc(identity, task, slots, child_interval, consumed) -> Judgement:
    # An ad hoc parent has no cron: any completed slot at or after the child's interval covers it.
    label = identity.name
    own = _slots_of(slots, task.pk)
    done = [
        s
        for s in own
        if s.slot >= child_interval and s.state == "success" and s.output_revision > consumed.get(s.slot, 0)
    ]
    if done:
        s = max(done, key=lambda s: s.slot)
        return Judgement(
            identity.key,
            True,
            f"{label}: ad hoc run at {s.slot.isoformat()} covers it",
            upstream_task_pk=task.pk,
            upstream_run_pk=s.pk,
            upstream_slot=s.slot,
            upstream_revision=s.output_revision,
        )
    wm = task.prev_interval_start
    if wm is not None and wm >= child_interval and not own:
        return Judgement(
            identity.key, True, f"{label}: ad hoc, completed up to {wm.isoformat()}", upstream_task_pk=task.pk
        )
    return Judgement(
        identity.key,
        False,
        f"{label}: ad hoc parent has no completed run at or after {child_interval.isoformat()}",
        rejected=task.state in REJECTING_STATES,
        upstream_task_pk=task.pk,
        awaited_slot=child_interval,
    )


__all__ = [
    "TaskSnapshot",
    "SlotSnapshot",
    "SlotIndex",
    "covering_window",
    "read_window",
    "read_windows",
    "merge_windows",
    "judge_parent",
]
