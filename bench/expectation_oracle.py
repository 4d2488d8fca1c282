"""The best any warning rule could do on the backtest's history: the chance of missing read from the generator
itself (``tests/helpers/expected_times.py``), not from a history.

The oracle knows what no estimate can: every task's true median and spread, the weekday's load, the scheduler's
and the queue's delays, and how often incidents happen. At an instant it sees what the catalog holds then
(each slot's record: none, running since, failed at, running again since, success at) and draws ``samples``
futures of the morning consistent with it, parents before children, each slot conditioned on what is already
known of it:

* an outside load or an hourly feed not reported yet lands after now (a late load two hours after its usual
  landing, with the chance that it is the day's late one given that it has not landed);
* a task not started starts once its parents have completed (in that future) and no sooner than now, and may
  be the day's failed task, run again 20 to 90 minutes after its failure;
* a running task's work lasts longer than it has run so far; a failed one is run again no sooner than now.

Left out, as too small to matter: that a running task may yet fail (one task a day in five, of about a hundred).
The chance of missing a deadline is the share of the futures in which the slot completes after it. Warning on
it at a threshold is the Bayes rule: the figures it reaches bound what a rule reading histories can reach on
the same mornings.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from statistics import NormalDist

from tests.helpers.expectation_replay import Morning
from tests.helpers.expected_times import (
    DAY,
    EPOCH,
    HOUR,
    LATE,
    LATE_LOAD_RATE,
    QUEUE_DELAY,
    RERUN_AFTER_MIN,
    RERUN_RATE,
    SCHEDULER_DELAY,
    WEEKDAY_LOAD,
)

_NORMAL = NormalDist()
_LATE_S = LATE.total_seconds()


def _seconds(moment: dt.datetime) -> float:
    return (moment - EPOCH).total_seconds()


class Oracle:
    """Futures of one morning (:class:`~tests.helpers.expectation_replay.Morning`) drawn from the generator."""

    def __init__(self, morning: Morning, *, samples: int = 200, seed: int = 0) -> None:
        self.morning, self.samples = morning, samples
        self.rnd = random.Random(seed)
        tasks = morning.history.tasks
        loads = [n for n, t in tasks.items() if t.dag is None and not t.hourly]
        with_children = {p for t in tasks.values() if t.dag for p in t.parents if tasks[p].dag}
        self.late_chance = LATE_LOAD_RATE / len(loads) if loads else 0.0
        self.rerun_chance = {n: RERUN_RATE / len(with_children) for n in with_children}

    # -- draws -------------------------------------------------------------------------------------
    def _above(self, scale: float, sigma: float, floor: float) -> float:
        """A draw of ``scale * exp(sigma * Z)`` given that it is above ``floor``."""
        if floor <= 0:
            return scale * math.exp(sigma * self.rnd.gauss(0.0, 1.0))
        low = _NORMAL.cdf(math.log(floor / scale) / sigma)
        if low >= 1.0 - 1e-12:
            return floor * (1.0 + 1e-9)
        u = low + (1.0 - low) * self.rnd.random()
        return max(scale * math.exp(sigma * _NORMAL.inv_cdf(min(max(u, 1e-12), 1.0 - 1e-12))), floor)

    @staticmethod
    def _still(scale: float, sigma: float, floor: float) -> float:
        """The chance that ``scale * exp(sigma * Z)`` is above ``floor``."""
        return 1.0 if floor <= 0 else 1.0 - _NORMAL.cdf(math.log(floor / scale) / sigma)

    # -- one instant -------------------------------------------------------------------------------
    def futures(self, now: dt.datetime, keys) -> dict[str, list[float] | float]:
        """Completion (seconds after the history's epoch) of each of ``keys``' slots and what they wait on, in
        each future: a number where it is known, else one per future."""
        now_s = _seconds(now)
        wanted = set()
        for key in keys:
            wanted.update(self.morning.closure(key))
        out: dict[str, list[float] | float] = {}
        for key, m in self.morning.members.items():  # parents come before their children
            if key in wanted:
                out[key] = self._member(m, now, now_s, out)
        return out

    def _member(self, m, now: dt.datetime, now_s: float, out: dict):
        run, t = m.run, self.morning.history.tasks[m.task]
        state, started = run.state_at(now)
        if state == "success":
            return _seconds(run.finished_at)
        end = run.slot + (HOUR if t.hourly else DAY)
        end_s = _seconds(end)
        scale = 60.0 * t.minutes * WEEKDAY_LOAD[end.weekday()]
        n, rnd = self.samples, self.rnd
        if t.dag is None:  # an outside load or feed, not reported yet: it lands after now
            floor = now_s - end_s
            late = 0.0 if t.hourly else self.late_chance
            w_late = late * self._still(scale, t.sigma, floor - _LATE_S)
            w_on_time = (1.0 - late) * self._still(scale, t.sigma, floor)
            share = w_late / (w_late + w_on_time) if w_late + w_on_time > 0 else 1.0
            draws = []
            for _ in range(n):
                if rnd.random() < share:
                    draws.append(end_s + _LATE_S + self._above(scale, t.sigma, floor - _LATE_S))
                else:
                    draws.append(end_s + self._above(scale, t.sigma, floor))
            return draws
        if state == "running":
            since = _seconds(started)
            return [since + self._above(scale, t.sigma, now_s - since) for _ in range(n)]
        if state == "failed":
            failed = _seconds(run.failed_at)
            low, high = (60.0 * x for x in RERUN_AFTER_MIN)
            low = max(low, now_s - failed)
            return [failed + rnd.uniform(low, max(low, high)) + self._above(scale, t.sigma, 0) for _ in range(n)]
        # not started: once its parents complete, no sooner than now
        parents = [out[p] for p in m.parents]
        rerun = self.rerun_chance.get(m.task, 0.0)
        draws = []
        for i in range(n):
            ready = end_s + rnd.lognormvariate(*SCHEDULER_DELAY)
            for p in parents:
                at = p if isinstance(p, float) else p[i]
                ready = at if at > ready else ready
            first = max(ready + rnd.lognormvariate(*QUEUE_DELAY), now_s)
            work = self._above(scale, t.sigma, 0)
            if rerun and rnd.random() < rerun:
                again = first + work * rnd.uniform(0.2, 1.0) + 60.0 * rnd.uniform(*RERUN_AFTER_MIN)
                draws.append(again + self._above(scale, t.sigma, 0))
            else:
                draws.append(first + work)
        return draws

    def chances(self, now: dt.datetime, deadlines: dict[str, dt.datetime]) -> dict[str, float]:
        """For each key of ``deadlines``, the share of the futures in which its slot completes after it."""
        drawn = self.futures(now, list(deadlines))
        out = {}
        for key, due in deadlines.items():
            at, due_s = drawn[key], _seconds(due)
            out[key] = float(at > due_s) if isinstance(at, float) else sum(1 for a in at if a > due_s) / len(at)
        return out
