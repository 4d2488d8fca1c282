"""Reading the queue: active rows, finished rows, requests, events and batches (no writes here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from airflow_leastaction.dbt.policy import Outcome
from airflow_leastaction.dbt.schema import (
    ACTIVE_STATUSES,
    dbt_batch,
    dbt_queue,
    dbt_request,
    dbt_request_event,
)

q = dbt_queue.c


class QueueReads:
    """Read-only queries, mixed into the queue store (``self.engine``)."""

    engine: Engine

    def requests(self, environment: str, *, limit: int = 100) -> list[dict]:
        r = dbt_request.c
        with self.engine.connect() as conn:
            return [
                dict(x)
                for x in conn.execute(
                    select(dbt_request)
                    .where(r.environment == environment)
                    .order_by(r.requested_at.desc(), r.id)
                    .limit(limit)
                ).mappings()
            ]

    def active_rows(self, environment: str) -> list[dict]:
        with self.engine.connect() as conn:
            return [
                dict(r)
                for r in conn.execute(
                    select(dbt_queue)
                    .where(q.environment == environment, q.status.in_(ACTIVE_STATUSES))
                    .order_by(q.unique_id)
                ).mappings()
            ]

    def history(self, environment: str, *, limit: int = 100) -> list[dict]:
        """Finished rows, newest first."""
        with self.engine.connect() as conn:
            return [
                dict(r)
                for r in conn.execute(
                    select(dbt_queue)
                    .where(q.environment == environment, q.status.notin_(ACTIVE_STATUSES))
                    .order_by(q.finished_at.desc(), q.id.desc())
                    .limit(limit)
                ).mappings()
            ]

    def events(self, environment: str, *, limit: int | None = None) -> list[dict]:
        e = dbt_request_event.c
        stmt = select(dbt_request_event).where(e.environment == environment).order_by(e.id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(stmt if limit is None else stmt.limit(limit)).mappings()]

    def outcome_counts(self, environment: str) -> dict[str, int]:
        e = dbt_request_event.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(e.outcome, func.count()).where(e.environment == environment).group_by(e.outcome)
            ).all()
        counts = {o.value: 0 for o in Outcome}
        counts.update({r[0]: r[1] for r in rows})
        return counts

    def batches(self, environment: str, *, limit: int = 50) -> list[dict]:
        b = dbt_batch.c
        with self.engine.connect() as conn:
            return [
                dict(r)
                for r in conn.execute(
                    select(dbt_batch).where(b.environment == environment).order_by(b.claimed_at.desc()).limit(limit)
                ).mappings()
            ]


def summarize(rows: Iterable[Mapping]) -> dict[str, int]:
    """Counts of active rows by status."""
    counts = {s: 0 for s in ACTIVE_STATUSES}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts
