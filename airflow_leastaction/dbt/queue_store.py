"""The dbt queue store: one method per queue operation, every statement parameterized.

Enqueue is one upsert on the partial unique index of active rows (PostgreSQL and SQLite both support
``INSERT ... ON CONFLICT (...) WHERE ... DO UPDATE ... RETURNING``), plus the append-only events, in one
transaction. Claims lock candidates with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite every write
transaction starts with ``BEGIN IMMEDIATE`` and so runs alone.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.engine import get_engine, resolve_url
from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.dbt.planner import PlannedModel
from airflow_leastaction.dbt.policy import (
    BatchKey,
    Candidate,
    ModelOutcome,
    Outcome,
    TierPolicy,
    outcome_after_upsert,
    row_status_after,
)
from airflow_leastaction.dbt.queue_reads import QueueReads, summarize
from airflow_leastaction.dbt.queue_recovery import QueueRecovery, hold_lease
from airflow_leastaction.dbt.queue_sql import (
    PG_ENQUEUE,
    event_rows,
    merge_rows,
    merge_upsert,
    pg_enqueue_params,
)
from airflow_leastaction.dbt.queue_transactions import QueueTransactions
from airflow_leastaction.dbt.schema import (
    ACTIVE_STATUSES,
    dbt_batch,
    dbt_queue,
    dbt_request,
    dbt_request_event,
)
from airflow_leastaction.exceptions import DbtLeaseLostError

q = dbt_queue.c
#: Candidates the claim looks at per call; the rest wait for the next claim.
CLAIM_WINDOW = 2000


@dataclass(frozen=True)
class EnqueueResult:
    request_id: str
    outcomes: dict[str, Outcome]  # unique id -> outcome

    def by_outcome(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {o.value: [] for o in Outcome}
        for uid, outcome in sorted(self.outcomes.items()):
            out[outcome.value].append(uid)
        return out


@dataclass(frozen=True)
class ClaimedRow:
    id: int
    unique_id: str
    fqn: str
    tier: str


@dataclass(frozen=True)
class Batch:
    id: str
    key: BatchKey
    owner: str
    rows: tuple[ClaimedRow, ...]

    @property
    def selection(self) -> list[str]:
        return [r.fqn for r in self.rows]


class QueueStore(QueueReads, QueueRecovery):
    """Queue operations on the catalog database. Not a catalog store: it holds its own transactions."""

    def __init__(self, engine: Engine | None = None, *, conn_id: str | None = None):
        if engine is None:
            engine = get_engine(resolve_url(conn_id))
        self.engine = engine
        self.transactions = QueueTransactions(engine)
        self._insert = (postgresql if self.engine.dialect.name == "postgresql" else sqlite).insert
        self._merge = merge_upsert(self.engine.dialect.name)

    # -- demand -------------------------------------------------------------------------------------
    def enqueue(
        self,
        key: BatchKey,
        models: Sequence[PlannedModel],
        selector: str,
        *,
        requested_by: str | None = None,
        excluded_count: int = 0,
        now: dt.datetime | None = None,
    ) -> EnqueueResult:
        """Merge a request for ``models`` into the active queue; record the request and one event per model.

        A request with no models (everything excluded) is recorded as a no-op.
        """
        now = now or utcnow()
        return self.transactions.retrying(
            lambda: self._enqueue(key, models, selector, requested_by, excluded_count, now)
        )

    def _enqueue(self, key, models, selector, requested_by, excluded_count, now) -> EnqueueResult:
        request_id = uuid.uuid4().hex
        unique = {m.unique_id: m for m in models}
        # Sorted rows: concurrent producers lock shared rows in the same order and cannot deadlock.
        ordered = [unique[u] for u in sorted(unique)]
        with self.transactions.write() as conn:
            if ordered and conn.dialect.name == "postgresql":
                params = pg_enqueue_params(key, ordered, selector, request_id, requested_by, excluded_count, now)
                returned = conn.execute(PG_ENQUEUE, params).all()
            else:
                noop = f"all {excluded_count} model(s) excluded ({key.exclusions}); nothing to build"
                conn.execute(insert(dbt_request).values(
                    id=request_id, environment=key.environment, selector=selector,
                    status="queued" if ordered else "noop", model_count=len(ordered),
                    excluded_count=excluded_count, message=None if ordered else noop,
                    requested_by=requested_by, requested_at=now,
                ))  # fmt: skip
                if not ordered:
                    return EnqueueResult(request_id, {})
                returned = conn.execute(self._merge, merge_rows(key, ordered, selector, now)).all()
                events = event_rows(request_id, key.environment, selector, returned, requested_by, now)
                conn.execute(insert(dbt_request_event), events)
        return EnqueueResult(
            request_id, {r.unique_id: outcome_after_upsert(r.request_count, r.status) for r in returned}
        )

    def record_planning_failure(
        self, environment: str, selector: str, message: str, *, requested_by: str | None = None
    ) -> str:
        """Record a request whose selector could not be planned (nothing was queued)."""
        request_id = uuid.uuid4().hex
        with self.transactions.write() as conn:
            conn.execute(
                insert(dbt_request).values(
                    id=request_id,
                    environment=environment,
                    selector=selector,
                    status="planning_failed",
                    model_count=0,
                    excluded_count=0,
                    message=message,
                    requested_by=requested_by,
                    requested_at=utcnow(),
                )
            )
        return request_id

    # -- claims -------------------------------------------------------------------------------------
    def candidates(self, conn: Connection, environment: str) -> list[Candidate]:
        """Pending rows as the batch planner sees them (read without locks).

        A model's last build is its newest done row (a pass owed a follow-up is one too); the tier's minimum
        interval counts from it. An active row with a ``finished_at`` is one an earlier release sent back to
        pending after its build: that build counts as well.
        """
        done = dbt_queue.alias("done")
        built = (done.c.status == "done") | (done.c.status.in_(ACTIVE_STATUSES) & done.c.finished_at.isnot(None))
        last_built = (
            select(func.max(done.c.finished_at))
            .where(done.c.environment == q.environment, done.c.unique_id == q.unique_id, built)
            .scalar_subquery()
        )
        stmt = (
            select(
                q.id,
                q.environment,
                q.action,
                q.mode,
                q.exclusions,
                q.tier,
                q.first_requested_at,
                last_built.label("last_built_at"),
            )
            .where(q.environment == environment, q.status == "pending")
            .order_by(q.first_requested_at, q.id)
            .limit(CLAIM_WINDOW)
        )
        return [
            Candidate(
                r.id,
                BatchKey(r.environment, r.action, r.mode, r.exclusions),
                r.tier,
                r.first_requested_at,
                r.last_built_at,
            )
            for r in conn.execute(stmt)
        ]

    def claim(
        self,
        environment: str,
        owner: str,
        policy: TierPolicy,
        *,
        max_size: int = 100,
        airflow_ti: str | None = None,
        now: dt.datetime | None = None,
    ) -> Batch | None:
        """Claim one compatible batch of eligible pending rows; None when nothing is eligible.

        The claim refreshes ``owner``'s lease in its own transaction and raises
        :class:`~airflow_leastaction.exceptions.DbtLeaseLostError` when another worker holds it: a worker
        that lost the environment never claims next to its new owner.
        """
        now = now or utcnow()
        return self.transactions.retrying(lambda: self._claim(environment, owner, policy, max_size, airflow_ti, now))

    def _claim(self, environment, owner, policy, max_size, airflow_ti, now) -> Batch | None:
        with self.transactions.write() as conn:
            if not hold_lease(conn, environment, owner, now):
                raise DbtLeaseLostError(environment, owner)
            chosen = policy.plan_batch(self.candidates(conn, environment), now, max_size)
            if not chosen:
                return None
            # Lock only the chosen rows, in the producers' lock order; a row a producer holds right now is
            # skipped and waits for the next claim.
            ids = (
                conn.execute(
                    select(q.id)
                    .where(q.id.in_([c.id for c in chosen]), q.status == "pending")
                    .order_by(q.unique_id)
                    .with_for_update(skip_locked=True)
                )
                .scalars()
                .all()
            )
            if not ids:
                return None
            batch_id = uuid.uuid4().hex
            conn.execute(
                update(dbt_queue).where(q.id.in_(ids), q.status == "pending").values(
                    status="running", batch_id=batch_id, requested_while_running=False,
                    attempts=q.attempts + 1)
            )  # fmt: skip
            rows = conn.execute(
                select(q.id, q.unique_id, q.fqn, q.tier).where(q.batch_id == batch_id).order_by(q.unique_id)
            ).all()
            key = chosen[0].key
            conn.execute(insert(dbt_batch).values(
                id=batch_id, environment=environment, action=key.action, mode=key.mode,
                exclusions=key.exclusions,
                owner=owner, status="running", selection=" ".join(r.fqn for r in rows), model_count=len(rows),
                claimed_at=now, heartbeat_at=now, invocations=0, airflow_ti=airflow_ti,
            ))  # fmt: skip
        return Batch(batch_id, key, owner, tuple(ClaimedRow(r.id, r.unique_id, r.fqn, r.tier) for r in rows))

    def next_eligible(self, environment: str, policy: TierPolicy) -> dt.datetime | None:
        with self.engine.connect() as conn:
            return policy.next_eligible(self.candidates(conn, environment), utcnow())

    def heartbeat(self, batch_id: str, owner: str, *, now: dt.datetime | None = None) -> bool:
        """Refresh a running batch's heartbeat; False when the batch is no longer this owner's."""
        with self.transactions.write() as conn:
            res = conn.execute(
                update(dbt_batch)
                .where(dbt_batch.c.id == batch_id, dbt_batch.c.owner == owner, dbt_batch.c.status == "running")
                .values(heartbeat_at=now or utcnow())
            )
            return res.rowcount == 1

    def finish(
        self,
        batch: Batch,
        outcomes: Mapping[str, ModelOutcome],
        *,
        status: str,
        invocations: int,
        exit_code: int | None,
        message: str | None,
        messages: Mapping[str, str] | None = None,
        max_attempts: int = 3,
        now: dt.datetime | None = None,
    ) -> dict[str, str]:
        """Settle a batch: finished rows become history; the rest, and rows owed a follow-up, go pending.

        Returns unique id -> the row's new status. Rows recovery already took back are left alone.
        """
        now = now or utcnow()
        return self.transactions.retrying(
            lambda: self._finish(batch, outcomes, status, invocations, exit_code, message, messages, max_attempts, now)
        )

    def _finish(self, batch, outcomes, status, invocations, exit_code, message, messages, max_attempts, now):
        messages = messages or {}
        settled = {}
        with self.transactions.write() as conn:
            rows = conn.execute(
                select(dbt_queue)
                .where(q.batch_id == batch.id, q.status == "running")
                .order_by(q.unique_id)  # the producers' lock order: no deadlock with a concurrent enqueue
                .with_for_update()
            ).all()
            claimed_at = conn.execute(select(dbt_batch.c.claimed_at).where(dbt_batch.c.id == batch.id)).scalar()
            for row in rows:
                outcome = outcomes.get(row.unique_id, ModelOutcome.NOT_RUN)
                after = row_status_after(outcome, row.requested_while_running, row.attempts, max_attempts)
                row_message = messages.get(row.unique_id)
                if outcome is ModelOutcome.NOT_RUN and after.status == "failed":
                    row_message = f"not finished after {row.attempts} attempt(s); giving up"
                values = {"status": after.status, "outcome": outcome.value, "message": row_message}
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
            conn.execute(
                update(dbt_batch)
                .where(dbt_batch.c.id == batch.id, dbt_batch.c.status == "running")
                .values(
                    status=status,
                    finished_at=now,
                    invocations=invocations,
                    exit_code=exit_code,
                    message=(message or "")[-4000:] or None,
                )
            )
        return settled


def follow_up_row(conn: Connection, row, claimed_at: dt.datetime | None) -> dict:
    """The pending row a pass owes when requests arrived while it ran: it holds just those requests (their
    events name the row that was running), so its counts and times are theirs."""
    e = dbt_request_event.c
    running = select(e.selector, e.requested_at).where(e.queue_id == row.id, e.outcome == Outcome.ALREADY_RUNNING.value)
    during = conn.execute(running.where(e.requested_at >= claimed_at).order_by(e.id)).all() if claimed_at else []
    # Stamped by the producers' clocks: when one ran behind the claim's, every request made while this row
    # was running (in this claim or an unfinished earlier one) moves to the follow-up.
    during = during or conn.execute(running.order_by(e.id)).all()
    return {
        "environment": row.environment, "unique_id": row.unique_id, "fqn": row.fqn,
        "materialized": row.materialized, "action": row.action, "mode": row.mode, "exclusions": row.exclusions,
        "tier": row.tier, "status": "pending", "selectors": "\n".join(dict.fromkeys(r.selector for r in during)),
        "request_count": len(during), "requested_while_running": False,
        "first_requested_at": min((r.requested_at for r in during), default=row.last_requested_at),
        "last_requested_at": row.last_requested_at, "attempts": 0,
    }  # fmt: skip


__all__ = ["Batch", "ClaimedRow", "EnqueueResult", "QueueStore", "summarize"]
