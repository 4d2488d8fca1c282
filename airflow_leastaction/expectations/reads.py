"""The expected-time graph read from the catalog: one statement per kind, whatever the number of tasks.

1. The tasks: the targets and every task their declared parents reach, in one recursive statement over
   the index of declared parent names (``la_task_parent``); each row's declaration (``la_task.parents``,
   :func:`~airflow_leastaction.catalog.declared_parents.parse_parents`) then names its exact parents.
2. The history: the last :data:`~.estimate.WINDOW` successes of every one of those tasks, in one windowed
   statement (``ROW_NUMBER() OVER (PARTITION BY task_pk ORDER BY slot DESC)``). Kept per catalog change
   sequence number (``la_change_counter.seq``): while nothing is written, it is not read again.
3. The slot records: each node's covering record, in one statement over all the nodes' windows.

A child slot waits on the parent slots the gates judge: the parent slot covering the child's interval
start (:func:`~airflow_leastaction.intervals.slots.expected_slot`, the record found in that slot's
granularity unit as the interval check finds it), or, for a parent declared with ``coverage="interval"``,
every parent slot inside the child's interval (all of them must complete). An ad hoc parent (no cron)
is complete once it has a success at or after the child's slot.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import and_, func, or_, select
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.bound_rows import bound_rows
from airflow_leastaction.catalog.declared_parents import parse_parents
from airflow_leastaction.catalog.schema import change_counter, in_chunks, task, task_parent, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.expectations.estimate import WINDOW, Expectation, Node, expect
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.interval_slots import next_slot, slots_in
from airflow_leastaction.intervals.judging import FAR_FUTURE, schedule_error
from airflow_leastaction.intervals.slots import cron_granularity, expected_slot, resolve_timezone, slot_window
from airflow_leastaction.states import IN_FLIGHT_STATES

#: The graph of slots read for one question stops growing here (parents of parents...); a parent slot
#: past it counts as a parent without an estimate.
MAX_NODES = 20_000
#: Runs that finish long after their slot by design tell nothing of a scheduled slot's time: backfills.
LEFT_OUT_RUN_TYPES = ("backfill",)


@dataclass(frozen=True)
class TaskRow:
    """A catalog task as the expected-time graph reads it."""

    pk: int
    identity: TaskIdentity
    cron: str | None
    timezone: str
    watermark: dt.datetime | None
    first_slot: dt.datetime | None
    parents: tuple[TaskIdentity, ...]

    @property
    def judgeable(self) -> bool:
        return self.cron is None or schedule_error(self) is None  # type: ignore[arg-type]

    def window(self, slot: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
        """The records that decide the slot: its granularity unit (ad hoc: any run at or after it)."""
        if self.cron is None:
            return slot, FAR_FUTURE
        return slot_window(slot, cron_granularity(self.cron), resolve_timezone(self.timezone))


@dataclass(frozen=True)
class History:
    """A task's recent successes: offsets from their slots, durations, and the runs left out for skew."""

    offsets: tuple[dt.timedelta, ...] = ()
    durations: tuple[dt.timedelta, ...] = ()
    skewed: int = 0


NO_HISTORY = History()


def node_key(identity: TaskIdentity | str, slot: dt.datetime) -> str:
    return f"{identity}@{slot.astimezone(dt.UTC).isoformat()}"


# -- the reads ---------------------------------------------------------------------------------------------
def read_change_seq(conn: Connection) -> int:
    return conn.execute(select(change_counter.c.seq).where(change_counter.c.id == 1)).scalar() or 0


