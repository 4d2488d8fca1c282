"""A generated history of catalog tasks, for the expected-times backtest (bench/bench_expectations.py) and its tests.

Seeded and deterministic: the same arguments give the same history, run for run.

* The world (:func:`world`): outside systems (daily loads reported at completion, and hourly feeds) and
  ``dags`` DAGs of ``tasks_per_dag`` tasks each, laid out in layers (chains where a layer holds one task,
  fans where it holds several); every dependency is declared in the catalog, as a gate or a sensor
  declares its parents. A DAG's first layer waits on outside loads, on a task of a DAG scheduled earlier,
  or on every hourly slot of an outside feed inside its interval (``coverage="interval"``).
* The history (:func:`simulate`): ``days`` slots of every daily task and 24 of every hourly feed. A DAG run
  starts at its interval's end; a task starts once its parents have completed (ALL: the last of them, ANY:
  the first) and runs for a log-normal duration around its own median. The run's weekday scales the work:
  weekend runs are shorter (outside loads land earlier), Monday's heavier.
* Incidents: on some days an outside load lands two hours late; on others a DAG task fails part way and
  is run again by hand 20 to 90 minutes later.

A slot's record follows Airflow's listener and the outside reports: none before the task starts; running
(``started_at``); failed; running again; success (``finished_at``). An outside load is reported once, at
completion, so its record starts and finishes at that instant, as ``report_completion`` writes it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import heapq
import random
from dataclasses import dataclass, field

from airflow_leastaction.intervals.interval_slots import slots_in
from airflow_leastaction.intervals.slots import expected_slot

UTC = dt.UTC
DAY, HOUR, MINUTE = dt.timedelta(days=1), dt.timedelta(hours=1), dt.timedelta(minutes=1)
#: The first slot day of every history (a Monday).
EPOCH = dt.datetime(2026, 9, 7, tzinfo=UTC)
DAILY_OUTSIDE, HOURLY = "0 0 * * *", "0 * * * *"
#: How much work a run has, by the weekday it runs on (Monday 0 ... Sunday 6).
WEEKDAY_LOAD = (1.35, 1.0, 1.0, 1.0, 1.0, 0.7, 0.65)
LATE = 2 * HOUR
#: On a slot day, the chance that one outside load (any, equally likely) lands :data:`LATE`; and that one DAG
#: task with children in its DAG (any, equally likely) fails part way and is run again.
LATE_LOAD_RATE, RERUN_RATE = 1 / 6, 1 / 5
#: The scheduler's delay from an interval's end to a run's start, and a task's from ready to picked by a
#: worker: log-normal, in seconds, (mu, sigma).
SCHEDULER_DELAY, QUEUE_DELAY = (3.5, 0.5), (2.5, 0.6)
#: Minutes after its failure that a failed task is cleared and run again: uniform.
RERUN_AFTER_MIN = (20, 90)


@dataclass(frozen=True)
class Task:
    """One catalog task: its schedule, its declared parents and how long its work usually takes."""

    name: str
    dag: str | None  # None: an outside system, reported through report_completion
    cron: str
    parents: tuple[str, ...] = ()  # all must complete (the catalog's reading of a declaration)
    coverage: str = "slot"  # "interval": every parent slot inside the child's interval
    minutes: float = 10.0  # median duration (outside: median delay after the interval's end)
    sigma: float = 0.25  # spread of the log-normal jitter

    @property
    def hourly(self) -> bool:
        return self.cron == HOURLY


@dataclass(frozen=True)
class Run:
    """One slot of one task as it happened: its first start, a failure if the first try failed, the start of
    the successful try and its end."""

    task: str
    slot: dt.datetime
    first_started: dt.datetime
    started_at: dt.datetime
    finished_at: dt.datetime
    failed_at: dt.datetime | None = None
    incident: str | None = None  # "late" (held-back outside load) or "rerun" (failed, run again)

    def state_at(self, now: dt.datetime) -> tuple[str | None, dt.datetime | None]:
        """The slot record's state and ``started_at`` at ``now``: what the catalog held then."""
        if now < self.first_started:
            return None, None
        if now >= self.finished_at:
            return "success", self.started_at
        if self.failed_at is None or now < self.failed_at:
            return "running", self.first_started
        if now < self.started_at:
            return "failed", self.first_started
        return "running", self.started_at


