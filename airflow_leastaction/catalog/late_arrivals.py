"""Degraded runs that re-run once what they ran without arrives (``Fallback(on_late_arrival="rerun")``).

A part of :class:`~airflow_leastaction.catalog.store.CatalogStore` (``store.late_arrivals``). A gate that
admits its task degraded writes a ``la_late_arrival`` row (``waiting``) with its MISSING decisions
(:meth:`~airflow_leastaction.catalog.audit.AuditRecords.record_decisions`). Once the run succeeded and
*every* dependency it ran without completed the slot it was awaited for (each MISSING consumption
record is stale, by :func:`~airflow_leastaction.catalog.staleness.is_stale`, the one meaning of stale), the
row is due. Whoever records such a completion claims it (``requested``, with a lease: one claimant,
however many processes see it at once; a claim whose lease expired is taken back by the next sweep) and
asks Airflow to re-run it; the row keeps the answer (``rerun`` or ``failed``), the audit of that one
re-run.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, case, exists, func, or_, select, update
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.audit import WAITING, AttemptKey
from airflow_leastaction.catalog.schema import consumption, gate_decision, late_arrival, task, task_run
from airflow_leastaction.catalog.staleness import consumed_slot, identity_text, is_stale
from airflow_leastaction.catalog.transactions import Transactions
from airflow_leastaction.gating.engine import DecisionResult

REQUESTED, RERUN, FAILED = "requested", "rerun", "failed"
#: How long a claim holds by default: past it, the claimant is taken for dead. Longer than a clear takes
#: (a few API calls of at most 30 s each, and the look at whether the run started again).
LEASE = dt.timedelta(minutes=10)


@dataclass(frozen=True)
class DueRerun:
    id: int
    dag_id: str
    run_id: str
    gate_task_id: str
    task_ids: tuple[str, ...] | None

    @property
    def to_clear(self) -> list[str] | None:
        """The task ids to clear in the run: the gate and what it admits (None: every task of the run)."""
        return None if self.task_ids is None else [self.gate_task_id, *self.task_ids]


class LateArrivals:
    """Late-arrival operations of the catalog store (``store.late_arrivals``): reads on ``engine``, claims and
    outcomes written in ``transactions``."""

    def __init__(self, engine: Engine, transactions: Transactions):
        self.engine = engine
        self.transactions = transactions

    def due(
        self, task_pk: int | None = None, slot: dt.datetime | None = None, consumer: AttemptKey | None = None
    ) -> list[DueRerun]:
        """Waiting re-runs due now: those whose run ran without slot ``slot`` of task ``task_pk`` (it just
        completed), or whose consumer ``consumer`` just succeeded; due when every dependency their run
        ran without has arrived."""
        la, touched = late_arrival.c, _touched(task_pk, slot, consumer)
        with self.engine.connect() as conn:
            rows = conn.execute(select(late_arrival).where(la.state == WAITING, touched)).mappings().all()
            return [_due(r) for r in rows if _all_arrived(conn, r)]

    def any_to_sweep(
        self,
        now: dt.datetime,
        arrivals: Sequence[tuple[int, dt.datetime]] = (),
        consumers: Sequence[AttemptKey] = (),
        everything: bool = False,
    ) -> bool:
        """Whether a sweep has a re-run to look at: a waiting one that the completions ``arrivals`` ((task pk,
        slot)) or the successes of ``consumers`` touch (any waiting one with ``everything``), or a claim whose
        lease expired by ``now``. One query, each of its terms on the state index: most completions touch
        none, and every other read of the sweep is left out then. A term of its own for each completion and
        each success, so that PostgreSQL looks up a consumer's run by its key, not through every consumption
        record an OR of them would hash."""
        la = late_arrival.c
        touched = [_touched(task_pk, slot) for task_pk, slot in arrivals]
        touched += [_touched(consumer=consumer) for consumer in consumers]
        candidates = [exists().where(la.state == REQUESTED, _expired(now))]
        if everything:
            candidates.append(exists().where(la.state == WAITING))
        else:
            candidates += [exists().where(la.state == WAITING, term) for term in touched]
        with self.engine.connect() as conn:
            return bool(conn.execute(select(or_(*candidates))).scalar())

    def due_anywhere(self) -> list[DueRerun]:
        """Every waiting re-run that is due, whatever arrived last: what a full sweep takes."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(late_arrival).where(late_arrival.c.state == WAITING)).mappings().all()
            return [_due(r) for r in rows if _all_arrived(conn, r)]

    def abandoned(self, now: dt.datetime) -> list[DueRerun]:
        """Claimed re-runs whose claim expired (its claimant died or hung): any sweep takes them back."""
        la = late_arrival.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(late_arrival).where(la.state == REQUESTED, _expired(now))).mappings().all()
            return [_due(r) for r in rows]

    def claim(self, rerun_id: int, now: dt.datetime | None = None, lease: dt.timedelta = LEASE) -> bool:
        """Take a due re-run for this process until ``now + lease``: a waiting one, or one whose claim
        expired. True for exactly one claimant."""
        now = now or dt.datetime.now(dt.UTC)
        la = late_arrival.c
        free = or_(la.state == WAITING, and_(la.state == REQUESTED, _expired(now)))
        with self.transactions.write() as conn:
            done = conn.execute(
                update(late_arrival)
                .where(la.id == rerun_id, free)
                .values(state=REQUESTED, lease_until=now + lease, updated_at=now)
            )
            return done.rowcount == 1

    def queued_before(self, rerun_id: int) -> str | None:
        """The run's ``queued_at`` recorded before the first clear was asked (None: not asked yet)."""
        with self.engine.connect() as conn:
            return conn.execute(select(late_arrival.c.queued_before).where(late_arrival.c.id == rerun_id)).scalar()

    def record_queued_before(self, rerun_id: int, queued_at: str) -> None:
        """Keep the run's ``queued_at`` as it was before the clear is asked, for a claimant that takes over."""
        with self.transactions.write() as conn:
            conn.execute(update(late_arrival).where(late_arrival.c.id == rerun_id).values(queued_before=queued_at))

    def finish(self, rerun_id: int, state: str, detail: str, now: dt.datetime | None = None) -> None:
        """Record what became of a claimed re-run: ``rerun`` (Airflow cleared it) or ``failed``, and why."""
        now = now or dt.datetime.now(dt.UTC)
        with self.transactions.write() as conn:
            conn.execute(
                update(late_arrival)
                .where(late_arrival.c.id == rerun_id)
                .values(state=state, detail=detail, lease_until=None, updated_at=now)
            )

    def newest_first(self, dag_id: str | None = None, run_ids: Sequence[str] | None = None) -> list[dict]:
        """The re-runs on late arrival, newest first (of a DAG, of some of its runs)."""
        la = late_arrival.c
        query = select(late_arrival).order_by(la.id.desc())
        if dag_id is not None:
            query = query.where(la.dag_id == dag_id)
        if run_ids is not None:
            query = query.where(la.run_id.in_(list(run_ids)))
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]


