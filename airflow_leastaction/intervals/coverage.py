"""Whole-interval coverage: a parent judged on every slot inside the child's interval. Pure logic.

The default rule (``coverage="slot"``,
:func:`~airflow_leastaction.intervals.judging.judge_parent`) asks whether the parent slot covering the
child's interval start is done: right for "the parent's state is current". A daily aggregate of 24
hourly loads needs all 24: ``coverage="interval"`` asks that of every parent slot in
``[child interval start, end)``, each judged by its own slot record (repairs included).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import replace

from airflow_leastaction.exceptions import InvalidCoverageError
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.interval_slots import slots_in
from airflow_leastaction.intervals.judging import SlotSnapshot, TaskSnapshot, _slots_of, judge_parent, schedule_error
from airflow_leastaction.intervals.slots import format_slot, resolve_timezone
from airflow_leastaction.states import IN_FLIGHT_STATES, REJECTING_STATES

#: How a child judges a parent. ``slot``: the parent slot covering the child's interval start is done (the
#: parent's state is current). ``interval``: every parent slot inside the child's interval is done (a daily
#: aggregate of 24 hourly loads).
COVERAGES = ("slot", "interval")
#: A waiting reason lists at most this many unfinished parent slots, then says how many more.
MAX_LISTED_SLOTS = 24


def check_coverage(value, owner: str) -> str | None:
    """``value`` if it is a coverage (or None), else :class:`InvalidCoverageError` naming ``owner``."""
    if value is not None and value not in COVERAGES:
        raise InvalidCoverageError(owner, value)
    return value


def snapshot_requests(
    parents: list[TaskIdentity], coverages: list[str | None], child: dt.datetime, end: dt.datetime | None
) -> list[tuple]:
    """What a catalog snapshot must read for these parents: the whole interval for those judged on it."""
    return [
        (p, child, end) if c == "interval" and end is not None else (p, child)
        for p, c in zip(parents, coverages, strict=True)
    ]


def judge_whole_interval(
    identity: TaskIdentity,
    task: TaskSnapshot | None,
    slots: list[SlotSnapshot],
    start: dt.datetime,
    end: dt.datetime | None,
    *,
    consumed: Mapping[dt.datetime, int] | None = None,
) -> Judgement:
    """Judge ``identity`` with ``coverage="interval"``: every parent slot in ``[start, end)`` is done.

    Each slot is judged by its own record (a repair in flight waits, a failed slot rejects); a slot
    before the parent's first record by its watermark. With no parent slot inside the interval, no
    interval end or an ad hoc parent, the covering slot decides (:func:`judge_parent`), as the reason says.
    """
    consumed = consumed or {}
    fallback = None
    if task is None or schedule_error(task) is not None:
        fallback = ""
    elif task.cron is None:
        fallback = " (ad hoc parent: no slots to enumerate; the covering run decides)"
    elif end is None or end <= start:
        fallback = " (the child has no data interval end; the covering slot decides)"
    wanted = () if fallback is not None else slots_in(task.cron, start, end, timezone=task.timezone)
    if fallback is None and not wanted:
        fallback = " (no parent slot inside the child's interval; the covering slot decides)"
    if fallback is not None:
        j = judge_parent(identity, task, slots, start, consumed=consumed)
        return replace(j, reason=j.reason + fallback)
    records = {s.slot: s for s in _slots_of(slots, task.pk) if start <= s.slot < end}
    unfinished, by_watermark = [], 0
    for slot in wanted:
        why = _slot_unfinished(task, records.get(slot), slot, consumed)
        if why == "watermark":
            by_watermark += 1
        elif why:
            unfinished.append((slot, why))
    return _whole_interval_judgement(identity, task, records, wanted, unfinished, by_watermark, end)


def _slot_unfinished(
    task: TaskSnapshot, record: SlotSnapshot | None, slot: dt.datetime, consumed: Mapping[dt.datetime, int]
) -> str | None:
    """Why one parent slot is not done (None when it is; ``watermark`` when its watermark covers it)."""
    if record is None:
        before_history = (task.first_slot is None and not task.records_slots) or (
            task.first_slot is not None and slot < task.first_slot
        )
        wm = task.prev_interval_start
        return "watermark" if before_history and wm is not None and wm >= slot else "has not run"
    if record.state != "success":
        return record.state
    if record.output_revision <= consumed.get(slot, 0):
        return f"revision {record.output_revision} already consumed"
    return None


def _whole_interval_judgement(identity, task, records, wanted, unfinished, by_watermark, end) -> Judgement:
    tz = resolve_timezone(task.timezone)
    span = f"{len(wanted)} slots from {format_slot(wanted[0], 'minute', tz)} up to {format_slot(end, 'minute', tz)}"
    done = [records[s] for s in wanted if s in records and records[s].state == "success"]
    sel = {"upstream_task_pk": task.pk}
    if done:  # the decision names the latest completed slot of the interval
        last = done[-1]
        sel.update(upstream_run_pk=last.pk, upstream_slot=last.slot, upstream_revision=last.output_revision)
    note = ""
    if by_watermark:
        note = f"; {by_watermark} judged by its watermark, " + (
            f"as its slot records start at {format_slot(task.first_slot, 'minute', tz)}"
            if task.first_slot
            else "as it keeps no slot records"
        )
    if not unfinished:
        return Judgement(identity.key, True, f"{identity.name}: all {span} completed (whole interval){note}", **sel)
    listed = ", ".join(f"{format_slot(s, 'minute', tz)} ({why})" for s, why in unfinished[:MAX_LISTED_SLOTS])
    more = len(unfinished) - MAX_LISTED_SLOTS
    if more > 0:
        listed += f" and {more} more"
    rejected = any(why in REJECTING_STATES for _, why in unfinished)
    awaited = records.get(unfinished[0][0])
    if awaited is not None:  # what a degraded run ran without: that record, at the revision it holds now
        sel.update(upstream_run_pk=awaited.pk, upstream_slot=awaited.slot, upstream_revision=awaited.output_revision)
    return Judgement(
        identity.key,
        False,
        f"{identity.name}: {len(unfinished)} of {span} not complete (whole interval): {listed}{note}",
        rejected=rejected,
        in_flight=any(why in IN_FLIGHT_STATES for _, why in unfinished),
        awaited_slot=unfinished[0][0],
        **sel,
    )


__all__ = ["COVERAGES", "MAX_LISTED_SLOTS", "check_coverage", "judge_whole_interval", "snapshot_requests"]
