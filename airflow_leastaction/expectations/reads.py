"""The expected-time graph read from the catalog: one statement per kind, whatever the number of tasks.

1. The tasks: the targets and every task their declared parents reach, in one recursive statement over
   the index of declared parent names (``la_task_parent``); each row's declaration (``la_task.parents``,
   :func:`~airflow_leastaction.catalog.declared_parents.parse_parents`) then names its exact parents.
2. The history: the last :data:`~.estimate.WINDOW` successes of every one of those tasks, in one windowed
   statement, kept per catalog change sequence number (:mod:`~airflow_leastaction.expectations.history`).
3. The slot records: each node's covering record, in one statement over all the nodes' windows.

A child slot waits on the parent slots the gates judge: the parent slot covering the child's interval
start (:func:`~airflow_leastaction.intervals.slots.expected_slot`, the record found in that slot's
granularity unit as the interval check finds it), or, for a parent declared with ``coverage="interval"``,
every parent slot inside the child's interval (all of them must complete). An ad hoc parent (no cron)
is complete once it has a success at or after the child's slot.
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.bound_rows import bound_rows
from airflow_leastaction.catalog.declared_parents import parse_parents
from airflow_leastaction.catalog.schema import identity_clause, in_chunks, task, task_parent, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.expectations.estimate import Expectation, Node, expect
from airflow_leastaction.expectations.history import HISTORIES, NO_HISTORY, read_change_seq
from airflow_leastaction.expectations.miss import miss_chances
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.interval_slots import next_slot, slots_in
from airflow_leastaction.intervals.judging import FAR_FUTURE, schedule_error
from airflow_leastaction.intervals.slots import cron_granularity, expected_slot, resolve_timezone, slot_window
from airflow_leastaction.states import IN_FLIGHT_STATES

#: The graph of slots read for one question stops growing here (parents of parents...); a parent slot
#: past it counts as a parent without an estimate.
MAX_NODES = 20_000


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
    dag_id: str | None = None

    @property
    def judgeable(self) -> bool:
        return self.cron is None or schedule_error(self) is None  # type: ignore[arg-type]

    def window(self, slot: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
        """The records that decide the slot: its granularity unit (ad hoc: any run at or after it)."""
        if self.cron is None:
            return slot, FAR_FUTURE
        return slot_window(slot, cron_granularity(self.cron), resolve_timezone(self.timezone))


def connection(store: CatalogStore) -> AbstractContextManager[Connection]:
    """A connection to read with: the one a page's reader holds for all its reads (its ``connect()``), else
    one of the store's engine for this read alone."""
    held = getattr(store, "connect", None)
    return held() if held is not None else store.engine.connect()


def node_key(identity: TaskIdentity | str, slot: dt.datetime) -> str:
    return f"{identity}@{slot.astimezone(dt.UTC).isoformat()}"


# -- the reads ---------------------------------------------------------------------------------------------
def _columns():
    first = select(func.min(task_run.c.slot)).where(task_run.c.task_pk == task.c.id).scalar_subquery()
    c = task.c
    return (
        c.id, c.name, c.project, c.account, c.partition, c.cron, c.timezone, c.prev_interval_start, c.parents,
        c.dag_id, first.label("first_slot"),
    )  # fmt: skip


def _task_row(row) -> TaskRow:
    identity = TaskIdentity.from_row(row)
    return TaskRow(
        row.id, identity, row.cron, row.timezone or "UTC", row.prev_interval_start, row.first_slot,
        tuple(parse_parents(row.parents)), row.dag_id,
    )  # fmt: skip


def read_tasks(conn: Connection, identities: Iterable[TaskIdentity]) -> dict[TaskIdentity, TaskRow]:
    """The tasks ``identities`` name and every task their declared parents reach: one recursive statement
    (one more per 30,000 target names). Names select; each declaration then names exact identities."""
    rows: dict[TaskIdentity, TaskRow] = {}
    for names in in_chunks(sorted({i.name for i in identities})):
        closure = select(task.c.id).where(task.c.name.in_(names)).cte("closure", recursive=True)
        parent = task.alias("parent")
        step = select(parent.c.id).select_from(
            closure.join(task_parent, task_parent.c.task_pk == closure.c.id).join(
                parent, parent.c.name == task_parent.c.parent_name
            )
        )
        closure = closure.union(step)
        for row in conn.execute(select(*_columns()).where(task.c.id.in_(select(closure.c.id)))):
            found = _task_row(row)
            rows[found.identity] = found
    return rows