@dataclass
class History:
    """Every task and every slot it ran, and the index the replay reads the catalog's past from."""

    tasks: dict[str, Task]
    runs: dict[str, list[Run]]  # per task, oldest slot first
    days: int
    seed: int
    _finished: dict[str, list[dt.datetime]] = field(default_factory=dict, repr=False)
    _by_finish: dict[str, list[Run]] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        for name, runs in self.runs.items():
            ordered = sorted(runs, key=lambda r: (r.finished_at, r.slot))
            self._by_finish[name] = ordered
            self._finished[name] = [r.finished_at for r in ordered]

    def successes_before(self, task: str, now: dt.datetime) -> int:
        """How many of ``task``'s slots had succeeded by ``now`` (the catalog's history then)."""
        return bisect.bisect_right(self._finished[task], now)

    def latest(self, task: str, count: int, window: int) -> list[Run]:
        """Of the first ``count`` successes to finish, the ``window`` latest slots, latest first: the catalog's
        read of a task's history (its last successes by slot) once those had finished."""
        return heapq.nlargest(window, self._by_finish[task][:count], key=lambda r: r.slot)

    def daily_slot(self, task: str, day: int) -> dt.datetime:
        return slot_of(self.tasks[task].cron, day)

    def run_of(self, task: str, slot: dt.datetime) -> Run:
        runs, t = self.runs[task], self.tasks[task]
        index = int((slot - slot_of(t.cron, 0)) / (HOUR if t.hourly else DAY))
        run = runs[index]
        assert run.slot == slot, (task, slot)
        return run

    def parent_slots(self, task: str, slot: dt.datetime) -> tuple[tuple[str, dt.datetime], ...]:
        return parent_slots(self.tasks, self.tasks[task], slot)

    def daily_tasks(self) -> list[str]:
        return [n for n, t in self.tasks.items() if not t.hourly]


def slot_of(cron: str, day: int) -> dt.datetime:
    """A daily cron's slot on slot day ``day`` (an hourly cron's first slot of that day)."""
    if cron == HOURLY:
        return EPOCH + day * DAY
    minute, hour = (int(x) for x in cron.split()[:2])
    return EPOCH + day * DAY + dt.timedelta(hours=hour, minutes=minute)


# -- the world ----------------------------------------------------------------------------------------
def world(seed: int, *, dags: int = 10, tasks_per_dag: int = 18, outside: int = 14, feeds: int = 6) -> dict[str, Task]:
    """The catalog's tasks, in an order where every parent comes before its children."""
    rnd = random.Random(seed)
    tasks: dict[str, Task] = {}
    loads = [f"load_{i:02d}" for i in range(outside)]
    for name in loads:
        tasks[name] = Task(name, None, DAILY_OUTSIDE, minutes=rnd.uniform(20, 150), sigma=rnd.uniform(0.1, 0.3))
    for i in range(feeds):
        name = f"feed_{i:02d}"
        tasks[name] = Task(name, None, HOURLY, minutes=rnd.uniform(3, 12), sigma=rnd.uniform(0.1, 0.3))
    starts = sorted((rnd.randint(1, 4), 5 * rnd.randint(0, 11)) for _ in range(dags))
    placed: list[tuple[int, list[str]]] = []  # (hour, task names) of the DAGs laid out so far
    for d, (hour, minute) in enumerate(starts):
        dag, cron = f"dag_{d:02d}", f"{minute} {hour} * * *"
        layers = _layers(rnd, tasks_per_dag)
        previous: list[str] = []
        names = []
        for depth, size in enumerate(layers):
            current = []
            for j in range(size):
                name = f"{dag}.t{len(names) + j:02d}"
                if depth == 0:
                    parents, coverage = _first_layer_parents(rnd, loads, feeds, placed, hour)
                else:
                    count = len(previous) if depth == len(layers) - 1 else min(len(previous), rnd.choice((1, 1, 2)))
                    first = previous[j % len(previous)]
                    others = rnd.sample([p for p in previous if p != first], count - 1)
                    parents, coverage = (first, *others), "slot"
                tasks[name] = Task(
                    name, dag, cron, tuple(parents), coverage, rnd.lognormvariate(2.0, 0.8), rnd.uniform(0.1, 0.4)
                )
                current.append(name)
            names.extend(current)
            previous = current
        placed.append((hour, names))
    return tasks


def _layers(rnd: random.Random, total: int) -> list[int]:
    """Layer sizes summing to ``total``: runs of single tasks (chains) between fans; the last layer one task."""
    sizes: list[int] = []
    while sum(sizes) < total - 1:
        sizes.append(min(rnd.choice((1, 1, 2, 3, 5)), total - 1 - sum(sizes)))
    return [*sizes, 1]


