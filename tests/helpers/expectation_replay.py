"""Replaying a generated history (``tests/helpers/expected_times.py``) through ``expect()``: what the catalog held at
an instant, the error of the expected completion, and when a deadline warning would have fired.

No peeking: the Nodes built for an instant hold each slot's record as it was then (none, running, failed,
running again, success) and, as history, the most recent ``WINDOW`` successes that had completed by then.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from airflow_leastaction.expectations.estimate import WINDOW, Node, expect, usual_of
from airflow_leastaction.expectations.miss import chance_after, possible_completions
from airflow_leastaction.gating.deadline_warning import WarningRule
from tests.helpers.expected_times import DAY, HOUR, MINUTE, History, Run

QUARTER = dt.timedelta(minutes=15)
#: A warning this many minutes before the deadline or more leaves time to act.
AHEAD_MIN = 30
#: The columns of a warning row as the benchmark's JSON keeps it (one list per daily task and replayed day).
#: The chances of missing at which the chance rule is replayed (``chance50_lead_min``: the first instant the chance
#: of missing was 0.5 or more).
CHANCES = (0.3, 0.5, 0.7)
WARNING_COLUMNS = ("task", "day", "outside", "deadline_min", "actual_min", "missed", "lead_min", "median_lead_min",
                   "before_any_record", "own_p90_within", "incident",
                   *(f"chance{round(c * 100)}_lead_min" for c in CHANCES), "gate_lead_min")  # fmt: skip
#: The rule a gate warns by, with the deployment's defaults (``gate_lead_min``).
GATE_RULE = WarningRule()


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
        self._histories: dict[tuple[str, int, str | None], tuple] = {}
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

    def _history(self, task: str, count: int, kind: str | None) -> tuple:
        """Offsets, durations, weekdays and their quantiles (as the catalog's history reader gives them) of the
        task's history once its first ``count`` successes had finished."""
        found = self._histories.get((task, count, kind))
        if found is None:
            if kind is None:
                runs = self.history.latest(task, count, WINDOW)
            else:
                hourly = self.history.tasks[task].hourly
                runs = [r for r in self.history.latest(task, count, count) if kind_of_day(r.slot, hourly) == kind]
                runs = runs[:WINDOW]
            offsets = tuple(r.finished_at - r.slot for r in runs)
            durations = tuple(r.finished_at - r.started_at for r in runs)
            weekdays = tuple(r.finished_at.astimezone(dt.UTC).weekday() for r in runs)
            found = (offsets, durations, weekdays, usual_of(offsets, durations))
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
                offsets, durations, weekdays, usual = self._history(m.task, count, kind)
                finished = m.run.finished_at if state == "success" else None
                node = Node(key, m.task, m.run.slot, state, started, finished, offsets, durations, 0, m.parents,
                            weekdays=weekdays, usual=usual)  # fmt: skip
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
    """:func:`warnings_for` of one set of deadlines."""
    return warnings_for(morning, {"": deadlines}, step)[""]


def warnings_for(morning: Morning, deadline_sets: dict[str, dict[str, dt.timedelta]], step=MINUTE) -> dict:
    """For each named set of deadlines, each target's deadline, its actual completion, and the first instant
    each rule judged it would miss while it was not complete, read every ``step`` and on every record change
    of the morning's graph: the expected p90 past the deadline (``lead_min``), the median past it
    (``median_lead_min``), the chance of missing at least each of :data:`CHANCES` (``chance50_lead_min``...),
    and the gate's own rule (:data:`GATE_RULE`: a near-certain miss at once, a likely one at its last call,
    none within its lead; ``gate_lead_min``). The sets share one replay: the expectations read at an instant
    do not depend on the deadline."""
    runs = [m.run for m in morning.members.values()]
    targets = [morning.members[k] for k in morning.targets]
    dues = {name: {m.key: m.run.slot + d[m.task] for m in targets} for name, d in deadline_sets.items()}
    start = min(m.run.slot for m in targets) + DAY - HOUR
    last_due = max(t for due in dues.values() for t in due.values())
    end = max(max(m.run.finished_at for m in targets), last_due) + step
    instants = {start + i * step for i in range(int((end - start) / step) + 1)}
    instants.update(t for r in runs for t in (r.first_started, r.failed_at, r.started_at, r.finished_at) if t)
    for due in dues.values():  # the anchor's instant, just after
        instants.update(d + dt.timedelta(seconds=1) for d in due.values())
    closures = {m.key: morning.closure(m.key) for m in targets}
    rules = ("p90", "median", *CHANCES, "gate")
    first = {name: {rule: {} for rule in rules} for name in dues}
    own_within: dict[str, dict[str, bool]] = {name: {} for name in dues}  # at the p90 warning: own p90 within
    previous = None  # the replay's previous look, as a gate's (one a minute at least)
    for now in sorted(t for t in instants if start <= t <= end):
        open_ = [m for m in targets if now < m.run.finished_at
                 and any(m.key not in f[r] for f in first.values() for r in rules)]  # fmt: skip
        if not open_:
            continue
        keys = {k for m in open_ for k in closures[m.key]}  # what the open targets' expectations read
        nodes = morning.nodes_at(now, keys)
        found = expect(nodes, now)
        possible = possible_completions(nodes, found, [m.key for m in open_], now)
        for name, due in dues.items():
            for m in open_:
                e, f, d = found[m.key], first[name], due[m.key]
                chance = chance_after(possible[m.key], d)
                hits = [("p90", e.p90 is not None and e.p90 > d), ("median", e.median is not None and e.median > d)]
                hits += [(c, chance is not None and chance >= c) for c in CHANCES]
                bar = GATE_RULE.bar(d, now, previous)
                hits.append(("gate", chance is not None and bar is not None and chance >= bar))
                for rule, hit in hits:
                    if hit and m.key not in f[rule]:
                        f[rule][m.key] = now
                        if rule == "p90":
                            own_within[name][m.key] = own_p90(nodes[m.key], now) <= d
        previous = now
    return {name: _warning_rows(morning, targets, closures, dues[name], first[name], own_within[name]) for name in dues}


def _warning_rows(morning, targets, closures, due, first, own_within) -> list[dict]:
    rows = []
    for m in targets:
        lead = {w: None if m.key not in f else (due[m.key] - f[m.key]) / MINUTE for w, f in first.items()}
        missed = m.run.finished_at > due[m.key]
        began = min(morning.members[k].run.first_started for k in closures[m.key])
        rows.append(
            {
                "task": m.task,
                "day": morning.day,
                "outside": morning.history.tasks[m.task].dag is None,
                "deadline_min": (due[m.key] - m.run.slot) / MINUTE,
                "actual_min": (m.run.finished_at - m.run.slot) / MINUTE,
                "missed": missed,
                "lead_min": lead["p90"],
                "median_lead_min": lead["median"],
                # warned before any slot it waits on (itself included) had a record: from history alone
                "before_any_record": m.key in first["p90"] and first["p90"][m.key] < began,
                # its own history put its p90 within the deadline: the parents' estimate raised the warning
                "own_p90_within": own_within.get(m.key, False),
                "incident": _incident_upstream(morning, m.key),
                **{f"chance{round(c * 100)}_lead_min": lead[c] for c in CHANCES},
                # within its lead a gate leaves a deadline to the DAG's DeadlineAlert: lead 0, as every rule's
                # missed deadline is warned at the latest just after it passes
                "gate_lead_min": lead["gate"] if lead["gate"] is not None or not missed else 0.0,
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


#: Minutes of slack a deadline that was met was met by (its deadline minus its completion), as buckets.
SLACK_BUCKETS = ((0, 15), (15, 30), (30, 60), (60, None))


def false_warning_classes(rows: list[list], lead: str = "lead_min") -> dict:
    """The false warnings of a rule, counted by the slack the deadline was then met by, by the kind of day
    the run fell on, and by cause: an incident upstream (a load two hours late, a task run again); the
    estimate through the parents (the task's own history put its p90 within the deadline; p90 rule only);
    else the task's own history (its jitter and duration)."""
    from tests.helpers.expected_times import EPOCH

    col = {c: i for i, c in enumerate(WARNING_COLUMNS)}
    false = [r for r in rows if r[col[lead]] is not None and not r[col["missed"]]]
    slack, kind, cause = {}, {"monday": 0, "weekday": 0, "weekend": 0}, {}
    for r in false:
        met_by = r[col["deadline_min"]] - r[col["actual_min"]]
        low, high = next((lo, hi) for lo, hi in SLACK_BUCKETS if met_by >= lo and (hi is None or met_by < hi))
        label = f"{low}+" if high is None else f"{low}-{high}"
        slack[label] = slack.get(label, 0) + 1
        kind[kind_of_day(EPOCH + r[col["day"]] * DAY, hourly=False)] += 1
        why = "incident" if r[col["incident"]] else "parents" if r[col["own_p90_within"]] else "own history"
        cause[why] = cause.get(why, 0) + 1
    return {"false": len(false), "slack_min": slack, "kind_of_day": kind, "cause": cause}