def read_tasks(conn: Connection, identities: Iterable[TaskIdentity]) -> dict[TaskIdentity, TaskRow]:
    """The tasks ``identities`` name and every task their declared parents reach: one recursive statement
    (one more per 30,000 target names). Names select; each declaration then names exact identities."""
    rows: dict[TaskIdentity, TaskRow] = {}
    first = select(func.min(task_run.c.slot)).where(task_run.c.task_pk == task.c.id).scalar_subquery()
    for names in in_chunks(sorted({i.name for i in identities})):
        closure = select(task.c.id).where(task.c.name.in_(names)).cte("closure", recursive=True)
        parent = task.alias("parent")
        step = select(parent.c.id).select_from(
            closure.join(task_parent, task_parent.c.task_pk == closure.c.id).join(
                parent, parent.c.name == task_parent.c.parent_name
            )
        )
        closure = closure.union(step)
        c = task.c
        query = select(
            c.id, c.name, c.project, c.account, c.partition, c.cron, c.timezone, c.prev_interval_start, c.parents,
            first.label("first_slot"),
        ).where(c.id.in_(select(closure.c.id)))  # fmt: skip
        for row in conn.execute(query):
            identity = TaskIdentity.from_row(row)
            rows[identity] = TaskRow(
                row.id, identity, row.cron, row.timezone or "UTC", row.prev_interval_start, row.first_slot,
                tuple(parse_parents(row.parents)),
            )  # fmt: skip
    return rows


def read_history(conn: Connection, task_pks: Sequence[int]) -> dict[int, History]:
    """The last :data:`WINDOW` first-time successes of each task (backfills and repairs left out), in one
    windowed statement; runs finished before their slot are counted as skewed and left out."""
    r = task_run.c
    found: dict[int, list] = {pk: [] for pk in task_pks}
    for chunk in in_chunks(sorted(task_pks)):
        ranked = (
            select(
                r.task_pk,
                r.slot,
                r.started_at,
                r.finished_at,
                func.row_number().over(partition_by=r.task_pk, order_by=r.slot.desc()).label("rn"),
            )
            .where(
                r.task_pk.in_(chunk),
                r.state == "success",
                r.finished_at.is_not(None),
                r.output_revision == 1,
                or_(r.run_type.is_(None), r.run_type.not_in(LEFT_OUT_RUN_TYPES)),
            )
            .subquery()
        )
        query = select(ranked.c.task_pk, ranked.c.slot, ranked.c.started_at, ranked.c.finished_at).where(
            ranked.c.rn <= WINDOW
        )
        for row in conn.execute(query):
            found[row.task_pk].append(row)
    return {pk: history_of(runs) for pk, runs in found.items()}


def history_of(runs) -> History:
    """Offsets and durations of ``runs`` (rows with ``slot``, ``started_at``, ``finished_at``)."""
    offsets, durations, skewed = [], [], 0
    for run in runs:
        if run.finished_at < run.slot:
            skewed += 1
            continue
        offsets.append(run.finished_at - run.slot)
        if run.started_at is not None and run.started_at <= run.finished_at:
            durations.append(run.finished_at - run.started_at)
    return History(tuple(offsets), tuple(durations), skewed) if runs else NO_HISTORY


def read_records(conn: Connection, windows: Iterable[tuple[int, dt.datetime, dt.datetime]]) -> dict[tuple, list]:
    """The slot records inside each ``(task_pk, start, end)`` window, by window, oldest first: one statement."""
    wanted = sorted(set(windows))
    out: dict[tuple, list] = {w: [] for w in wanted}
    if not wanted:
        return out
    slot_type = task_run.c.slot.type
    w = bound_rows(conn.dialect, "w", [("pk", task_run.c.task_pk.type), ("s", slot_type), ("e", slot_type)])
    pk, start, end = w.columns
    r = task_run.c
    query = select(w.order, r.task_pk, r.slot, r.state, r.started_at, r.finished_at).join_from(
        w.table, task_run, and_(r.task_pk == pk, r.slot >= start, r.slot < end)
    )
    for row in conn.execute(query.order_by(w.order, r.slot), w.params(wanted)):
        out[wanted[int(row[0]) - _first_position(conn)]].append(row)
    return out


def _first_position(conn: Connection) -> int:
    return 0 if conn.dialect.name == "sqlite" else 1  # json_each keys from 0, ORDINALITY from 1


