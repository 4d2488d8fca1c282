"""The chance that a slot completes after its deadline, read from the runs of its history that are still
possible now. Pure logic, no Airflow import, no database.

A p90 past a deadline is a one-in-ten risk: it fires on many mornings that then make it. The warning reads
instead how likely a miss is, from the same history the estimate reads (:mod:`.estimate`):

* **Kind of day.** Monday, Tuesday to Friday, or the weekend (by the UTC weekday a run finished on; the
  slot's kind is that of its slot + its median offset). Each run of the history is scaled by the ratio of
  the median of the slot's kind's runs to the median of the runs of its *own* kind, so a Monday run read
  for a Tuesday is brought to Tuesday's pace and a Tuesday run read for a Tuesday is left as it is. A kind
  with fewer than :data:`MIN_KIND_RUNS` runs is not scaled to nor from; a history without weekdays is not
  scaled.
* **What is still possible.** A complete slot finished at its ``finished_at``. A running one finishes at
  ``started_at`` + each run's duration longer than it has run so far. One not started finishes at
  ``slot`` + each run's offset (``finished_at - slot``) later than now, and, once the parents it needs are
  complete, no sooner than the last of them + that run's duration. When fewer than :data:`MIN_POSSIBLE`
  runs are later than now, its :data:`MIN_POSSIBLE` latest runs are read, none earlier than
  :data:`OVERDUE` after now: a slot later than all but a few runs of its history (one of them a late
  morning of an incident) is not read from those few alone. While it waits on a parent that is not
  complete (the deciding one, as :mod:`.estimate` orders them: ALL the latest, ANY the earliest), each of
  its runs, by rank, is matched with that parent's possible completion of the same rank: a late parent
  makes a late child.
* **The chance of missing** is the share of its possible completions after the deadline.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from airflow_leastaction.expectations.estimate import Expectation, Node, is_running, needed, parent_order

#: Of each weekday (Monday 0 ... Sunday 6), its kind of day.
KINDS = ("monday", "weekday", "weekday", "weekday", "weekday", "weekend", "weekend")
MIN_KIND_RUNS = 3  # fewer runs of a kind of day in the history: that kind is not scaled to nor from
#: A run of its history a slot is already later than is read as finishing this long after now.
OVERDUE = dt.timedelta(minutes=10)
#: The fewest runs a chance is read from: a slot later than all but a few runs of its history is read from
#: its latest runs, those it is already later than finishing :data:`OVERDUE` after now, so that one late
#: morning of its history (an incident) is not taken for a certainty.
MIN_POSSIBLE = 10
_MICRO = dt.timedelta(microseconds=1)


def kind_of_day(moment: dt.datetime) -> str:
    """Monday, weekday or weekend: of an instant's UTC weekday."""
    return KINDS[moment.astimezone(dt.UTC).weekday()]