def _touched(task_pk: int | None = None, slot: dt.datetime | None = None, consumer: AttemptKey | None = None):
    """A late-arrival row's run ran without slot ``slot`` of task ``task_pk``, or it is ``consumer``'s run
    and ran without something."""
    la, c = late_arrival.c, consumption.c
    ran_without = [
        c.dag_id == la.dag_id,
        c.run_id == la.run_id,
        c.result == DecisionResult.MISSING.value,
        # Its gate's decision: tied to the consumption record and the late-arrival row of the enclosing queries
        # (SQLAlchemy correlates one level up by itself, and would match any late-arrival row's gate).
        exists()
        .where(gate_decision.c.id == c.decision_id, gate_decision.c.task_id == la.gate_task_id)
        .correlate(late_arrival, consumption),
    ]
    if task_pk is not None:
        # The task it named, or its identity when it named none (it had never reported).
        identity = select(identity_text(task)).where(task.c.id == task_pk).scalar_subquery()
        named = or_(c.upstream_task_pk == task_pk, and_(c.upstream_task_pk.is_(None), c.upstream_identity == identity))
        return exists().where(*ran_without, named, c.upstream_slot == slot)
    return and_(la.dag_id == consumer.dag_id, la.run_id == consumer.run_id, exists().where(*ran_without))


def _expired(now: dt.datetime):
    """A claim whose lease ran out by ``now`` (or that has none): its claimant is taken for dead."""
    return or_(late_arrival.c.lease_until.is_(None), late_arrival.c.lease_until < now)


def _due(row) -> DueRerun:
    task_ids = tuple(json.loads(row["task_ids"])) if row["task_ids"] is not None else None
    return DueRerun(row["id"], row["dag_id"], row["run_id"], row["gate_task_id"], task_ids)


def _all_arrived(conn: Connection, row) -> bool:
    """Whether the run of ``row`` consumed MISSING records, each now stale (its slot arrived since)."""
    c, r = consumption.c, task_run.c
    missing = and_(
        c.dag_id == row["dag_id"],
        c.run_id == row["run_id"],
        c.result == DecisionResult.MISSING.value,
        exists().where(gate_decision.c.id == c.decision_id, gate_decision.c.task_id == row["gate_task_id"]),
    )
    arrived = and_(r.id.is_not(None), is_stale(task_run))
    total, done = conn.execute(
        select(func.count(), func.coalesce(func.sum(case((arrived, 1), else_=0)), 0))
        .select_from(consumption.outerjoin(task_run, consumed_slot(task_run)))
        .where(missing)
    ).one()
    return total > 0 and done == total