# -- the graph of slots ------------------------------------------------------------------------------------
def parent_slots(child: TaskRow, slot: dt.datetime, declared: TaskIdentity, parent: TaskRow, every: bool):
    """The parent slots child slot ``slot`` waits on (``every`` False: of a whole interval, its last)."""
    if parent.cron is None:
        return (slot,)
    tz = resolve_timezone(parent.timezone)
    if declared.coverage == "interval" and child.cron is not None and child.judgeable:
        end = next_slot(child.cron, slot, timezone=child.timezone)
        inside = slots_in(parent.cron, slot, end, timezone=tz) if end is not None else ()
        if inside:
            return inside if every else inside[-1:]
    return (expected_slot(parent.cron, slot, timezone=tz),)


def record_state(row: TaskRow, slot: dt.datetime, records: list):
    """``(state, started_at, finished_at)`` of a node from the records of its window, as gates judge them:
    a run in flight first, else the latest record; without one, the watermark for a slot before the
    task's records began."""
    if row.cron is None:
        done = [r for r in records if r.state == "success"]
        if done or records:
            r = (done or records)[-1]
            return r.state, r.started_at, r.finished_at
        covered = row.watermark is not None and row.watermark >= slot and row.first_slot is None
        return ("success", None, None) if covered else (None, None, None)
    flying = [r for r in records if r.state in IN_FLIGHT_STATES]
    if flying or records:
        r = (flying or records)[-1]
        return r.state, r.started_at, r.finished_at
    before_records = row.first_slot is None or slot < row.first_slot
    start = row.window(slot)[0]
    if before_records and row.watermark is not None and row.watermark >= start:
        return "success", None, None
    return None, None, None


class _Graph:
    """The (task, slot) nodes the targets reach, built breadth first from the task rows."""

    def __init__(self, rows: dict[TaskIdentity, TaskRow]):
        self.rows = rows
        self.slots: dict[str, tuple[TaskRow, dt.datetime]] = {}
        self.parents: dict[str, tuple[str, ...]] = {}

    def add(self, targets: Sequence[tuple[TaskIdentity, dt.datetime]], every_for_targets: bool) -> None:
        todo: deque[tuple[TaskRow, dt.datetime, bool]] = deque()
        for identity, slot in targets:
            row = self.rows.get(identity)
            if row is not None and row.judgeable:
                todo.append((row, slot, every_for_targets))
        while todo:
            row, slot, every = todo.popleft()
            key = node_key(row.identity, slot)
            if key in self.slots or len(self.slots) >= MAX_NODES:
                continue
            self.slots[key] = (row, slot)
            keys = []
            for declared in row.parents:
                parent = self.rows.get(declared)
                if parent is None or not parent.judgeable:
                    keys.append(node_key(declared, slot))  # no node: a parent without an estimate
                    continue
                for parent_slot in parent_slots(row, slot, declared, parent, every):
                    keys.append(node_key(parent.identity, parent_slot))
                    todo.append((parent, parent_slot, True))
            self.parents[key] = tuple(dict.fromkeys(keys))


