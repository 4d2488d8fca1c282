"""dbt model queue tables, on the catalog's ``metadata`` (migrated with the catalog).

* ``la_dbt_queue``: one row per queued model identity. At most one *active* row (pending or running) per
  (environment, model) is enforced by a partial unique index; finished rows stay as history.
* ``la_dbt_request``: append-only, one row per request (one selector): queued, no-op or planning failure.
* ``la_dbt_request_event``: append-only, one row per model per request, with the merge outcome.
* ``la_dbt_batch``: one row per claimed batch (one ``dbt build`` selection).
* ``la_dbt_worker_lease``: the single owner of each environment's worker.

This module imports neither dbt nor Airflow: importing the catalog schema must stay cheap.
"""

from __future__ import annotations

import enum

from sqlalchemy import Boolean, Column, Index, Integer, String, Table, Text, text

from airflow_leastaction.catalog.metadata import BigId, UtcDateTime, metadata


class RowStatus(str, enum.Enum):
    """Status of a queue row. PENDING and RUNNING are active; the others are history."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


ACTIVE_STATUSES = (RowStatus.PENDING.value, RowStatus.RUNNING.value)
#: The partial index predicate, shared by the upsert's conflict target (same text on both databases).
ACTIVE_PREDICATE = text("status IN ('pending', 'running')")


dbt_queue = Table(
    "la_dbt_queue",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("environment", String(250), nullable=False),
    Column("unique_id", String(500), nullable=False),  # dbt's model identity, e.g. model.proj.dim_project
    Column("fqn", String(500), nullable=False),  # dotted fully qualified name: what the worker selects
    Column("materialized", String(50), nullable=False),
    # Batch compatibility: rows share one dbt selection only when all of these match.
    Column("action", String(20), nullable=False, default="build"),
    Column("mode", String(50), nullable=False, default="default"),
    Column("exclusions", String(500), nullable=False, default=""),
    Column("tier", String(50), nullable=False, default="standard"),
    Column("status", String(12), nullable=False),
    Column("selectors", Text, nullable=False, default=""),  # newline-separated selectors merged in
    Column("request_count", Integer, nullable=False, default=1),
    Column("requested_while_running", Boolean, nullable=False, default=False),
    Column("first_requested_at", UtcDateTime(), nullable=False),
    Column("last_requested_at", UtcDateTime(), nullable=False),
    Column("batch_id", String(64), nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("outcome", String(40), nullable=True),  # how a finished row ended (success, test_failed, ...)
    Column("message", Text, nullable=True),
    # When the row became history; on an active row owed a follow-up pass, when its last build finished.
    Column("finished_at", UtcDateTime(), nullable=True),
    Index(
        "uq_la_dbt_queue_active",
        "environment",
        "unique_id",
        unique=True,
        sqlite_where=ACTIVE_PREDICATE,
        postgresql_where=ACTIVE_PREDICATE,
    ),
    Index("ix_la_dbt_queue_claim", "environment", "status", "last_requested_at"),
    Index("ix_la_dbt_queue_history", "environment", "unique_id", "finished_at"),
)

dbt_request = Table(
    "la_dbt_request",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("environment", String(250), nullable=False),
    Column("selector", Text, nullable=False),
    Column("status", String(20), nullable=False),  # queued | noop | planning_failed
    Column("model_count", Integer, nullable=False, default=0),
    Column("excluded_count", Integer, nullable=False, default=0),
    Column("message", Text, nullable=True),
    Column("requested_by", String(500), nullable=True),
    Column("requested_at", UtcDateTime(), nullable=False),
    Index("ix_la_dbt_request_time", "environment", "requested_at"),
)

dbt_request_event = Table(
    "la_dbt_request_event",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("request_id", String(64), nullable=False),  # one request (one selector) -> one event per model
    Column("environment", String(250), nullable=False),
    Column("unique_id", String(500), nullable=False),
    Column("selector", Text, nullable=False),
    Column("outcome", String(20), nullable=False),  # new_pending | already_pending | already_running
    Column("queue_id", BigId, nullable=True),
    Column("requested_by", String(500), nullable=True),  # e.g. dag_id/run_id/task_id of the producer
    Column("requested_at", UtcDateTime(), nullable=False),
    Index("ix_la_dbt_request_event_time", "environment", "requested_at", "id"),
    Index("ix_la_dbt_request_event_request", "request_id"),
)

dbt_batch = Table(
    "la_dbt_batch",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("environment", String(250), nullable=False),
    Column("action", String(20), nullable=False),
    Column("mode", String(50), nullable=False),
    Column("exclusions", String(500), nullable=False),
    Column("owner", String(250), nullable=False),
    Column("status", String(20), nullable=False),  # running | success | partial | failed | abandoned
    Column("selection", Text, nullable=False),
    Column("model_count", Integer, nullable=False),
    Column("claimed_at", UtcDateTime(), nullable=False),
    Column("heartbeat_at", UtcDateTime(), nullable=False),
    Column("finished_at", UtcDateTime(), nullable=True),
    Column("invocations", Integer, nullable=False, default=0),
    Column("exit_code", Integer, nullable=True),
    Column("message", Text, nullable=True),
    # The Airflow task that ran it, so recovery can ask Airflow whether it is still alive.
    Column("airflow_ti", String(600), nullable=True),
    Index("ix_la_dbt_batch_env", "environment", "status", "heartbeat_at"),
)

dbt_worker_lease = Table(
    "la_dbt_worker_lease",
    metadata,
    Column("environment", String(250), primary_key=True),
    Column("owner", String(250), nullable=False),
    Column("acquired_at", UtcDateTime(), nullable=False),
    Column("heartbeat_at", UtcDateTime(), nullable=False),
)
