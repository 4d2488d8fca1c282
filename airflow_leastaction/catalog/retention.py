"""Retention: delete catalog history older than a cutoff, keeping every row something still reads.

Each table has one named rule, a SQL condition on one row that says "this row may go". The same
condition selects a batch of candidates (by primary key, in order) and guards the ``DELETE`` of that
batch, so a row that a concurrent writer made necessary between the two statements stays. Each batch is
its own short transaction: writers (gates, listeners, the dbt queue) wait at most one batch.

The rules, in the order the tables are pruned (a later rule reads what an earlier one keeps):

* ``la_consumption``: older than the cutoff, unless the same consumer's records of the same upstream
  slot (DAG, task, downstream slot, dependency, upstream slot record) include one at or after the
  cutoff or a stale one (the stale report lists it), or it is what the consumer consumed last of that
  dependency (run conditions compare new output with it).
* ``la_gate_decision``: older than the cutoff, unless a kept consumption row points at it, or its run
  is still in flight (a slot record of its DAG at its downstream slot is queued, running or up for
  retry): a running task consumes its gate's decisions when it succeeds.
* ``la_gate_attempt`` (an attempt's summary): older than the cutoff, once no decision of its attempt
  is kept.
* ``la_task_run`` (slot records): last changed before the cutoff, finished and not awaiting a repair,
  unless it is its task's latest slot or the slot at its watermark, or a kept consumption row selected it.
* ``la_dbt_request_event``: older than the cutoff, unless its queue row is still active.
* ``la_dbt_request``: older than the cutoff, unless one of its events is kept.
* ``la_dbt_queue``: finished before the cutoff, unless it is the model's newest ``done`` row (the
  tier's minimum interval counts from its last build). Active rows are never pruned.
* ``la_deadline_warning``: its deadline and its last change both before the cutoff. A warning is only
  raised before its deadline and only cleared by an expectation at or before it, so once the deadline
  has passed nothing reads or changes the row again: pruning it can neither repeat nor lose a warning.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Table, and_, delete, exists, func, not_, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from airflow_leastaction.catalog.audit_statements import ATTEMPT_COLUMNS
from airflow_leastaction.catalog.changes import mark_pruned_slots
from airflow_leastaction.catalog.schema import (
    consumption,
    deadline_warning,
    gate_attempt,
    gate_decision,
    task,
    task_run,
)
from airflow_leastaction.catalog.staleness import consumed_slot, is_stale
from airflow_leastaction.dbt.schema import (
    ACTIVE_STATUSES,
    RowStatus,
    dbt_queue,
    dbt_request,
    dbt_request_event,
)
from airflow_leastaction.exceptions import InvalidRetentionCutoffError
from airflow_leastaction.states import IN_FLIGHT_STATES

#: Rows deleted per transaction by default: small enough that no writer waits long behind a batch.
DEFAULT_BATCH_SIZE = 2000


def consumption_prunable(c: Table, cutoff: dt.datetime) -> ColumnElement:
    """May the consumption row ``c`` (the table or an alias of it) go?"""
    g = consumption.alias("same_slot")
    same_slot = and_(
        g.c.dag_id == c.c.dag_id,
        g.c.task_id == c.c.task_id,
        g.c.dependency == c.c.dependency,
        g.c.downstream_slot.is_not_distinct_from(c.c.downstream_slot),
        g.c.upstream_task_pk.is_not_distinct_from(c.c.upstream_task_pk),
        g.c.upstream_slot.is_not_distinct_from(c.c.upstream_slot),
    )
    recent = exists().where(same_slot, g.c.consumed_at >= cutoff)
    # ``is_stale`` is written on the table itself: the stale test runs on the un-aliased table.
    o = consumption.c
    # Correlated to ``c`` only: inside a DELETE of la_task_run or la_consumption, the plain tables here
    # must stay this subquery's own.
    stale = exists(
        select(o.id)
        .select_from(consumption.join(task_run, consumed_slot(task_run)))
        .where(
            o.dag_id == c.c.dag_id,
            o.task_id == c.c.task_id,
            o.dependency == c.c.dependency,
            o.downstream_slot.is_not_distinct_from(c.c.downstream_slot),
            o.upstream_task_pk == c.c.upstream_task_pk,
            o.upstream_slot == c.c.upstream_slot,
            is_stale(task_run),
        )
        .correlate(c)
    )
    n = consumption.alias("newer")
    superseded = exists().where(
        n.c.dag_id == c.c.dag_id,
        n.c.task_id == c.c.task_id,
        n.c.dependency == c.c.dependency,
        n.c.upstream_slot.is_not(None),
        or_(
            n.c.upstream_slot > c.c.upstream_slot,
            and_(
                n.c.upstream_slot == c.c.upstream_slot,
                func.coalesce(n.c.upstream_revision, 0) > func.coalesce(c.c.upstream_revision, 0),
            ),
        ),
    )
    last_consumed = and_(c.c.upstream_slot.is_not(None), ~superseded)
    return and_(c.c.consumed_at < cutoff, ~recent, ~stale, ~last_consumed)


def _kept_consumption(cutoff: dt.datetime) -> tuple[Table, ColumnElement]:
    k = consumption.alias("kept")
    return k, not_(consumption_prunable(k, cutoff))


def decision_prunable(d: Table, cutoff: dt.datetime) -> ColumnElement:
    """May the gate decision ``d`` go?"""
    k, kept = _kept_consumption(cutoff)
    consumed = exists().where(k.c.decision_id == d.c.id, kept)
    in_flight = exists(
        select(task_run.c.id)
        .join(task, task.c.id == task_run.c.task_pk)
        .where(
            task.c.dag_id == d.c.dag_id,
            task_run.c.slot == d.c.downstream_slot,
            task_run.c.state.in_(sorted(IN_FLIGHT_STATES)),
        )
    )
    return and_(d.c.decided_at < cutoff, ~consumed, ~in_flight)


def attempt_summary_prunable(s: Table, cutoff: dt.datetime) -> ColumnElement:
    """May the attempt summary ``s`` go? Not while a decision of its attempt stays."""
    d = gate_decision.alias("of_attempt")
    kept = exists().where(*(d.c[name] == s.c[name] for name in ATTEMPT_COLUMNS), not_(decision_prunable(d, cutoff)))
    return and_(s.c.decided_at < cutoff, ~kept)


def slot_prunable(r: Table, cutoff: dt.datetime) -> ColumnElement:
    """May the slot record ``r`` go?"""
    later = task_run.alias("later")
    has_later = exists().where(later.c.task_pk == r.c.task_pk, later.c.slot > r.c.slot)  # else: the latest
    watermark = exists().where(task.c.id == r.c.task_pk, task.c.prev_interval_start == r.c.slot)
    k, kept = _kept_consumption(cutoff)
    # The consumption index on (upstream_task_pk, upstream_slot) finds the rows that selected this slot.
    selected = exists().where(k.c.upstream_task_pk == r.c.task_pk, k.c.upstream_slot == r.c.slot, kept)
    return and_(
        r.c.updated_at < cutoff,
        r.c.state.not_in(sorted(IN_FLIGHT_STATES)),
        r.c.repair_pending.is_(False),
        has_later,
        ~watermark,
        ~selected,
    )


def request_event_prunable(e: Table, cutoff: dt.datetime) -> ColumnElement:
    active = exists().where(dbt_queue.c.id == e.c.queue_id, dbt_queue.c.status.in_(ACTIVE_STATUSES))
    return and_(e.c.requested_at < cutoff, ~active)


def request_prunable(r: Table, cutoff: dt.datetime) -> ColumnElement:
    ev = dbt_request_event.alias("ev")
    kept_event = exists().where(ev.c.request_id == r.c.id, not_(request_event_prunable(ev, cutoff)))
    return and_(r.c.requested_at < cutoff, ~kept_event)


def queue_row_prunable(q: Table, cutoff: dt.datetime) -> ColumnElement:
    done = RowStatus.DONE.value
    n = dbt_queue.alias("newer_build")
    newer_build = exists().where(
        n.c.environment == q.c.environment,
        n.c.unique_id == q.c.unique_id,
        n.c.status == done,
        or_(n.c.finished_at > q.c.finished_at, and_(n.c.finished_at == q.c.finished_at, n.c.id > q.c.id)),
    )
    last_build = and_(q.c.status == done, ~newer_build)
    return and_(q.c.status.not_in(ACTIVE_STATUSES), q.c.finished_at < cutoff, ~last_build)


def deadline_warning_prunable(w: Table, cutoff: dt.datetime) -> ColumnElement:
    """May the early warning ``w`` go? Once its deadline is past (the cutoff is), it is final."""
    return and_(w.c.deadline < cutoff, w.c.updated_at < cutoff)


#: (table, rule), in pruning order: consumption before what it points at.
RULES: tuple[tuple[Table, Callable[[Table, dt.datetime], ColumnElement]], ...] = (
    (consumption, consumption_prunable),
    (gate_decision, decision_prunable),
    (gate_attempt, attempt_summary_prunable),
    (task_run, slot_prunable),
    (dbt_request_event, request_event_prunable),
    (dbt_request, request_prunable),
    (dbt_queue, queue_row_prunable),
    (deadline_warning, deadline_warning_prunable),
)


@dataclass
class TableReport:
    rows: int = 0
    transactions: int = 0  # delete transactions (0 in a dry run)


@dataclass
class PruneReport:
    cutoff: dt.datetime
    dry_run: bool
    tables: dict[str, TableReport] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {name: t.rows for name, t in self.tables.items()}


def check_cutoff(cutoff: dt.datetime, now: dt.datetime) -> dt.datetime:
    """The cutoff as an aware UTC instant; it must be in the past (a future one would empty the history)."""
    if cutoff.tzinfo is None:
        raise InvalidRetentionCutoffError(cutoff, "it has no UTC offset")
    if cutoff > now:
        raise InvalidRetentionCutoffError(cutoff, f"it is after the current time {now.isoformat()}")
    return cutoff.astimezone(dt.UTC)


def prune(
    engine: Engine,
    before: dt.datetime,
    *,
    dry_run: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[str, int], None] | None = None,
) -> PruneReport:
    """Delete (or, with ``dry_run``, count) every row the rules let go that is older than ``before``.

    ``on_batch(table, rows)`` is called after each batch, outside any transaction.
    """
    from airflow_leastaction.catalog.store import CatalogStore, utcnow

    if batch_size < 1:
        raise InvalidRetentionCutoffError(before, f"batch size {batch_size} is not positive")
    cutoff = check_cutoff(before, utcnow())
    store = CatalogStore(engine)
    report = PruneReport(cutoff, dry_run)
    for table, rule in RULES:
        report.tables[table.name] = _prune_table(store, table, rule, cutoff, dry_run, batch_size, on_batch)
    return report


def prunable_ids(table: Table, rule, cutoff: dt.datetime):
    """``SELECT id`` of the rows of ``table`` that ``rule`` lets go (rules see the row as an alias, so
    their subqueries may read the plain table)."""
    target = table.alias("target")
    return select(target.c.id).where(rule(target, cutoff))


def prune_catalog(
    before: dt.datetime, *, conn_id: str | None = None, dry_run: bool = False, batch_size: int = DEFAULT_BATCH_SIZE
) -> PruneReport:
    """:func:`prune` on the deployment's catalog (``conn_id``, default ``[leastaction] catalog_conn_id``):
    what ``airflow-leastaction db prune`` and a maintenance task both call."""
    from airflow_leastaction.catalog.engine import get_engine, resolve_url

    return prune(get_engine(resolve_url(conn_id)), before, dry_run=dry_run, batch_size=batch_size)


def delete_batch(conn, table: Table, rule, cutoff: dt.datetime, ids: list) -> int:
    """Delete the rows ``ids`` of ``table`` that ``rule`` still lets go; returns how many went.

    The rule is checked again here: between the read that chose ``ids`` and this delete, a writer may
    have made one of them necessary (a consumption record pointing at a decision, a newer slot).
    """
    ids_query = prunable_ids(table, rule, cutoff)
    guarded = ids_query.where(ids_query.selected_columns[0].in_(ids))
    if table is task_run:  # a pruned slot record changes what a gate waiting on its task reads
        mark_pruned_slots(conn, ids)
    return conn.execute(delete(table).where(table.c.id.in_(guarded))).rowcount


def _prune_table(store, table: Table, rule, cutoff, dry_run: bool, batch_size: int, on_batch) -> TableReport:
    ids_query = prunable_ids(table, rule, cutoff)
    pk = ids_query.selected_columns[0]
    out = TableReport()
    last = None
    while True:
        query = ids_query.order_by(pk).limit(batch_size)
        if last is not None:
            query = query.where(pk > last)
        with store.engine.connect() as conn:
            ids = list(conn.execute(query).scalars())
        if not ids:
            return out
        last = ids[-1]
        if dry_run:
            out.rows += len(ids)
        else:
            with store.write() as conn:
                out.rows += delete_batch(conn, table, rule, cutoff, ids)
            out.transactions += 1
        if on_batch is not None:
            on_batch(table.name, len(ids))
