"""Read queries of the dbt queue page: active rows with their batch, request outcomes over time, batches."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from airflow_leastaction.dbt.schema import ACTIVE_STATUSES, dbt_batch, dbt_queue, dbt_request_event

OUTCOMES = ("new_pending", "already_pending", "already_running")
#: How many hourly buckets the outcome chart covers, ending at the latest request.
CHART_HOURS = 24


@dataclass
class OutcomeBucket:
    hour: dt.datetime
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class QueueView:
    environments: list[str]
    environment: str | None
    active: list[dict]
    buckets: list[OutcomeBucket]
    batches: list[dict]
    events: list[dict]


class QueuePageReads:
    """The queue page's queries (the page's own shape: rows with their batch owner, hourly outcome buckets);
    all filtered by one environment and bounded. The CLI and the queue store read through
    :class:`airflow_leastaction.dbt.queue_reads.QueueReads`."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def view(self, environment: str | None, *, batches: int = 20, events: int = 50) -> QueueView:
        with self.engine.connect() as conn:
            envs = sorted(
                set(conn.execute(select(dbt_batch.c.environment).distinct()).scalars())
                | set(conn.execute(select(dbt_queue.c.environment).distinct()).scalars())
            )
            env = environment or (envs[0] if envs else None)
            if env is None:
                return QueueView(envs, None, [], [], [], [])
            return QueueView(
                envs,
                env,
                self._active(conn, env),
                self._buckets(conn, env),
                self._batches(conn, env, batches),
                self._events(conn, env, events),
            )

    def _active(self, conn, env: str) -> list[dict]:
        q, b = dbt_queue.c, dbt_batch.c
        stmt = (
            select(
                q.id,
                q.unique_id,
                q.status,
                q.tier,
                q.request_count,
                q.requested_while_running,
                q.first_requested_at,
                q.last_requested_at,
                q.batch_id,
                b.owner,
                b.heartbeat_at,
                b.claimed_at,
            )
            .select_from(dbt_queue.outerjoin(dbt_batch, b.id == q.batch_id))
            .where(q.environment == env, q.status.in_(ACTIVE_STATUSES))
            .order_by(q.status.desc(), q.last_requested_at, q.id)
            .limit(500)
        )
        return [dict(r) for r in conn.execute(stmt).mappings()]

    def _buckets(self, conn, env: str) -> list[OutcomeBucket]:
        e = dbt_request_event.c
        latest = conn.execute(select(func.max(e.requested_at)).where(e.environment == env)).scalar()
        if latest is None:
            return []
        # requested_at comes back as an aware UTC datetime; the hour grid is computed here, not in SQL,
        # so SQLite and PostgreSQL bucket identically.
        latest = _aware(latest)
        end = latest.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
        start = end - dt.timedelta(hours=CHART_HOURS)
        grid = {start + dt.timedelta(hours=i): dict.fromkeys(OUTCOMES, 0) for i in range(CHART_HOURS)}
        rows = conn.execute(
            select(e.requested_at, e.outcome).where(e.environment == env, e.requested_at >= start, e.requested_at < end)
        )
        for at, outcome in rows:
            hour = _aware(at).replace(minute=0, second=0, microsecond=0)
            if hour in grid and outcome in grid[hour]:
                grid[hour][outcome] += 1
        return [OutcomeBucket(hour, counts) for hour, counts in sorted(grid.items())]

    def _batches(self, conn, env: str, limit: int) -> list[dict]:
        b = dbt_batch.c
        stmt = select(dbt_batch).where(b.environment == env).order_by(b.claimed_at.desc(), b.id).limit(limit)
        return [dict(r) for r in conn.execute(stmt).mappings()]

    def _events(self, conn, env: str, limit: int) -> list[dict]:
        e = dbt_request_event.c
        stmt = (
            select(dbt_request_event)
            .where(e.environment == env)
            .order_by(e.requested_at.desc(), e.id.desc())
            .limit(limit)
        )
        return [dict(r) for r in conn.execute(stmt).mappings()]


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
