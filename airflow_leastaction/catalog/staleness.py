"""What "stale" means for a consumption record, as SQL: the join of a consumption to the slot record it
selected, and the condition that a newer revision of that record was not consumed since. Pure SQL over the
catalog's tables; the UI, retention and late arrivals read it."""

from __future__ import annotations

from sqlalchemy import and_, func, literal, or_, select
from sqlalchemy.sql.elements import ColumnElement

from airflow_leastaction.catalog.schema import consumption, task, task_run
from airflow_leastaction.gating.engine import DecisionResult


def consumed_slot(record) -> ColumnElement:
    """The join of a ``la_consumption`` row to the slot record (``la_task_run`` or an alias) it names.

    By the record's id (``upstream_run_pk``), which the consumer index holds; a MISSING consumption of a
    slot that had no record at the deadline has none, and joins the record its late upstream writes when
    it arrives, by task and slot (looked up only for such a row). The task is the one it named, or, when
    it named none (a dependency that had never reported, a task of the same run not recorded yet), the
    one of its catalog identity (``upstream_identity``)."""
    c = consumption.c
    awaited = task_run.alias("awaited")
    named = task.alias("named")
    # One subquery, the task joined in it: a second one nested in it took the retention statement past
    # SQLite's parser stack.
    by_identity = and_(c.upstream_task_pk.is_(None), identity_text(named) == c.upstream_identity)
    arrived = (
        select(awaited.c.id)
        .select_from(awaited.join(named, named.c.id == awaited.c.task_pk))
        .where(c.result == DecisionResult.MISSING.value, awaited.c.slot == c.upstream_slot)
        .where(or_(awaited.c.task_pk == c.upstream_task_pk, by_identity))
        .scalar_subquery()
    )
    return record.c.id == func.coalesce(c.upstream_run_pk, arrived)


def identity_text(tasks) -> ColumnElement:
    """A ``la_task`` row's identity (``tasks``: the table or an alias) as ``TaskIdentity.__str__`` writes it:
    ``project/name``, then ``@account`` and ``[partition]`` when set."""
    t = tasks.c

    def when_set(mark: str, part) -> ColumnElement:
        # substr(mark, 1, length(part)): the mark when the part is set. One flat chain of ||: CASE
        # expressions nested the retention statement past SQLite's parser stack.
        return func.substr(literal(mark), 1, func.length(part))

    return (
        t.project + "/" + t.name + when_set("@", t.account) + t.account
        + when_set("[", t.partition) + t.partition + when_set("]", t.partition)
    )  # fmt: skip


def is_stale(record) -> ColumnElement:
    """The one meaning of "stale", for a ``la_consumption`` row, as a SQL condition.

    A consumption is stale when the upstream slot it selected now has a higher revision (a repair, or the
    arrival of a slot a degraded run ran without) and the same consumer (DAG, task, downstream slot) has
    not consumed that revision or a later one of the same dependency and slot record since: a consumer
    that re-ran after the repair is no longer stale.

    :param record: the selected upstream slot record, ``la_task_run`` or an alias of it, joined by
        :func:`consumed_slot` (its ``output_revision`` is the current revision).
    """
    c = consumption.c
    current_revision = record.c.output_revision
    since = consumption.alias("since")
    s = since.c

    def consumed_since(same_slot) -> ColumnElement:
        # The newest revision the consumer took of the same dependency and slot record: a max(), which
        # PostgreSQL answers as the last entry of the consumer index's range (ordered by the revision).
        # As an EXISTS it estimated one record per consumer, preferred the smaller (DAG, task, time) index
        # and filtered a busy consumer's whole history for every row checked. The record is the joined
        # one: a MISSING consumption names none, the consumption that caught up names the one that arrived.
        newest = (
            select(func.max(s.upstream_revision))
            .where(s.dag_id == c.dag_id, s.task_id == c.task_id, same_slot)
            .where(s.dependency == c.dependency, s.upstream_run_pk == record.c.id)
            .scalar_subquery()
        )
        return func.coalesce(newest, current_revision - 1) >= current_revision

    # "The same downstream slot, or both none", written as two lookups: each compares the slot with = or
    # IS NULL, which the (DAG, task, downstream slot) index answers; IS NOT DISTINCT FROM is not indexable
    # on PostgreSQL, and the lookup read every record of the consumer's history instead.
    caught_up = or_(
        consumed_since(s.downstream_slot == c.downstream_slot),
        and_(c.downstream_slot.is_(None), consumed_since(s.downstream_slot.is_(None))),
    )
    return and_(c.upstream_revision < current_revision, ~caught_up)
