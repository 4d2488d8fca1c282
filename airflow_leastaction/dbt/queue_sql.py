"""Named SQL of the queue's enqueue.

``merge_upsert(dialect)`` is the portable merge: ``INSERT ... ON CONFLICT (environment, unique_id) WHERE
<active> DO UPDATE ... RETURNING``, which PostgreSQL and SQLite both accept against the partial unique index.
``PG_ENQUEUE`` does a whole request in one PostgreSQL statement: the request row, the merge upsert on the
partial unique index of active rows, and one event per model from the upsert's ``RETURNING``. One round
trip keeps the row locks of hot models held for the shortest time, which is what bounds throughput when
many producers ask for the same models. Its outcome rule is :func:`policy.outcome_after_upsert`'s.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import case, func, literal, text
from sqlalchemy.dialects import postgresql, sqlite

from airflow_leastaction.dbt.planner import PlannedModel
from airflow_leastaction.dbt.policy import BatchKey, outcome_after_upsert
from airflow_leastaction.dbt.schema import ACTIVE_PREDICATE, dbt_queue

q = dbt_queue.c

PG_ENQUEUE = text("""
WITH up AS (
    INSERT INTO la_dbt_queue AS q (
        environment, unique_id, fqn, materialized, action, mode, exclusions, full_refresh, dbt_vars,
        exclude_selector, target, demand_key, tier, status, selectors, request_count, requested_while_running,
        force, request_slot, first_requested_at, last_requested_at, attempts)
    SELECT :environment, m.unique_id, m.fqn, m.materialized, :action, :mode, :exclusions, :full_refresh, :dbt_vars,
           :exclude_selector, :target, :demand_key, m.tier, 'pending', :selector, 1, false, :force, :request_slot,
           :now, :now, 0
    FROM unnest(CAST(:unique_ids AS text[]), CAST(:fqns AS text[]), CAST(:materializations AS text[]),
                CAST(:tiers AS text[])) AS m(unique_id, fqn, materialized, tier)
    ORDER BY m.unique_id
    ON CONFLICT (environment, unique_id, demand_key) WHERE status IN ('pending', 'running') DO UPDATE SET
        request_count = q.request_count + 1,
        last_requested_at = EXCLUDED.last_requested_at,
        tier = EXCLUDED.tier,
        fqn = EXCLUDED.fqn,
        selectors = CASE
            WHEN strpos(E'\\n' || q.selectors || E'\\n', E'\\n' || EXCLUDED.selectors || E'\\n') > 0
            THEN q.selectors ELSE q.selectors || E'\\n' || EXCLUDED.selectors END,
        requested_while_running = q.status = 'running' OR q.requested_while_running,
        force = q.force OR EXCLUDED.force,
        request_slot = GREATEST(q.request_slot, EXCLUDED.request_slot)
    RETURNING q.id, q.unique_id, q.status, q.request_count
), request AS (
    INSERT INTO la_dbt_request (id, environment, selector, status, model_count, excluded_count, requested_by,
                                requested_at)
    VALUES (:request_id, :environment, :selector, 'queued', :model_count, :excluded_count, :requested_by,
            :now)
), events AS (
    INSERT INTO la_dbt_request_event (request_id, environment, unique_id, selector, outcome, queue_id,
                                      requested_by, requested_at)
    SELECT :request_id, :environment, up.unique_id, :selector,
           CASE WHEN up.request_count = 1 AND up.status = 'pending' THEN 'new_pending'
                WHEN up.status = 'running' THEN 'already_running' ELSE 'already_pending' END,
           up.id, :requested_by, :now
    FROM up ORDER BY up.unique_id
)
SELECT id, unique_id, status, request_count FROM up
""")


def merge_upsert(dialect: str):
    """The merge upsert for ``dialect`` (build once and reuse: its compiled form is then cached)."""
    stmt = (postgresql if dialect == "postgresql" else sqlite).insert(dbt_queue)
    new = stmt.excluded
    find = func.strpos if dialect == "postgresql" else func.instr
    delimited = literal("\n") + q.selectors + literal("\n")
    known = find(delimited, literal("\n") + new.selectors + literal("\n")) > 0
    slot = case(
        (q.request_slot.is_(None), new.request_slot),
        (new.request_slot.is_(None) | (new.request_slot <= q.request_slot), q.request_slot),
        else_=new.request_slot,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["environment", "unique_id", "demand_key"],
        index_where=ACTIVE_PREDICATE,
        set_={
            "request_count": q.request_count + 1,
            "last_requested_at": new.last_requested_at,
            "tier": new.tier,
            "fqn": new.fqn,
            "selectors": case((known, q.selectors), else_=q.selectors + literal("\n") + new.selectors),
            "requested_while_running": case((q.status == "running", True), else_=q.requested_while_running),
            "force": q.force | new.force,
            "request_slot": slot,
        },
    )
    return stmt.returning(q.id, q.unique_id, q.status, q.request_count, sort_by_parameter_order=True)


def key_columns(key: BatchKey) -> dict:
    """The demand key as the queue's and the batch's columns."""
    return {
        "environment": key.environment, "action": key.action, "mode": key.mode, "exclusions": key.exclusions,
        "full_refresh": key.full_refresh, "dbt_vars": key.dbt_vars, "exclude_selector": key.exclude,
        "target": key.target,
    }  # fmt: skip


def key_of(row) -> BatchKey:
    """The demand key of a queue or batch row."""
    return BatchKey(
        row.environment, row.action, row.mode, row.exclusions, row.full_refresh, row.dbt_vars, row.exclude_selector,
        row.target,
    )  # fmt: skip


def merge_rows(
    key: BatchKey, models: Sequence[PlannedModel], selector: str, now: dt.datetime, *, force: bool = False,
    slot: dt.datetime | None = None,
) -> list[dict]:  # fmt: skip
    """Parameters of :func:`merge_upsert`, one dict per model."""
    common = {
        **key_columns(key), "demand_key": key.digest, "status": "pending", "selectors": selector,
        "request_count": 1, "requested_while_running": False, "force": force, "request_slot": slot,
        "first_requested_at": now, "last_requested_at": now, "attempts": 0,
    }  # fmt: skip
    return [
        {**common, "unique_id": m.unique_id, "fqn": m.fqn, "materialized": m.materialized, "tier": m.tier}
        for m in models
    ]


def pg_enqueue_params(
    key: BatchKey, models: Sequence[PlannedModel], selector: str, request_id: str, requested_by: str | None,
    excluded_count: int, now: dt.datetime, *, force: bool = False, slot: dt.datetime | None = None,
) -> dict:  # fmt: skip
    """Parameters of :data:`PG_ENQUEUE`: the request, and the models as parallel arrays."""
    return {
        **key_columns(key), "demand_key": key.digest, "force": force, "request_slot": slot, "selector": selector,
        "now": now, "request_id": request_id, "requested_by": requested_by,
        "model_count": len(models), "excluded_count": excluded_count,
        "unique_ids": [m.unique_id for m in models], "fqns": [m.fqn for m in models],
        "materializations": [m.materialized for m in models], "tiers": [m.tier for m in models],
    }  # fmt: skip


def event_rows(request_id: str, environment: str, selector: str, returned, requested_by, now) -> list[dict]:
    """One append-only event per model, from the rows :func:`merge_upsert` returned."""
    return [
        {"request_id": request_id, "environment": environment, "unique_id": r.unique_id, "selector": selector,
         "outcome": outcome_after_upsert(r.request_count, r.status).value, "queue_id": r.id,
         "requested_by": requested_by, "requested_at": now}
        for r in sorted(returned, key=lambda r: r.unique_id)
    ]  # fmt: skip
