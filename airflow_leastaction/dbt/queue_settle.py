"""Settling a claimed batch's rows: each finished pass becomes history as it ended, with its reuse decision;
requests that arrived during a pass move to the one follow-up row it owes.

Runs inside the queue store's write transaction (the caller's ``conn``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from airflow_leastaction.dbt.policy import ModelOutcome, Outcome, row_status_after
from airflow_leastaction.dbt.reuse import Decision
from airflow_leastaction.dbt.schema import PassDecision, dbt_queue, dbt_request_event

q = dbt_queue.c
BUILT, REUSED = PassDecision.BUILT.value, PassDecision.REUSED.value


@dataclass(frozen=True)
class PassRecord:
    """What a pass records of its reuse decision (see :mod:`airflow_leastaction.dbt.reuse`)."""

    decision: str  # BUILT or REUSED
    reason: str
    code: str | None
    consumed: Mapping[str, str | None]
    build_ref: int

    @classmethod
    def of(cls, decision: Decision, code: str | None) -> PassRecord:
        return cls(BUILT if decision.build else REUSED, decision.reason, code, decision.consumed, decision.build_ref)

    def columns(self) -> dict:
        inputs = json.dumps({"code": self.code, "consumed": dict(self.consumed)}, sort_keys=True)
        return {"decision": self.decision, "reason": self.reason, "inputs": inputs, "build_ref": self.build_ref}


def settle_rows(
    conn: Connection,
    batch_id: str,
    claimed_at: dt.datetime | None,
    outcomes: Mapping[str, ModelOutcome],
    *,
    passes: Mapping[str, PassRecord],
    messages: Mapping[str, str],
    max_attempts: int,
    now: dt.datetime,
    only: Collection[str] | None = None,
) -> dict[str, str]:
    """Settle the batch's running rows (those of ``only`` when given): unique id -> the row's new status."""
    stmt = select(dbt_queue).where(q.batch_id == batch_id, q.status == "running")
    if only is not None:
        stmt = stmt.where(q.unique_id.in_(sorted(only)))
    # The producers' lock order: no deadlock with a concurrent enqueue.
    rows = conn.execute(stmt.order_by(q.unique_id).with_for_update()).all()
    settled = {}
    for row in rows:
        outcome = outcomes.get(row.unique_id, ModelOutcome.NOT_RUN)
        after = row_status_after(outcome, row.requested_while_running, row.attempts, max_attempts)
        row_message = messages.get(row.unique_id)
        if outcome is ModelOutcome.NOT_RUN and after.status == "failed":
            row_message = f"not finished after {row.attempts} attempt(s); giving up"
        values = {"status": after.status, "outcome": outcome.value, "message": row_message}
        if row.unique_id in passes and outcome is not ModelOutcome.NOT_RUN:
            values.update(passes[row.unique_id].columns())
        if after.status == "pending":
            # attempts counts claims in a row that ended unfinished; the next pass sees new requests.
            values.update(batch_id=None, requested_while_running=False)
        else:
            values["finished_at"] = now
        follow_up = follow_up_row(conn, row, claimed_at) if after.follow_up else None
        if follow_up is not None:  # the requests of the follow-up move to it: each is counted once
            values["request_count"] = row.request_count - follow_up["request_count"]
        conn.execute(update(dbt_queue).where(q.id == row.id).values(**values))
        if follow_up is not None:
            conn.execute(insert(dbt_queue).values(**follow_up))
        settled[row.unique_id] = after.status
    return settled


def follow_up_row(conn: Connection, row, claimed_at: dt.datetime | None) -> dict:
    """The pending row a pass owes when requests arrived while it ran: it holds just those requests (their
    events name the row that was running), so its counts and times are theirs. It keeps the key, the slot
    the requests asked for, and ``force`` (the pass's own, or one a request during it set)."""
    e = dbt_request_event.c
    running = select(e.selector, e.requested_at).where(e.queue_id == row.id, e.outcome == Outcome.ALREADY_RUNNING.value)
    during = conn.execute(running.where(e.requested_at >= claimed_at).order_by(e.id)).all() if claimed_at else []
    # Stamped by the producers' clocks: when one ran behind the claim's, every request made while this row
    # was running (in this claim or an unfinished earlier one) moves to the follow-up.
    during = during or conn.execute(running.order_by(e.id)).all()
    copied = ("environment", "unique_id", "fqn", "materialized", "action", "mode", "exclusions", "full_refresh")
    copied += ("dbt_vars", "exclude_selector", "target", "demand_key", "tier", "force", "request_slot")
    return {
        **{c: getattr(row, c) for c in copied},
        "status": "pending", "selectors": "\n".join(dict.fromkeys(r.selector for r in during)),
        "request_count": len(during), "requested_while_running": False,
        "first_requested_at": min((r.requested_at for r in during), default=row.last_requested_at),
        "last_requested_at": row.last_requested_at, "attempts": 0,
    }  # fmt: skip