def find_task(
    store: CatalogStore,
    identity: TaskIdentity | None = None,
    *,
    dag_id: str | None = None,
    task_id: str | None = None,
) -> TaskRow | None:
    """One catalog task as the graph reads it: by ``identity``, or as the task ``task_id`` of DAG ``dag_id``
    (its unmapped row first). None when the catalog has no such task."""
    query = select(*_columns())
    if identity is not None:
        query = query.where(*identity_clause(identity))
    else:
        query = query.where(task.c.dag_id == dag_id, task.c.task_id == task_id).order_by(task.c.partition, task.c.id)
    with connection(store) as conn:
        row = conn.execute(query.limit(1)).first()
    return None if row is None else _task_row(row)


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
    with connection(store) as conn:
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
            offsets=history.offsets, durations=history.durations, skewed=history.skewed, weekdays=history.weekdays,
            usual=history.usual, parents=graph.parents[key],
            mode=mode if key in target_keys else "ALL", cap=cap if key in target_keys else None,
        )  # fmt: skip
    return nodes, rows


def expectations_with_dags(
    store: CatalogStore,
    targets: Sequence[tuple[TaskIdentity, dt.datetime]],
    now: dt.datetime,
    *,
    mode: str | int = "ALL",
    cap: dt.datetime | None = None,
    zone: dt.tzinfo = dt.UTC,
) -> tuple[dict[tuple[str, dt.datetime], Expectation], dict[str, str | None]]:
    """:func:`expectations_for`, with the DAG of every catalog task the targets' graph holds, by its
    name as expectations write it (what a page withholds from a reader who may not read that DAG)."""
    nodes, rows = read_nodes(store, targets, mode=mode, cap=cap)
    found = expect(nodes, now, zone=zone)
    out = {}
    for identity, slot in targets:
        key = node_key(identity, slot)
        out[(str(identity), slot)] = found.get(key) or _not_judgeable(identity, slot, rows.get(identity))
    return out, {str(identity): row.dag_id for identity, row in rows.items()}


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
    return expectations_with_dags(store, targets, now, mode=mode, cap=cap, zone=zone)[0]


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


def expectation_and_chance(
    store: CatalogStore,
    identity: TaskIdentity,
    slot: dt.datetime,
    now: dt.datetime,
    deadline: dt.datetime,
    *,
    mode: str | int = "ALL",
    n: int | None = None,
    cap: dt.datetime | None = None,
) -> tuple[Expectation, float | None]:
    """:func:`expectation_of`, and the chance the slot completes after ``deadline``
    (:mod:`~airflow_leastaction.expectations.miss`; None: no estimate), from the same read."""
    wanted = n if n is not None else mode
    if wanted == "N":
        raise ValueError("mode 'N' needs n, how many parents must complete")
    nodes, rows = read_nodes(store, [(identity, slot)], mode=wanted, cap=cap)
    found = expect(nodes, now)
    key = node_key(identity, slot)
    if key not in found:
        return _not_judgeable(identity, slot, rows.get(identity)), None
    return found[key], miss_chances(nodes, found, {key: deadline}, now)[key]


def _not_judgeable(identity: TaskIdentity, slot: dt.datetime, row: TaskRow | None) -> Expectation:
    why = "not in the catalog" if row is None else "its schedule in the catalog cannot be judged"
    return Expectation(
        node_key(identity, slot), str(identity), slot, "no_estimate", None, None, (), f"no estimate: {why}", 0, 0
    )


def next_open_slot(row: TaskRow, now: dt.datetime) -> dt.datetime | None:
    """The slot a task runs next: the first after its watermark, else the latest at or before ``now``
    (None: an ad hoc task, or a schedule that cannot be judged)."""
    if not row.judgeable:
        return None
    return next_slot_after_watermark(row.cron, row.timezone, row.watermark, now)


def next_slot_after_watermark(
    cron: str | None, timezone: str, watermark: dt.datetime | None, now: dt.datetime
) -> dt.datetime | None:
    """:func:`next_open_slot` of a task's schedule and watermark (the schedule already judged readable)."""
    if cron is None:
        return None
    if watermark is not None:
        return next_slot(cron, watermark, timezone=timezone)
    return expected_slot(cron, now, timezone=timezone)


def airflow_identities(store: CatalogStore, tasks: Iterable[tuple[str, str]]) -> dict[tuple[str, str], TaskIdentity]:
    """The catalog identity of each Airflow task ``(dag_id, task_id)`` (its unmapped row), in one statement."""
    wanted = set(tasks)
    if not wanted:
        return {}
    c = task.c
    query = select(c.name, c.project, c.account, c.partition, c.dag_id, c.task_id).where(
        c.dag_id.in_(sorted({d for d, _ in wanted})), c.task_id.in_(sorted({t for _, t in wanted})), c.partition == ""
    )
    with connection(store) as conn:
        rows = conn.execute(query).all()
    return {(r.dag_id, r.task_id): TaskIdentity.from_row(r) for r in rows if (r.dag_id, r.task_id) in wanted}
