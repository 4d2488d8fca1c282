"""Expected completion times of catalog tasks: when will this slot be done, and what does it wait on?

Pure logic, no Airflow import, no database. The store builds one :class:`Node` per (task, slot) of the
catalog graph that matters (see :mod:`airflow_leastaction.expectations.reads`); :func:`expect` reads them
all in one memoised pass.

* A success is complete: its median and p90 are its ``finished_at``.
* Its own estimate: a running slot completes at ``started_at`` + the median (p90) of its recent
  durations; a slot not started of a node without parents at ``slot`` + the median (p90) of its recent
  offsets (``finished_at - slot``). A node that waits on parents is not read from its offsets (they carry
  its parents' late days): its own estimate is its usual start, ``slot`` + the median of its start offsets
  (``offset - duration`` of each run), + its median (p90) duration. Never before ``now``.
* While it waits on parents (not started, and its ``mode`` not yet met by complete parents), it cannot
  start before its *deciding* parent completes: ALL the latest parent, ANY the earliest, N the N-th
  earliest (complete parents first, then by median, then p90, then key; a parent without an estimate
  counts as completing last). From the parents it completes at the deciding parent's median + its median
  duration; its p90 adds to that one spread for the way: the square root of the sum of the squares of the
  parent's spread (p90 - median) and its own (p90 - median duration), in whole microseconds rounded down.
  The parent's spread holds its own parents' the same way, so a chain counts each step's spread once
  instead of stacking one p90 per step. A ``cap`` (a fallback's deadline) bounds that start: the parent's
  time or the cap, whichever is earlier (and its p90 likewise, which bounds the parent's spread).
* The estimate is the later of the two (median and p90 each); when the parents' median is later they
  decide, and the critical path is the deciding parent followed by that parent's own critical path. Once
  the mode is met, it is done no sooner than the parent that met it (ALL: the last to complete) plus its
  median (p90) duration, nor than its own estimate; the critical path is empty.
* No estimate: fewer than :data:`MIN_RUNS` runs; a deciding parent without an estimate (a key missing
  from the nodes is one) and no cap; a node waiting on parents in a cycle.

Percentiles are by nearest rank: the p-quantile of ``n`` sorted values is ``sorted[ceil(p*n) - 1]``.
Reasons state times of day in the zone :func:`expect` is given (UTC by default), with the month and day
when not on ``now``'s day.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import isqrt
from operator import sub

MIN_RUNS = 5  # fewer successful runs in the history window: "no estimate: N runs"
WINDOW = 30  # the most recent successful runs used
MEDIAN = Fraction(1, 2)
P90 = Fraction(9, 10)
_ZERO = dt.timedelta(0)
_MICRO = dt.timedelta(microseconds=1)
_NEVER = dt.datetime.max.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class Usual:
    """What a history says of a task's usual day, sorted out once per history: the median and p90 of its
    offsets (``finished_at - slot``) and of its durations, and the median of its start offsets (``offset -
    duration`` of each run): when it starts by its schedule."""

    offset: tuple[dt.timedelta, dt.timedelta]
    duration: tuple[dt.timedelta, dt.timedelta]
    start: dt.timedelta


@dataclass(frozen=True)
class Node:
    """One (task, slot) of the catalog graph, with its record and its history."""

    key: str  # unique: f"{task}@{slot.isoformat()}"
    task: str  # the catalog task's display name
    slot: dt.datetime  # aware UTC, interval start
    state: str | None  # this slot's record: None (none), "running", "success", "failed", ...
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    offsets: tuple[dt.timedelta, ...] = ()  # history: finished_at - slot of recent successes
    durations: tuple[dt.timedelta, ...] = ()  # history: finished_at - started_at of those runs
    skewed: int = 0  # history runs left out: completed before their slot (clock skew)
    parents: tuple[str, ...] = ()  # keys of the parent nodes this slot waits on
    mode: str | int = "ALL"  # "ALL", "ANY", or N (int): how many parents must complete
    cap: dt.datetime | None = None  # a fallback's deadline: it is admitted by then at the latest
    weekdays: tuple[int, ...] = ()  # history: the UTC weekday each run finished on (Monday 0), as ``offsets``
    #: The history's quantiles, when its reader worked them out once for every slot of the task
    #: (:func:`usual_of` of ``offsets`` and ``durations``); otherwise the pass does.
    usual: Usual | None = None


@dataclass(frozen=True)
class Expectation:
    """When a node is expected to be complete, and why."""

    key: str
    task: str
    slot: dt.datetime
    status: str  # "complete" | "running" | "waiting" | "no_estimate"
    median: dt.datetime | None  # expected completion (complete: its finished_at)
    p90: dt.datetime | None
    critical_path: tuple[str, ...]  # the not-yet-complete parent that decides it, then its own, ...
    reason: str  # one sentence a person reads
    runs: int  # successful runs the estimate used
    skewed: int  # runs left out for clock skew


def nearest_rank(values: tuple[dt.timedelta, ...], p: Fraction) -> dt.timedelta:
    """The p-quantile of ``values`` by nearest rank; zero for no values."""
    return _ranked(sorted(values), p)


def _ranked(ordered: list[dt.timedelta], p: Fraction) -> dt.timedelta:
    if not ordered:
        return _ZERO
    rank = -(-p.numerator * len(ordered) // p.denominator)  # ceil(p * n), in integers
    return ordered[max(rank, 1) - 1]


def median_and_p90(values: tuple[dt.timedelta, ...]) -> tuple[dt.timedelta, dt.timedelta]:
    """:func:`nearest_rank` at :data:`MEDIAN` and :data:`P90`, sorting once (ranks ``ceil(n/2)``, ``ceil(9n/10)``)."""
    n = len(values)
    if not n:
        return _ZERO, _ZERO
    ordered = sorted(values)
    return ordered[(n + 1) // 2 - 1], ordered[-(-9 * n // 10) - 1]


def usual_of(offsets: tuple[dt.timedelta, ...], durations: tuple[dt.timedelta, ...]) -> Usual:
    """The :class:`Usual` of a history."""
    return Usual(
        median_and_p90(offsets), median_and_p90(durations), _ranked(sorted(map(sub, offsets, durations)), MEDIAN)
    )


def combined(first: dt.timedelta, second: dt.timedelta) -> dt.timedelta:
    """Two spreads (p90 - median) of steps in a row combined as independent ones: the square root of the sum
    of their squares, in whole microseconds (rounded down)."""
    return dt.timedelta(microseconds=isqrt((first // _MICRO) ** 2 + (second // _MICRO) ** 2))


def task_of_key(key: str) -> str:
    """The task name of a node key (``task@slot``)."""
    return key.rpartition("@")[0] or key


def clock(moment: dt.datetime, zone: dt.tzinfo = dt.UTC, now: dt.datetime | None = None) -> str:
    """``05:40`` in ``zone``; ``03-05 05:40`` when that is not ``now``'s day there."""
    local = moment.astimezone(zone)
    text = f"{local.hour:02d}:{local.minute:02d}"
    if now is not None and local.date() != now.astimezone(zone).date():
        text = f"{local.month:02d}-{local.day:02d} {text}"
    return text


