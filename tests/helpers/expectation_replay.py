"""Replaying a generated history (``tests/helpers/expected_times.py``) through ``expect()``: what the catalog held at
an instant, the error of the expected completion, and when a deadline warning would have fired.

No peeking: the Nodes built for an instant hold each slot's record as it was then (none, running, failed,
running again, success) and, as history, the most recent ``WINDOW`` successes that had completed by then.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from airflow_leastaction.expectations.estimate import WINDOW, Node, expect
from tests.helpers.expected_times import DAY, HOUR, MINUTE, History, Run

QUARTER = dt.timedelta(minutes=15)
#: A warning this many minutes before the deadline or more leaves time to act.
AHEAD_MIN = 30
#: The columns of a warning row as the benchmark's JSON keeps it (one list per daily task and replayed day).
WARNING_COLUMNS = ("task", "day", "outside", "deadline_min", "actual_min", "missed", "lead_min", "median_lead_min",
                   "before_any_record", "own_p90_within", "incident")  # fmt: skip


def key_of(task: str, slot: dt.datetime) -> str:
    return f"{task}@{slot.isoformat()}"


def nearest_rank(values, p: float):
    """The p-quantile by nearest rank (``sorted[ceil(p*n) - 1]``), as the estimate computes its own."""
    ordered = sorted(values)
    return ordered[max(math.ceil(p * len(ordered)), 1) - 1]


@dataclass(frozen=True)
class Member:
    """One (task, slot) of a morning's graph: its key, its run as it happened and its parents' keys."""

    key: str
    task: str
    run: Run
    parents: tuple[str, ...]


def kind_of_day(slot: dt.datetime, hourly: bool) -> str:
    """Monday, another weekday, or the weekend: of the day a slot runs on (a daily slot's the next day)."""
    weekday = (slot + (HOUR if hourly else DAY)).weekday()
    return "monday" if weekday == 0 else "weekend" if weekday >= 5 else "weekday"


class Morning:
    """The catalog graph of one slot day: every daily task's slot and the parent slots they wait on.

    ``same_kind_of_day``: each node's history holds only runs of its own kind of day (:func:`kind_of_day`),
    a rule the estimate does not have, replayed here to show what it would change.
    """

    def __init__(self, history: History, day: int, *, same_kind_of_day: bool = False):
        self.history, self.day, self.same_kind_of_day = history, day, same_kind_of_day
        self.members: dict[str, Member] = {}
        self.targets = [self._add(task, history.daily_slot(task, day)) for task in history.daily_tasks()]
        self._histories: dict[tuple[str, int], tuple[tuple, tuple]] = {}
        self._nodes: dict[tuple, Node] = {}

    def _add(self, task: str, slot: dt.datetime) -> str:
        key = key_of(task, slot)
        if key not in self.members:
            pairs = self.history.parent_slots(task, slot)
            parents = tuple(self._add(p, s) for p, s in pairs)
            self.members[key] = Member(key, task, self.history.run_of(task, slot), parents)
        return key

    def closure(self, key: str) -> list[str]:
        """``key`` and every member it waits on, transitively."""
        seen, todo = {key}, [key]
        while todo:
            for p in self.members[todo.pop()].parents:
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        return list(seen)

    def _history(self, task: str, count: int, kind: str | None) -> tuple[tuple, tuple]:
        found = self._histories.get((task, count, kind))
        if found is None:
            if kind is None:
                runs = self.history.latest(task, count, WINDOW)
            else:
                hourly = self.history.tasks[task].hourly
                runs = [r for r in self.history.latest(task, count, count) if kind_of_day(r.slot, hourly) == kind]
                runs = runs[:WINDOW]
            found = (tuple(r.finished_at - r.slot for r in runs), tuple(r.finished_at - r.started_at for r in runs))
            self._histories[(task, count, kind)] = found
        return found

    def nodes_at(self, now: dt.datetime, keys=None) -> dict[str, Node]:
        """The Nodes the catalog would give at ``now`` (of ``keys``, default every member)."""
        counts: dict[str, int] = {}
        out = {}
        for key in self.members if keys is None else keys:
            m = self.members[key]
            count = counts.get(m.task)
            if count is None:
                count = counts[m.task] = self.history.successes_before(m.task, now)
            state, started = m.run.state_at(now)
            cache_key = (key, state, started, count)
            node = self._nodes.get(cache_key)
            if node is None:
                kind = kind_of_day(m.run.slot, self.history.tasks[m.task].hourly) if self.same_kind_of_day else None
                offsets, durations = self._history(m.task, count, kind)
                finished = m.run.finished_at if state == "success" else None
                node = Node(key, m.task, m.run.slot, state, started, finished, offsets, durations, 0, m.parents)
                self._nodes[cache_key] = node
            out[key] = node
        return out


# -- the error of the expected completion -------------------------------------------------------------
def horizon_errors(morning: Morning, horizons: tuple[dt.timedelta, ...]) -> list[dict]:
    """For every target of the morning and every horizon: expect() at (actual completion - horizon)."""
    rows = []
    for key in morning.targets:
        m = morning.members[key]
        keys = morning.closure(key)
        actual = m.run.finished_at
        for h in horizons:
            now = actual - h
            e = expect(morning.nodes_at(now, keys), now)[key]
            row = {"task": m.task, "day": morning.day, "horizon_min": h / MINUTE, "status": e.status}
            if e.median is not None:
                row["error_min"] = abs(e.median - actual) / MINUTE
                row["within_p90"] = actual <= e.p90
            rows.append(row)
    return rows


# -- deadlines and warnings ---------------------------------------------------------------------------
def deadline_offsets(history: History, first_day: int, weeks: int = 4, margin=QUARTER) -> dict[str, dt.timedelta]:
    """The deadline a user would set for each daily task, as an offset from its slot: the 90th percentile
    of its completions over the ``weeks`` weeks before ``first_day``, plus ``margin``, rounded up to the
    quarter hour of the clock."""
    out = {}
    for task in history.daily_tasks():
        runs = history.runs[task][max(0, first_day - 7 * weeks) : first_day]
        usual = nearest_rank([r.finished_at - r.slot for r in runs], 0.9) + margin
        slot = runs[0].slot
        at = slot + usual
        late = (at - at.replace(minute=0, second=0, microsecond=0)) % QUARTER
        out[task] = usual + (QUARTER - late if late else dt.timedelta(0))
    return out


def warnings(morning: Morning, deadlines: dict[str, dt.timedelta], step=MINUTE) -> list[dict]:
    """Each target's deadline, its actual completion, and the first instant its expected completion was past
    the deadline while it was not complete, read every ``step`` and on every record change of the morning's
    graph: by the p90 (``lead_min``, the warning) and, beside it, by the median (``median_lead_min``)."""
    runs = [m.run for m in morning.members.values()]
    targets = [morning.members[k] for k in morning.targets]
    due = {m.key: m.run.slot + deadlines[m.task] for m in targets}
    start = min(m.run.slot for m in targets) + DAY - HOUR
    end = max(max(m.run.finished_at for m in targets), max(due.values())) + step
    instants = {start + i * step for i in range(int((end - start) / step) + 1)}
    instants.update(t for r in runs for t in (r.first_started, r.failed_at, r.started_at, r.finished_at) if t)
    instants.update(d + dt.timedelta(seconds=1) for d in due.values())  # the anchor's instant, just after
    closures = {m.key: morning.closure(m.key) for m in targets}
    first: dict[str, dict[str, dt.datetime]] = {"p90": {}, "median": {}}
    own_within: dict[str, bool] = {}  # at the warning: the task's own p90 was within its deadline
    for now in sorted(t for t in instants if start <= t <= end):
        open_ = [m for m in targets if m.key not in first["median"] and now < m.run.finished_at]
        if not open_:
            continue
        keys = {k for m in open_ for k in closures[m.key]}  # what the open targets' expectations read
        nodes = morning.nodes_at(now, keys)
        found = expect(nodes, now)
        for m in open_:
            e = found[m.key]
            for which, at in (("p90", e.p90), ("median", e.median)):
                if at is not None and at > due[m.key] and m.key not in first[which]:
                    first[which][m.key] = now
                    if which == "p90":
                        own_within[m.key] = own_p90(nodes[m.key], now) <= due[m.key]
    rows = []
    for m in targets:
        lead = {w: None if m.key not in f else (due[m.key] - f[m.key]) / MINUTE for w, f in first.items()}
        began = min(morning.members[k].run.first_started for k in closures[m.key])
        rows.append(
            {
                "task": m.task,
                "day": morning.day,
                "outside": morning.history.tasks[m.task].dag is None,
                "deadline_min": (due[m.key] - m.run.slot) / MINUTE,
                "actual_min": (m.run.finished_at - m.run.slot) / MINUTE,
                "missed": m.run.finished_at > due[m.key],
                "lead_min": lead["p90"],
                "median_lead_min": lead["median"],
                # warned before any slot it waits on (itself included) had a record: from history alone
                "before_any_record": m.key in first["p90"] and first["p90"][m.key] < began,
                # its own history put its p90 within the deadline: the parents' estimate raised the warning
                "own_p90_within": own_within.get(m.key, False),
                "incident": _incident_upstream(morning, m.key),
            }
        )
    return rows


def own_p90(node: Node, now: dt.datetime) -> dt.datetime:
    """The node's own p90, without its parents: running, its start + p90 duration; waiting on parents, its slot +
    the median of its start offsets (offset - duration) + its p90 duration; else its slot + p90 offset."""
    if node.state == "running" and node.started_at is not None:
        return max(node.started_at + nearest_rank(node.durations, 0.9), now)
    if node.parents:
        starts = [o - d for o, d in zip(node.offsets, node.durations, strict=True)]
        return max(node.slot + nearest_rank(starts, 0.5) + nearest_rank(node.durations, 0.9), now)
    return max(node.slot + nearest_rank(node.offsets, 0.9), now)


def _incident_upstream(morning: Morning, key: str) -> str | None:
    """The incident of the day in the target's closure (itself included), if any."""
    found = sorted({morning.members[k].run.incident for k in morning.closure(key)} - {None})
    return "+".join(found) or None


# -- summaries of the replay's rows -------------------------------------------------------------------
def error_summary(samples: list[list]) -> dict:
    errs = [e for e, _, _ in samples if e is not None]
    return {
        "targets": len(samples),
        "no_estimate": sum(1 for _, _, status in samples if status == "no_estimate"),
        "median_min": nearest_rank(errs, 0.5) if errs else None,
        "p90_min": nearest_rank(errs, 0.9) if errs else None,
        "within_p90": sum(1 for _, within, _ in samples if within) / len(errs) if errs else None,
    }


def warning_summary(rows: list[list], lead: str = "lead_min") -> dict:
    """Missed deadlines, how many were warned ``AHEAD_MIN`` ahead, lead times, false warnings."""
    col = {c: i for i, c in enumerate(WARNING_COLUMNS)}
    missed = [r for r in rows if r[col["missed"]]]
    leads = [r[col[lead]] for r in missed if r[col[lead]] is not None]
    fired = [r for r in rows if r[col[lead]] is not None]
    false = [r for r in fired if not r[col["missed"]]]
    return {
        "targets": len(rows),
        "missed": len(missed),
        "warned_ahead": sum(1 for x in leads if x >= AHEAD_MIN),
        "not_warned": len(missed) - len(leads),
        "lead_median_min": nearest_rank(leads, 0.5) if leads else None,
        "lead_p10_min": nearest_rank(leads, 0.1) if leads else None,
        "warnings": len(fired),
        "false": len(false),
        "false_before_any_record": sum(1 for r in false if r[col["before_any_record"]]),
        "false_own_p90_within": sum(1 for r in false if r[col["own_p90_within"]]),
        "false_tasks": len({r[col["task"]] for r in false}),
        "false_tasks_most_mornings": _tasks_on_most_mornings(false, rows, col),
        "tasks": len({r[col["task"]] for r in rows}),
        "missed_after_incident": sum(1 for r in missed if r[col["incident"]]),
    }


def _tasks_on_most_mornings(false: list[list], rows: list[list], col: dict) -> int:
    """How many tasks were warned falsely on more than half the mornings replayed."""
    mornings = len({r[col["day"]] for r in rows})
    per_task: dict[str, int] = {}
    for r in false:
        per_task[r[col["task"]]] = per_task.get(r[col["task"]], 0) + 1
    return sum(1 for n in per_task.values() if n > mornings / 2)