def _first_layer_parents(rnd, loads, feeds, placed, hour):
    roll = rnd.random()
    if roll < 0.15 and feeds:
        return (f"feed_{rnd.randrange(feeds):02d}",), "interval"
    earlier = [names for h, names in placed if h <= hour]
    if roll < 0.45 and earlier:
        return (rnd.choice(rnd.choice(earlier)),), "slot"
    return tuple(rnd.sample(loads, rnd.choice((1, 1, 2)))), "slot"


# -- the history --------------------------------------------------------------------------------------
def simulate(tasks: dict[str, Task], days: int, seed: int) -> History:
    """Every slot of every task over ``days`` slot days, with the day's incidents."""
    rnd = random.Random(seed * 7919 + 1)
    incidents = _incidents(rnd, tasks, days)
    done: dict[tuple[str, dt.datetime], Run] = {}
    runs: dict[str, list[Run]] = {}
    for name, t in tasks.items():
        slots = [slot_of(t.cron, 0) + i * HOUR for i in range(24 * (days + 1))] if t.hourly else [
            slot_of(t.cron, d) for d in range(days)
        ]  # fmt: skip
        runs[name] = []
        for day_slot in slots:
            run = _run(rnd, tasks, t, day_slot, done, incidents.get((name, _day(day_slot))))
            done[(name, day_slot)] = run
            runs[name].append(run)
    return History(tasks, runs, days, seed)


def _day(slot: dt.datetime) -> int:
    return (slot - EPOCH) // DAY


def _incidents(rnd: random.Random, tasks: dict[str, Task], days: int) -> dict[tuple[str, int], str]:
    """Which (task, slot day) has an incident: a late outside load on 1 day in 6, a failed DAG task on 1 in 5."""
    loads = [n for n, t in tasks.items() if t.dag is None and not t.hourly]
    with_children = sorted({p for t in tasks.values() if t.dag for p in t.parents if tasks[p].dag})
    out = {}
    for day in range(days):
        if loads and rnd.random() < LATE_LOAD_RATE:
            out[(rnd.choice(loads), day)] = "late"
        if with_children and rnd.random() < RERUN_RATE:
            out[(rnd.choice(with_children), day)] = "rerun"
    return out


def _run(rnd, tasks, t: Task, slot: dt.datetime, done, incident: str | None) -> Run:
    end = slot + (HOUR if t.hourly else DAY)
    load = WEEKDAY_LOAD[end.weekday()]
    if t.dag is None:  # reported once, at completion
        at = end + MINUTE * t.minutes * load * rnd.lognormvariate(0, t.sigma)
        at += LATE if incident == "late" else dt.timedelta(0)
        return Run(t.name, slot, at, at, at, incident=incident)
    ready = end + dt.timedelta(seconds=rnd.lognormvariate(*SCHEDULER_DELAY))  # the scheduler starts the run
    if t.parents:
        ends = [done[p].finished_at for p in parent_slots(tasks, t, slot)]
        ready = max(ready, *ends)
    first = ready + dt.timedelta(seconds=rnd.lognormvariate(*QUEUE_DELAY))  # queued, then picked by a worker
    work = MINUTE * t.minutes * load * rnd.lognormvariate(0, t.sigma)
    if incident != "rerun":
        return Run(t.name, slot, first, first, first + work)
    failed = first + work * rnd.uniform(0.2, 1.0)
    again = failed + MINUTE * rnd.uniform(*RERUN_AFTER_MIN)  # someone clears the task
    return Run(t.name, slot, first, again, again + MINUTE * t.minutes * load * rnd.lognormvariate(0, t.sigma), failed,
               incident)  # fmt: skip


def parent_slots(tasks: dict[str, Task], t: Task, slot: dt.datetime) -> tuple[tuple[str, dt.datetime], ...]:
    """(parent, slot) pairs a slot of ``t`` waits on, by the package's interval rule: the parent slot at or
    before the child's (``expected_slot``), or with ``coverage="interval"`` every one inside its interval."""
    out: list[tuple[str, dt.datetime]] = []
    for p in t.parents:
        cron = tasks[p].cron
        if t.coverage == "interval":
            out.extend((p, s) for s in slots_in(cron, slot, slot + DAY))
        else:
            out.append((p, expected_slot(cron, slot)))
    return tuple(out)


def generate(seed: int = 11, days: int = 60, **shape) -> History:
    """The world of ``shape`` (see :func:`world`) and its history over ``days`` slot days."""
    return simulate(world(seed, **shape), days, seed)