def runs_wording(runs: int) -> str:
    return f"{runs} run" if runs == 1 else f"{runs} runs"


def is_running(node: Node) -> bool:
    return node.state == "running" and node.started_at is not None


def waits_on_parents(node: Node) -> bool:
    """Whether the node may consult its parents: not complete, not started, with an estimate of its own."""
    return node.state != "success" and not is_running(node) and len(node.offsets) >= MIN_RUNS and bool(node.parents)


def needed(node: Node) -> int:
    """How many parents must complete before the node may start (a node without parents waits on none)."""
    if not node.parents:
        return 0
    if node.mode == "ANY":
        return 1
    if isinstance(node.mode, int) and not isinstance(node.mode, bool):
        return max(node.mode, 0)
    return len(node.parents)


def parent_order(key: str, found: Expectation | None):
    """Sort key of parents: complete first, then estimated, then without an estimate; by time, then key."""
    if found is None or found.median is None:
        return (2, _NEVER, _NEVER, key)
    return (0 if found.status == "complete" else 1, found.median, found.p90, key)


class _Pass:
    """One memoised pass over the nodes: each judged once, after its parents; cycles found on the way."""

    def __init__(self, nodes: Mapping[str, Node], now: dt.datetime, zone: dt.tzinfo) -> None:
        self.nodes = nodes
        self.now = now
        self.zone = zone
        self.done: dict[str, Expectation] = {}
        self.edges_of: dict[str, tuple[str, ...]] = {}
        # The slots of one task share its history (the same tuples): its quantiles are sorted out once.
        self.usual_of: dict[tuple[int, int], Usual] = {}

    def clock(self, moment: dt.datetime) -> str:
        return clock(moment, self.zone, self.now)

    def usually(self, usual: dt.datetime, node: Node) -> str:
        """A node's own words: "usually done 05:40, not started" (worded only where a reason uses it)."""
        return f"usually done {self.clock(usual)}, {node.state or 'not started'}"

    def usual(self, node: Node) -> Usual:
        """The node's :class:`Usual`: as its history's reader worked it out, else sorted out here once per history."""
        if node.usual is not None:
            return node.usual
        shared = (id(node.offsets), id(node.durations))
        found = self.usual_of.get(shared)
        if found is None:
            found = self.usual_of[shared] = usual_of(node.offsets, node.durations)
        return found

    def deciding(self, parents: tuple[str, ...], need: int) -> str:
        """The parent whose completion lets ``need`` of ``parents`` be complete (ALL: the last; ANY: the first)."""
        if len(parents) == 1:  # most gates wait on one parent
            return parents[0]
        done = self.done.get
        if need == len(parents):
            return max(parents, key=lambda k: parent_order(k, done(k)))
        if need == 1:
            return min(parents, key=lambda k: parent_order(k, done(k)))
        return sorted(parents, key=lambda k: parent_order(k, done(k)))[need - 1]

    def edges(self, key: str) -> tuple[str, ...]:
        found = self.edges_of.get(key)
        if found is None:
            node = self.nodes[key]
            found = tuple(p for p in node.parents if p in self.nodes) if waits_on_parents(node) else ()
            self.edges_of[key] = found
        return found

    def run(self) -> dict[str, Expectation]:
        """Tarjan's strongly connected components, iterative; each component is judged as it closes, after
        every component it reaches (its parents), so every node is judged once."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        for root in self.nodes:
            if root in index:
                continue
            work = [(root, iter(self.edges(root)))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            while work:
                key, parents = work[-1]
                parent = next(parents, None)
                if parent is None:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[key])
                    if low[key] == index[key]:
                        self.close(key, stack, on_stack)
                elif parent not in index:
                    index[parent] = low[parent] = len(index)
                    stack.append(parent)
                    on_stack.add(parent)
                    work.append((parent, iter(self.edges(parent))))
                elif parent in on_stack:
                    low[key] = min(low[key], index[parent])
        return self.done

    def close(self, key: str, stack: list[str], on_stack: set[str]) -> None:
        """Judge the component whose root is ``key``: the top of ``stack`` down to ``key``."""
        member = stack.pop()
        on_stack.discard(member)
        if member == key and key not in self.edges(key):
            self.done[key] = self.one(self.nodes[key])
            return
        while True:
            self.done[member] = self.cycle(self.nodes[member])
            if member == key:
                return
            member = stack.pop()
            on_stack.discard(member)

    def make(self, node: Node, status: str, median, p90, path=(), reason="") -> Expectation:
        return Expectation(
            key=node.key,
            task=node.task,
            slot=node.slot,
            status=status,
            median=median,
            p90=p90,
            critical_path=tuple(path),
            reason=reason,
            runs=len(node.offsets),
            skewed=node.skewed,
        )

    def parent_words(self, node: Node | None, found: Expectation | None) -> str:
        """How a deciding parent stands: "usually done 04:55, not started"."""
        if node is None or found is None:
            return "not in the catalog"
        usual = node.slot + self.usual(node).offset[0] if node.offsets else None
        state = f"running since {self.clock(node.started_at)}" if is_running(node) else (node.state or "not started")
        return f"usually done {self.clock(usual)}, {state}" if usual else state

    def cycle(self, node: Node) -> Expectation:
        return self.make(node, "no_estimate", None, None, reason="no estimate: cycle")

    def one(self, node: Node) -> Expectation:
        if node.state == "success":
            at = node.finished_at or node.started_at or node.slot
            return self.make(node, "complete", at, at, reason=f"done at {self.clock(at)}")
        runs = len(node.offsets)
        if runs < MIN_RUNS:
            skew = f" ({node.skewed} left out for clock skew)" if node.skewed else ""
            return self.make(node, "no_estimate", None, None, reason=f"no estimate: {runs_wording(runs)}{skew}")
        known = self.usual(node)
        med_duration, p90_duration = known.duration
        if is_running(node):
            median = max(node.started_at + med_duration, self.now)
            p90 = max(node.started_at + p90_duration, self.now)
            return self.make(node, "running", median, p90, reason=f"running since {self.clock(node.started_at)}")
        need = needed(node)
        if need == 0:
            med_offset, p90_offset = known.offset
            usual = node.slot + med_offset
            own = f"usually done {self.clock(usual)}, {node.state or 'not started'}"
            return self.make(node, "waiting", max(usual, self.now), max(node.slot + p90_offset, self.now), reason=own)
        # Waiting on parents: its own floor is its usual start by its history (the parents' lateness left out)
        # plus its duration; the parents' estimate, the deciding parent's completion plus its duration.
        usual = node.slot + known.start + med_duration
        median = max(usual, self.now)
        p90 = max(usual - med_duration + p90_duration, self.now)
        if need > len(node.parents):
            words = f"no estimate: waits on {need} parents, has {len(node.parents)}"
            return self.make(node, "no_estimate", None, None, reason=words)
        deciding = self.deciding(node.parents, need)
        parent = self.done.get(deciding)
        if parent is not None and parent.status == "complete":
            # Its parents are done: it is done no sooner than the one that let it start, plus its duration.
            ready = parent.median
            if ready + med_duration > median:
                own = f"{task_of_key(deciding)} done at {self.clock(ready)}, {node.state or 'not started'}"
            else:
                own = self.usually(usual, node)
            return self.make(
                node, "waiting", max(median, ready + med_duration), max(p90, ready + p90_duration), reason=own
            )
        waiting_on = f"waiting on {task_of_key(deciding)}"
        if parent is None or parent.median is None:
            if node.cap is None:
                detail = parent.reason if parent is not None else "not in the catalog"
                return self.make(node, "no_estimate", None, None, reason=f"no estimate: {waiting_on} ({detail})")
            start, spread = node.cap, _ZERO
        else:
            start = parent.median if node.cap is None else min(parent.median, node.cap)
            spread = (parent.p90 if node.cap is None else min(parent.p90, node.cap)) - start
        from_median = start + med_duration
        from_p90 = from_median + combined(spread, p90_duration - med_duration)
        p90 = max(p90, from_p90)
        if from_median <= median:
            return self.make(node, "waiting", median, p90, reason=self.usually(usual, node))
        if parent is not None and parent.median is not None and start == parent.median:
            words = f"{waiting_on} ({self.parent_words(self.nodes.get(deciding), parent)})"
            return self.make(node, "waiting", from_median, p90, (deciding, *parent.critical_path), words)
        return self.make(
            node, "waiting", from_median, p90, reason=f"{waiting_on}; its fallback admits it at {self.clock(node.cap)}"
        )


def expect(nodes: Mapping[str, Node], now: dt.datetime, *, zone: dt.tzinfo = dt.UTC) -> dict[str, Expectation]:
    """The expectation of every node, by key (see the module's docstring for the rule); reasons word times
    of day in ``zone``."""
    return _Pass(nodes, now, zone).run()
