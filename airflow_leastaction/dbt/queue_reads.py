"""Reading the dbt queue: active rows, finished rows, requests, events, batches, and the queue page's view.

One read model for the queue, used by the queue store, the CLI and the UI's queue page. No writes here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.dbt.policy import Outcome
from airflow_leastaction.dbt.schema import (
    ACTIVE_STATUSES,
    DECISIONS,
    dbt_batch,
    dbt_queue,
    dbt_request,
    dbt_request_event,
)

q = dbt_queue.c
#: The request outcomes the queue page charts, in its order.
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
    """What the queue page shows of one environment."""

    environments: list[str]
    environment: str | None
    active: list[dict]
    buckets: list[OutcomeBucket]
    batches: list[dict]
    events: list[dict]
    #: The latest finished passes: built or reused, and why (the input that moved...).
    passes: list[dict] = field(default_factory=list)
    #: Passes finished today (UTC): {"built": n, "reused": n}; every reuse is a build saved.
    today: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DECISIONS, 0))


class QueueReads:
    """Read-only queries of the queue (``self.engine``); the queue store has them too."""

    engine: Engine

    def __init__(self, engine: Engine):
        self.engine = engine

    def requests(self, environment: str, *, limit: int = 100) -> list[dict]:
        r = dbt_request.c
        stmt = select(dbt_request).where(r.environment == environment).order_by(r.requested_at.desc(), r.id)
        with self.engine.connect() as conn:
            return [dict(x) for x in conn.execute(stmt.limit(limit)).mappings()]

    def active_rows(self, environment: str) -> list[dict]:
        stmt = select(dbt_queue).where(q.environment == environment, q.status.in_(ACTIVE_STATUSES))
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(stmt.order_by(q.unique_id)).mappings()]

    def history(self, environment: str, *, limit: int = 100) -> list[dict]:
        """Finished rows, newest first."""
        stmt = (
            select(dbt_queue)
            .where(q.environment == environment, q.status.notin_(ACTIVE_STATUSES))
            .order_by(q.finished_at.desc(), q.id.desc())
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(stmt).mappings()]

    def events(self, environment: str, *, limit: int | None = None, newest_first: bool = False) -> list[dict]:
        with self.engine.connect() as conn:
            return _events(conn, environment, limit, newest_first)

    def outcome_counts(self, environment: str) -> dict[str, int]:
        e = dbt_request_event.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(e.outcome, func.count()).where(e.environment == environment).group_by(e.outcome)
            ).all()
        counts = {o.value: 0 for o in Outcome}
        counts.update({r[0]: r[1] for r in rows})
        return counts

    def passes_today(self, environment: str, *, now: dt.datetime | None = None) -> dict[str, int]:
        """How many passes finished today (UTC) dbt built and how many stood on an earlier build."""
        with self.engine.connect() as conn:
            return _passes_today(conn, environment, now)

    def batches(self, environment: str, *, limit: int = 50) -> list[dict]:
        """Batches, newest claim first."""
        with self.engine.connect() as conn:
            return _batches(conn, environment, limit)

    def page(self, environment: str | None, *, batches: int = 20, events: int = 50) -> QueueView:
        """The queue page of ``environment`` (default: the first one), read on one connection."""
        with self.engine.connect() as conn:
            envs = sorted(
                set(conn.execute(select(dbt_batch.c.environment).distinct()).scalars())
                | set(conn.execute(select(q.environment).distinct()).scalars())
            )
            env = environment or (envs[0] if envs else None)
            if env is None:
                return QueueView(envs, None, [], [], [], [])
            return QueueView(
                envs,
                env,
                _active_with_batch(conn, env),
                _outcome_buckets(conn, env),
                _batches(conn, env, batches),
                _events(conn, env, events, newest_first=True),
                _passes(conn, env, events),
                _passes_today(conn, env, None),
            )


def summarize(rows: Iterable[Mapping]) -> dict[str, int]:
    """Counts of active rows by status."""
    counts = {s: 0 for s in ACTIVE_STATUSES}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def _events(conn: Connection, env: str, limit: int | None, newest_first: bool) -> list[dict]:
    e = dbt_request_event.c
    order = (e.requested_at.desc(), e.id.desc()) if newest_first else (e.id,)
    stmt = select(dbt_request_event).where(e.environment == env).order_by(*order)
    return [dict(r) for r in conn.execute(stmt if limit is None else stmt.limit(limit)).mappings()]


def _batches(conn: Connection, env: str, limit: int) -> list[dict]:
    b = dbt_batch.c
    stmt = select(dbt_batch).where(b.environment == env).order_by(b.claimed_at.desc(), b.id).limit(limit)
    return [dict(r) for r in conn.execute(stmt).mappings()]


def _passes(conn: Connection, env: str, limit: int) -> list[dict]:
    """The latest finished passes, newest first, with their decision and its reason."""
    stmt = (
        select(
            q.id,
            q.unique_id,
            q.status,
            q.outcome,
            q.decision,
            q.reason,
            q.message,
            q.batch_id,
            q.build_ref,
            q.finished_at,
        )  # fmt: skip
        .where(q.environment == env, q.status.notin_(ACTIVE_STATUSES))
        .order_by(q.finished_at.desc(), q.id.desc())
        .limit(limit)
    )
    return [dict(r) for r in conn.execute(stmt).mappings()]


def _passes_today(conn: Connection, env: str, now: dt.datetime | None) -> dict[str, int]:
    midnight = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    rows = conn.execute(
        select(q.decision, func.count())
        .where(q.environment == env, q.decision.in_(DECISIONS), q.finished_at >= midnight)
        .group_by(q.decision)
    )
    return {**dict.fromkeys(DECISIONS, 0), **{d: n for d, n in rows}}


def _active_with_batch(conn: Connection, env: str, limit: int = 500) -> list[dict]:
    """Active rows with the owner and heartbeat of the batch building them, pending rows first."""
    b = dbt_batch.c
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
        .limit(limit)
    )
    return [dict(r) for r in conn.execute(stmt).mappings()]


def _outcome_buckets(conn: Connection, env: str) -> list[OutcomeBucket]:
    """Request outcomes per hour over the CHART_HOURS hours ending at the latest request."""
    e = dbt_request_event.c
    latest = conn.execute(select(func.max(e.requested_at)).where(e.environment == env)).scalar()
    if latest is None:
        return []
    # The hour grid is computed here, not in SQL, so SQLite and PostgreSQL bucket identically.
    end = _aware(latest).replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=1)
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


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
