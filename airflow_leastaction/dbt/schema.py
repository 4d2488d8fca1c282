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

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table, Text, false, text

from airflow_leastaction.catalog.metadata import BigId, UtcDateTime, metadata


class RowStatus(str, enum.Enum):
    """Status of a queue row. PENDING and RUNNING are active; the others are history."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


ACTIVE_STATUSES = (RowStatus.PENDING.value, RowStatus.RUNNING.value)


class BatchStatus(enum.StrEnum):
    """Status of a batch (``la_dbt_batch.status``): RUNNING while its worker holds it, then how it ended."""

    RUNNING = "running"
    #: dbt built (or reused) every model of the batch.
    SUCCESS = "success"
    #: Some models were built, others failed.
    PARTIAL = "partial"
    #: No model was built.
    FAILED = "failed"
    #: Its worker lost the environment's lease (recovery took the batch back, or the worker saw it lost).
    ABANDONED = "abandoned"

    @classmethod
    def of(cls, built: int, asked: int) -> BatchStatus:
        """How a batch that built ``built`` of the ``asked`` models it was given ended."""
        return cls.SUCCESS if built == asked else (cls.PARTIAL if built else cls.FAILED)


class PassDecision(str, enum.Enum):
    """A finished pass's ``decision``: dbt built the model, or it stood on an earlier build (reused)."""

    BUILT = "built"
    REUSED = "reused"


DECISIONS = tuple(d.value for d in PassDecision)
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
    # The demand key: rows share one dbt command only when all of these match (see dbt/request_key.py).
    Column("action", String(20), nullable=False, default="build"),
    Column("mode", String(50), nullable=False, default="default"),
    Column("exclusions", String(500), nullable=False, default=""),
    Column("full_refresh", Boolean, nullable=False, default=False, server_default=false()),
    Column("dbt_vars", Text, nullable=False, default="", server_default=""),
    Column("exclude_selector", Text, nullable=False, default="", server_default=""),
    Column("target", String(250), nullable=False, default="", server_default=""),
    # The key's fields but the environment, hashed: the unique index of active rows is per key.
    Column("demand_key", String(64), nullable=False, default="", server_default=""),
    Column("tier", String(50), nullable=False, default="standard"),
    Column("status", String(12), nullable=False),
    Column("selectors", Text, nullable=False, default=""),  # newline-separated selectors merged in
    Column("request_count", Integer, nullable=False, default=1),
    Column("requested_while_running", Boolean, nullable=False, default=False),
    # A request asked to build whatever the inputs (kept by a pass's follow-up and by a pass retried).
    Column("force", Boolean, nullable=False, default=False, server_default=false()),
    # The newest slot among the requests merged in: the catalog slot the model's pass completes.
    Column("request_slot", UtcDateTime(), nullable=True),
    Column("first_requested_at", UtcDateTime(), nullable=False),
    Column("last_requested_at", UtcDateTime(), nullable=False),
    Column("batch_id", String(64), nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("outcome", String(40), nullable=True),  # how a finished row ended (success, test_failed, ...)
    Column("message", Text, nullable=True),
    # When the row became history (rows of an earlier release: also an active row's last build).
    Column("finished_at", UtcDateTime(), nullable=True),
    # Whether the pass ran dbt (built) or stood on an earlier build (reused), and why: the input that moved,
    # "code changed", "inputs unknown"... NULL: a pass of a command that writes nothing, or an older release.
    Column("decision", String(12), nullable=True),
    Column("reason", Text, nullable=True),
    # JSON: the code identity and the input versions the pass consumed (what the next pass compares with).
    Column("inputs", Text, nullable=True),
    # The row whose dbt build produced the model's relation as this pass left it (itself when it built).
    Column("build_ref", BigInteger, nullable=True),
    Index(
        "uq_la_dbt_queue_active",
        "environment",
        "unique_id",
        "demand_key",
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
    Column("full_refresh", Boolean, nullable=False, default=False, server_default=false()),
    Column("dbt_vars", Text, nullable=False, default="", server_default=""),
    Column("exclude_selector", Text, nullable=False, default="", server_default=""),
    Column("target", String(250), nullable=False, default="", server_default=""),
    Column("owner", String(250), nullable=False),
    Column("status", String(20), nullable=False),  # a BatchStatus
    Column("selection", Text, nullable=False),
    Column("model_count", Integer, nullable=False),
    Column("claimed_at", UtcDateTime(), nullable=False),
    Column("heartbeat_at", UtcDateTime(), nullable=False),
    Column("finished_at", UtcDateTime(), nullable=True),
    Column("invocations", Integer, nullable=False, default=0),
    Column("exit_code", Integer, nullable=True),
    Column("message", Text, nullable=True),
    # Of its models, how many dbt built and how many stood on an earlier build (NULL while running).
    Column("built_count", Integer, nullable=True),
    Column("reused_count", Integer, nullable=True),
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
