"""Judging every parent of one child from one catalog snapshot, each by its coverage. Pure logic.

The entry point of both interval rules for the gates: a parent judged by the slot covering the child's
interval (:func:`~airflow_leastaction.intervals.judging.judge_parent`) or by every slot inside it
(:func:`~airflow_leastaction.intervals.coverage.judge_whole_interval`). It sits above both modules, so
neither imports the other back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import judge_whole_interval
from airflow_leastaction.intervals.judging import SlotIndex, SlotSnapshot, TaskSnapshot, judge_parent


def judge_parents(
    parents: list[TaskIdentity],
    child_interval: dt.datetime,
    snapshot: tuple[dict[TaskIdentity, TaskSnapshot], list[SlotSnapshot]],
    consumed: Mapping[str, Mapping[dt.datetime, int]] | None = None,
    *,
    interval_end: dt.datetime | None = None,
    coverage: str | None = None,
) -> list[Judgement]:
    """Judge every parent of one child from one catalog snapshot (see ``CatalogStore.snapshot``).

    A parent's own ``coverage`` wins over ``coverage`` (default ``slot``); ``interval`` judges the
    parent slots inside ``[child_interval, interval_end)``.
    """
    tasks, slots = snapshot
    memo = slots.memo() if isinstance(slots, SlotIndex) else None
    out = []
    for p in parents:
        mine = consumed.get(p.key) if consumed else None
        whole = (p.coverage or coverage) == "interval"
        if memo is None or mine:
            out.append(_judge(p, tasks, slots, child_interval, interval_end, whole, mine))
            continue
        # Many gates wait on the same parent and interval: judge each pair once per snapshot. The key holds
        # plain values: hashed and compared in C, and left alone by the garbage collector. ``fold`` tells the
        # two instants of a repeated DST hour apart (equal, and hashed alike, in their own zone).
        end = interval_end if whole else None
        key = (p.name, p.project, p.account, p.partition, child_interval, child_interval.fold, end, end and end.fold)
        judged = memo.get(key)
        if judged is None:
            judged = memo[key] = _judge(p, tasks, slots, child_interval, interval_end, whole, None)
        out.append(judged)
    return out


def _judge(p, tasks, slots, child_interval, interval_end, whole: bool, consumed) -> Judgement:
    if whole:
        return judge_whole_interval(p, tasks.get(p), slots, child_interval, interval_end, consumed=consumed)
    return judge_parent(p, tasks.get(p), slots, child_interval, consumed=consumed)


__all__ = ["judge_parents"]