def _median(values: list[dt.timedelta]) -> dt.timedelta:
    ordered = sorted(values)
    return ordered[(len(ordered) + 1) // 2 - 1]


def scaled(values: tuple[dt.timedelta, ...], weekdays: tuple[int, ...], kind: str | None) -> list[dt.timedelta]:
    """``values`` (one per run), each scaled from its run's kind of day to ``kind`` (see the module)."""
    if kind is None or not values or len(weekdays) != len(values):
        return list(values)
    by_kind: dict[str, list[dt.timedelta]] = {}
    for value, day in zip(values, weekdays, strict=True):
        by_kind.setdefault(KINDS[day], []).append(value)
    medians = {k: _median(v) // _MICRO for k, v in by_kind.items() if len(v) >= MIN_KIND_RUNS}
    to = medians.get(kind)
    if not to:
        return list(values)
    out = []
    for value, day in zip(values, weekdays, strict=True):
        since = medians.get(KINDS[day])
        out.append(value if not since or since == to else dt.timedelta(microseconds=(value // _MICRO) * to // since))
    return out


def _kind(node: Node) -> str | None:
    if not node.weekdays or not node.offsets:
        return None
    return kind_of_day(node.slot + _median(list(node.offsets)))


def _still_possible(runs: list[tuple[dt.timedelta, dt.timedelta]], since: dt.datetime, now: dt.datetime) -> list:
    """Of runs (value after ``since``, duration), as (completion, duration): those completing after now, or
    at least the :data:`MIN_POSSIBLE` latest, those before now completing :data:`OVERDUE` after it."""
    runs = sorted(runs)
    later = [(since + v, d) for v, d in runs if since + v > now]
    if len(later) >= min(MIN_POSSIBLE, len(runs)):
        return later
    return [(max(since + v, now + OVERDUE), d) for v, d in runs[-MIN_POSSIBLE:]]


def _matched(own: list[tuple[dt.datetime, dt.timedelta]], parent: list[dt.datetime], now) -> list:
    """Each own run (completion, duration), by rank, against the parent's completion of the same rank."""
    own = sorted(own)
    k, m = len(own), len(parent)
    return [max(at, parent[r * m // k] + d, now) for r, (at, d) in enumerate(own)]


class _Chances:
    def __init__(self, nodes: Mapping[str, Node], found: Mapping[str, Expectation], now: dt.datetime) -> None:
        self.nodes, self.found, self.now = nodes, found, now
        self.samples: dict[str, list[dt.datetime] | None] = {}

    def of(self, key: str) -> list[dt.datetime] | None:
        """The node's possible completions, sorted (None: no estimate); its parents' first, without recursion."""
        todo = [key]
        while todo:
            top = todo[-1]
            if top in self.samples:
                todo.pop()
                continue
            deciding = self._deciding(self.nodes[top])
            if deciding is not None and deciding not in self.samples:
                todo.append(deciding)
                continue
            todo.pop()
            self.samples[top] = self._own(self.nodes[top], deciding)
        return self.samples[key]

    def _deciding(self, node: Node) -> str | None:
        """The parent not complete it waits on (None: none, or it has started, or no estimate)."""
        e = self.found.get(node.key)
        if e is None or e.status != "waiting" or not node.parents:
            return None
        need = needed(node)
        present = [p for p in node.parents if p in self.nodes and p in self.found]
        if len(present) < need or need == 0:
            return None
        ranked = sorted(present, key=lambda k: parent_order(k, self.found.get(k)))
        deciding = ranked[need - 1]
        parent = self.found[deciding]
        return None if parent.status == "complete" or parent.median is None else deciding

    def _ready(self, node: Node) -> dt.datetime | None:
        """When the parents it needs completed, if they have."""
        need = needed(node)
        done = sorted(
            self.found[p].median
            for p in node.parents
            if p in self.found and self.found[p].status == "complete" and self.found[p].median is not None
        )
        return done[need - 1] if need and len(done) >= need else None

    def _own(self, node: Node, deciding: str | None) -> list[dt.datetime] | None:
        e = self.found.get(node.key)
        if e is None or e.median is None:
            return None
        now = self.now
        if e.status == "complete":
            return [e.median]
        kind = _kind(node)
        offsets = scaled(node.offsets, node.weekdays, kind)
        paired = len(node.durations) == len(node.offsets)
        durations = scaled(node.durations, node.weekdays if paired else (), kind)
        if is_running(node):
            return sorted(at for at, _ in _still_possible([(d, d) for d in durations], node.started_at, now))
        if not paired:
            durations = [_median(durations)] * len(offsets) if durations else [dt.timedelta(0)] * len(offsets)
        own = _still_possible(list(zip(offsets, durations, strict=True)), node.slot, now)
        if not own:
            return None
        if deciding is not None and self.samples.get(deciding):
            return sorted(_matched(own, self.samples[deciding], now))
        ready = self._ready(node) if node.parents else None
        if ready is not None:
            return sorted(max(at, ready + d) for at, d in own)
        return sorted(at for at, _ in own)


def possible_completions(
    nodes: Mapping[str, Node], found: Mapping[str, Expectation], keys, now: dt.datetime
) -> dict[str, list[dt.datetime] | None]:
    """For each of ``keys``, its possible completions, sorted (see the module; None: no estimate), given the
    nodes and what :func:`~.estimate.expect` found for them at ``now``."""
    chances = _Chances(nodes, found, now)
    return {key: chances.of(key) if key in nodes else None for key in keys}


def chance_after(samples: list[dt.datetime] | None, deadline: dt.datetime) -> float | None:
    """The share of ``samples`` after ``deadline`` (None: no estimate)."""
    return None if not samples else sum(1 for s in samples if s > deadline) / len(samples)


def miss_chances(
    nodes: Mapping[str, Node],
    found: Mapping[str, Expectation],
    deadlines: Mapping[str, dt.datetime],
    now: dt.datetime,
) -> dict[str, float | None]:
    """For each key of ``deadlines``, the chance its slot completes after that deadline (see the module),
    given the nodes and what :func:`~.estimate.expect` found for them at ``now``; None: no estimate."""
    samples = possible_completions(nodes, found, deadlines, now)
    return {key: chance_after(samples[key], deadline) for key, deadline in deadlines.items()}


__all__ = [
    "KINDS",
    "MIN_KIND_RUNS",
    "OVERDUE",
    "chance_after",
    "kind_of_day",
    "miss_chances",
    "possible_completions",
    "scaled",
]
