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
from airflow_leastaction.dbt.planner import PlannedModel
from airflow_leastaction.dbt.policy import (
    BatchKey,
    Candidate,
    ModelOutcome,
    Outcome,
    TierPolicy,
    outcome_after_upsert,
)
from airflow_leastaction.dbt.queue_clock import utcnow
from airflow_leastaction.dbt.queue_reads import QueueReads, summarize
from airflow_leastaction.dbt.queue_recovery import QueueRecovery, hold_lease
from airflow_leastaction.dbt.queue_settle import REUSED, PassRecord, settle_rows
from airflow_leastaction.dbt.queue_sql import (
    PG_ENQUEUE,
    event_rows,
    key_columns,
    key_of,
    merge_rows,
    merge_upsert,
    pg_enqueue_params,
)
from airflow_leastaction.dbt.queue_transactions import QueueTransactions
from airflow_leastaction.dbt.schema import (
    ACTIVE_STATUSES,
    BatchStatus,
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
    force: bool = False  # a request asked to build whatever the inputs
    request_slot: dt.datetime | None = None  # the newest slot its requests asked for


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
        force: bool = False,
        slot: dt.datetime | None = None,
        now: dt.datetime | None = None,
    ) -> EnqueueResult:
        """Merge a request for ``models`` into the active queue; record the request and one event per model.

        A request with no models (everything excluded) is recorded as a no-op. ``force`` builds the models
        on their next pass whatever their inputs; ``slot`` is the interval the request is for (the catalog
        slot the models' pass completes, the newest of those merged).
        """
        now = now or utcnow()
        return self.transactions.retrying(
            lambda: self._enqueue(key, models, selector, requested_by, excluded_count, now, force, slot)
        )

    def _enqueue(self, key, models, selector, requested_by, excluded_count, now, force, slot) -> EnqueueResult:
        request_id = uuid.uuid4().hex
        unique = {m.unique_id: m for m in models}
        # Sorted rows: concurrent producers lock shared rows in the same order and cannot deadlock.
        ordered = [unique[u] for u in sorted(unique)]
        with self.transactions.write() as conn:
            if ordered and conn.dialect.name == "postgresql":
                params = pg_enqueue_params(
                    key, ordered, selector, request_id, requested_by, excluded_count, now, force=force, slot=slot
                )
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
                returned = conn.execute(
                    self._merge, merge_rows(key, ordered, selector, now, force=force, slot=slot)
                ).all()
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

        A model's last build is its newest done row that ran dbt (a pass that reused an earlier build is
        none); the tier's minimum interval counts from it. An active row with a ``finished_at`` is one an
        earlier release sent back to pending after its build: that build counts as well.
        """
        done = dbt_queue.alias("done")
        ran_dbt = done.c.decision.is_(None) | (done.c.decision != REUSED)  # a reuse is no build
        built = ((done.c.status == "done") & ran_dbt) | (
            done.c.status.in_(ACTIVE_STATUSES) & done.c.finished_at.isnot(None)
        )
        last_built = (
            select(func.max(done.c.finished_at))
            .where(done.c.environment == q.environment, done.c.unique_id == q.unique_id, built)
            .scalar_subquery()
        )
        stmt = (
            select(
                q.id,
                *(q[c] for c in key_columns(BatchKey(environment))),
                q.tier,
                q.first_requested_at,
                last_built.label("last_built_at"),
            )
            .where(q.environment == environment, q.status == "pending")
            .order_by(q.first_requested_at, q.id)
            .limit(CLAIM_WINDOW)
        )
        return [Candidate(r.id, key_of(r), r.tier, r.first_requested_at, r.last_built_at) for r in conn.execute(stmt)]

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
            rows = conn.execute(
                select(q.id, q.unique_id, q.fqn, q.tier, q.force, q.request_slot)
                .where(q.id.in_(ids))
                .order_by(q.unique_id)
            ).all()
            # force stays on the row: a pass that does not finish is forced again, and a follow-up it owes is
            # forced too (at worst one build more than asked for).
            conn.execute(
                update(dbt_queue).where(q.id.in_(ids), q.status == "pending").values(
                    status="running", batch_id=batch_id, requested_while_running=False,
                    attempts=q.attempts + 1)
            )  # fmt: skip
            key = chosen[0].key
            conn.execute(insert(dbt_batch).values(
                id=batch_id, **key_columns(key),
                owner=owner, status=BatchStatus.RUNNING.value, selection=" ".join(r.fqn for r in rows),
                model_count=len(rows),
                claimed_at=now, heartbeat_at=now, invocations=0, airflow_ti=airflow_ti,
            ))  # fmt: skip
        claimed = tuple(ClaimedRow(r.id, r.unique_id, r.fqn, r.tier, r.force, r.request_slot) for r in rows)
        return Batch(batch_id, key, owner, claimed)

    def next_eligible(self, environment: str, policy: TierPolicy) -> dt.datetime | None:
        with self.engine.connect() as conn:
            return policy.next_eligible(self.candidates(conn, environment), utcnow())

    def heartbeat(self, batch_id: str, owner: str, *, now: dt.datetime | None = None) -> bool:
        """Refresh a running batch's heartbeat; False when the batch is no longer this owner's."""
        with self.transactions.write() as conn:
            res = conn.execute(
                update(dbt_batch)
                .where(
                    dbt_batch.c.id == batch_id,
                    dbt_batch.c.owner == owner,
                    dbt_batch.c.status == BatchStatus.RUNNING.value,
                )
                .values(heartbeat_at=now or utcnow())
            )
            return res.rowcount == 1

    def settle_reused(
        self, batch: Batch, passes: Mapping[str, PassRecord], *, now: dt.datetime | None = None
    ) -> dict[str, str]:
        """Settle the rows of ``batch`` that stand on an earlier build (``passes``), before the rest is built."""
        now = now or utcnow()
        outcomes = dict.fromkeys(passes, ModelOutcome.SUCCESS)

        def settle():
            with self.transactions.write() as conn:
                return settle_rows(
                    conn, batch.id, self._claimed_at(conn, batch.id), outcomes, passes=passes, messages={},
                    max_attempts=1, now=now, only=set(passes),
                )  # fmt: skip

        return self.transactions.retrying(settle)

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
        passes: Mapping[str, PassRecord] | None = None,
        reused: int = 0,
        max_attempts: int = 3,
        now: dt.datetime | None = None,
    ) -> dict[str, str]:
        """Settle a batch: finished passes become history (with their decision, ``passes``); the rest go back
        to pending; a pass requested again while it ran is owed one follow-up row.

        Returns unique id -> the row's new status. Rows recovery already took back are left alone.
        ``reused`` counts the rows :meth:`settle_reused` settled before.
        """
        now = now or utcnow()
        return self.transactions.retrying(
            lambda: self._finish(
                batch, outcomes, status, invocations, exit_code, message, messages or {}, passes or {}, reused,
                max_attempts, now,
            )
        )  # fmt: skip

    def _finish(
        self, batch, outcomes, status, invocations, exit_code, message, messages, passes, reused, max_attempts, now
    ):
        with self.transactions.write() as conn:
            settled = settle_rows(
                conn, batch.id, self._claimed_at(conn, batch.id), outcomes, passes=passes, messages=messages,
                max_attempts=max_attempts, now=now,
            )  # fmt: skip
            conn.execute(
                update(dbt_batch)
                .where(dbt_batch.c.id == batch.id, dbt_batch.c.status == BatchStatus.RUNNING.value)
                .values(
                    status=status,
                    finished_at=now,
                    invocations=invocations,
                    exit_code=exit_code,
                    message=(message or "")[-4000:] or None,
                    built_count=len(batch.rows) - reused,
                    reused_count=reused,
                )
            )
        return settled

    @staticmethod
    def _claimed_at(conn: Connection, batch_id: str) -> dt.datetime | None:
        return conn.execute(select(dbt_batch.c.claimed_at).where(dbt_batch.c.id == batch_id)).scalar()


__all__ = ["Batch", "ClaimedRow", "EnqueueResult", "QueueStore", "summarize"]