# -- the history cache -------------------------------------------------------------------------------------
class HistoryCache:
    """Histories read at one catalog change sequence number, per catalog: kept until the number moves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_catalog: dict[str, tuple[int, dict[int, History]]] = {}

    def histories(self, conn: Connection, catalog: str, seq: int, task_pks: Iterable[int]) -> dict[int, History]:
        with self._lock:
            held_seq, held = self._by_catalog.get(catalog, (None, {}))
            known = dict(held) if held_seq == seq else {}
        missing = [pk for pk in set(task_pks) if pk not in known]
        if missing:
            known.update(read_history(conn, missing))
            with self._lock:
                self._by_catalog[catalog] = (seq, known)
        return known

    def clear(self) -> None:
        with self._lock:
            self._by_catalog.clear()


HISTORIES = HistoryCache()


# -- the questions -----------------------------------------------------------------------------------------
def read_nodes(
    store: CatalogStore,
    targets: Sequence[tuple[TaskIdentity, dt.datetime]],
    *,
    mode: str | int = "ALL",
    cap: dt.datetime | None = None,
) -> tuple[dict[str, Node], dict[TaskIdentity, TaskRow]]:
    """The nodes of every (task, slot) ``targets`` reach, with the task rows read; the targets' own nodes
    wait on their parents by ``mode`` and ``cap``, every other node on all its parents."""
    targets = [(identity, slot.astimezone(dt.UTC)) for identity, slot in targets]
    with store.engine.connect() as conn:
        seq = read_change_seq(conn)
        rows = read_tasks(conn, {identity for identity, _ in targets})
        graph = _Graph(rows)
        graph.add(targets, every_for_targets=mode == "ALL")
        windows = {key: (row.pk, *row.window(slot)) for key, (row, slot) in graph.slots.items()}
        records = read_records(conn, windows.values())
        pks = {row.pk for row, _ in graph.slots.values()}
        histories = HISTORIES.histories(conn, str(store.engine.url), seq, pks)
    target_keys = {node_key(identity, slot) for identity, slot in targets}
    nodes = {}
    for key, (row, slot) in graph.slots.items():
        state, started, finished = record_state(row, slot, records[windows[key]])
        history = histories.get(row.pk, NO_HISTORY)
        nodes[key] = Node(
            key=key, task=str(row.identity), slot=slot, state=state, started_at=started, finished_at=finished,
            offsets=history.offsets, durations=history.durations, skewed=history.skewed,
            parents=graph.parents[key],
            mode=mode if key in target_keys else "ALL", cap=cap if key in target_keys else None,
        )  # fmt: skip
    return nodes, rows


def expectations_for(
    store: CatalogStore,
    targets: Sequence[tuple[TaskIdentity, dt.datetime]],
    now: dt.datetime,
    *,
    mode: str | int = "ALL",
    cap: dt.datetime | None = None,
    zone: dt.tzinfo = dt.UTC,
) -> dict[tuple[str, dt.datetime], Expectation]:
    """The expectation of each target ``(task, slot)``, keyed ``(str(task), slot)``, from one read of each
    kind. ``mode`` ("ALL", "ANY" or N) and ``cap`` (a fallback's deadline) apply to the targets' own parents;
    reasons word times of day in ``zone``. A target not in the catalog has no estimate, saying so."""
    nodes, rows = read_nodes(store, targets, mode=mode, cap=cap)
    found = expect(nodes, now, zone=zone)
    out = {}
    for identity, slot in targets:
        key = node_key(identity, slot)
        out[(str(identity), slot)] = found.get(key) or _not_judgeable(identity, slot, rows.get(identity))
    return out


def expectation_of(
    store: CatalogStore,
    identity: TaskIdentity,
    slot: dt.datetime,
    now: dt.datetime,
    *,
    mode: str | int = "ALL",
    n: int | None = None,
    cap: dt.datetime | None = None,
    zone: dt.tzinfo = dt.UTC,
) -> Expectation:
    """The expectation of one task's slot (``mode="N"`` with ``n``, or ``mode=n``, for N of its parents)."""
    wanted = n if n is not None else mode
    if wanted == "N":
        raise ValueError("mode 'N' needs n, how many parents must complete")
    return expectations_for(store, [(identity, slot)], now, mode=wanted, cap=cap, zone=zone)[(str(identity), slot)]


def _not_judgeable(identity: TaskIdentity, slot: dt.datetime, row: TaskRow | None) -> Expectation:
    why = "not in the catalog" if row is None else "its schedule in the catalog cannot be judged"
    return Expectation(
        node_key(identity, slot), str(identity), slot, "no_estimate", None, None, (), f"no estimate: {why}", 0, 0
    )


def next_open_slot(row: TaskRow, now: dt.datetime) -> dt.datetime | None:
    """The slot a task runs next: the first after its watermark, else the latest at or before ``now``
    (None: an ad hoc task, or a schedule that cannot be judged)."""
    if row.cron is None or not row.judgeable:
        return None
    if row.watermark is not None:
        return next_slot(row.cron, row.watermark, timezone=row.timezone)
    return expected_slot(row.cron, now, timezone=row.timezone)
