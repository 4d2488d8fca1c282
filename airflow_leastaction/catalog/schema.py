"""Catalog tables, in their own ``MetaData`` (never Airflow's): see :mod:`airflow_leastaction.catalog.metadata`.

Schema changes go through the Alembic migrations in ``catalog/migrations``.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from airflow_leastaction.catalog.metadata import NAMING, BigId, UtcDateTime, metadata  # noqa: F401  (re-exported)
from airflow_leastaction.gating.engine import DecisionResult  # noqa: F401  (re-exported)
from airflow_leastaction.identity import NAME_WIDTH

task = Table(
    "la_task",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    # Identity: what a child names when it declares a parent.
    Column("name", String(NAME_WIDTH), nullable=False),
    Column("project", String(250), nullable=False),
    Column("account", String(250), nullable=False, default=""),
    Column("partition", String(250), nullable=False, default=""),
    Column("source", String(20), nullable=False, default="airflow"),  # airflow | external
    Column("cron", String(100), nullable=True),  # None: ad hoc
    Column("timezone", String(64), nullable=False, default="UTC"),
    Column("state", String(20), nullable=True),
    Column("logical_date", UtcDateTime(), nullable=True),  # interval being run, or last run
    Column("prev_interval_start", UtcDateTime(), nullable=True),  # watermark: latest completed slot
    Column("dag_id", String(250), nullable=True),
    Column("task_id", String(250), nullable=True),
    # Declared parents, as a JSON list of identities: the graph is computed from these on read.
    Column("parents", Text, nullable=True),
    Column("updated_at", UtcDateTime(), nullable=False),
    # The catalog change sequence number of the task's last change a gate could judge differently (its
    # row or its slot records): see :mod:`airflow_leastaction.catalog.changes`.
    Column("change_seq", BigInteger, nullable=False, server_default="0"),
    UniqueConstraint("name", "project", "account", "partition"),
    Index("ix_la_task_dag", "dag_id", "task_id"),
    Index("ix_la_task_updated", "updated_at"),
    # A triggerer's tick: the tasks changed after its last one (``change_seq``) among those it watches (``name``).
    Index("ix_la_task_change_seq_name", "change_seq", "name"),
)

#: The names each task declares as its parents, one row per (name, task): finds the tasks that may name a
#: given task as a parent (its children in the graph, the tasks a re-run plan reaches) without reading every
#: declaration. ``la_task.parents`` stays the declaration; a reader checks the whole identity there.
task_parent = Table(
    "la_task_parent",
    metadata,
    Column("parent_name", String(NAME_WIDTH), primary_key=True),
    Column("task_pk", BigId, ForeignKey("la_task.id", ondelete="CASCADE"), primary_key=True),
    Index("ix_la_task_parent_task_pk", "task_pk"),  # a new declaration replaces the task's rows
)

#: One row: the last catalog change sequence number handed out (see :mod:`airflow_leastaction.catalog.changes`).
change_counter = Table(
    "la_change_counter",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, nullable=False),
)

task_run = Table(
    "la_task_run",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("task_pk", BigId, ForeignKey("la_task.id", ondelete="CASCADE"), nullable=False),
    Column("slot", UtcDateTime(), nullable=False),  # interval start
    Column("state", String(20), nullable=False),
    Column("attempt", Integer, nullable=False, default=1),
    Column("run_id", String(250), nullable=True),  # the Airflow run (or external run) it came from
    # Airflow's run type (scheduled, manual, backfill...); None for external systems. Backfill runs never
    # count as another pipeline's latest run.
    Column("run_type", String(30), nullable=True),
    Column("output_revision", Integer, nullable=False, default=0),  # 0 = never completed
    Column("repair_pending", Boolean, nullable=False, default=False),
    Column("rows_written", BigInteger, nullable=True),
    # Why rows_written is NULL when its read failed (one line): HAS_DATA waits on it instead of reading "none".
    Column("rows_error", Text, nullable=True),
    Column("completion_key", String(300), nullable=True),  # idempotency of success replays
    Column("started_at", UtcDateTime(), nullable=True),
    Column("finished_at", UtcDateTime(), nullable=True),
    Column("updated_at", UtcDateTime(), nullable=False),
    # The change number of the record's last write (as ``la_task.change_seq``): an asset watcher's cursor.
    Column("change_seq", BigInteger, nullable=False, server_default="0"),
    UniqueConstraint("task_pk", "slot"),
    Index("ix_la_task_run_updated", "updated_at"),
    Index("ix_la_task_run_change_seq", "task_pk", "change_seq"),
)

#: One row per asset a deployment's watcher publishes a catalog task to (see :mod:`airflow_leastaction.assets`).
asset_bridge = Table(
    "la_asset_bridge",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    # The deployment (``[leastaction] project``) whose Airflow holds the asset: asset names are per deployment.
    Column("deployment", String(250), nullable=False),
    Column("asset_name", String(1500), nullable=False),
    Column("asset_uri", String(1500), nullable=False),
    # The catalog task published, by identity (it may not be in the catalog yet).
    Column("name", String(NAME_WIDTH), nullable=False),
    Column("project", String(250), nullable=False),
    Column("account", String(250), nullable=False, default=""),
    Column("partition", String(250), nullable=False, default=""),
    Column("key_format", String(100), nullable=False),
    # The watcher's cursor as of the last event Airflow committed: (change number, slot) of that slot record.
    Column("cursor_seq", BigInteger, nullable=True),
    Column("cursor_slot", UtcDateTime(), nullable=True),
    Column("last_revision", Integer, nullable=True),
    Column("last_emitted_at", UtcDateTime(), nullable=True),
    Column("created_at", UtcDateTime(), nullable=False),
    UniqueConstraint("deployment", "asset_name"),
    Index("ix_la_asset_bridge_task", "name", "project"),
)

gate_decision = Table(
    "la_gate_decision",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    # The downstream attempt being admitted.
    Column("dag_id", String(250), nullable=False),
    Column("task_id", String(250), nullable=False),
    Column("run_id", String(250), nullable=False),
    Column("map_index", Integer, nullable=False, default=-1),
    Column("attempt", Integer, nullable=False),
    Column("downstream_slot", UtcDateTime(), nullable=True),
    # The dependency judged: "catalog:<project>/<name>..." or "task:<task_id>".
    Column("dependency", String(600), nullable=False),
    Column("dependency_type", String(20), nullable=False, default="SUCCESS"),
    Column("upstream_task_pk", BigId, nullable=True),
    Column("upstream_run_pk", BigId, nullable=True),
    Column("upstream_slot", UtcDateTime(), nullable=True),
    Column("upstream_revision", Integer, nullable=True),
    # A MISSING dependency the catalog had no task for (never reported), or none selected (a task of the
    # same run not recorded yet): its catalog identity as ``TaskIdentity.__str__`` writes it, so that its
    # arrival is found by identity and slot (staleness.consumed_slot). NULL otherwise.
    Column("upstream_identity", String(1000), nullable=True),
    Column("result", String(12), nullable=False),
    Column("reason", Text, nullable=False),
    Column("decided_at", UtcDateTime(), nullable=False),
    # Ends with the id: an attempt's first rows are the start of its index range (PostgreSQL otherwise
    # walked the primary key from the oldest decision to find them).
    Index("ix_la_gate_decision_attempt", "dag_id", "task_id", "run_id", "map_index", "attempt", "id"),
    Index("ix_la_gate_decision_time", "decided_at", "id"),
    Index("ix_la_gate_decision_result_time", "result", "decided_at", "id"),
)

#: One row per gate attempt that recorded decisions: how they came out, counted when they were written
#: (in the same transaction), so a verdict does not count an attempt's thousands of decisions on every read.
gate_attempt = Table(
    "la_gate_attempt",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("dag_id", String(250), nullable=False),
    Column("task_id", String(250), nullable=False),
    Column("run_id", String(250), nullable=False),
    Column("map_index", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("decisions", Integer, nullable=False),
    Column("satisfied", Integer, nullable=False),
    Column("bypassed", Integer, nullable=False),
    Column("decided_at", UtcDateTime(), nullable=False),  # the attempt's last decision
    # MISSING: what an attempt admitted degraded at its fallback's deadline ran without.
    Column("missing", Integer, nullable=False, server_default="0"),
    UniqueConstraint("dag_id", "task_id", "run_id", "map_index", "attempt"),
)

consumption = Table(
    "la_consumption",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    # One decision can be consumed by several tasks a gate admits (a sensor's downstream tasks).
    Column("decision_id", BigId, ForeignKey("la_gate_decision.id"), nullable=False, index=True),
    Column("dag_id", String(250), nullable=False),
    Column("task_id", String(250), nullable=False),
    Column("run_id", String(250), nullable=False),
    Column("map_index", Integer, nullable=False, default=-1),
    Column("attempt", Integer, nullable=False),
    Column("downstream_task_pk", BigId, nullable=True),
    Column("downstream_slot", UtcDateTime(), nullable=True),
    Column("dependency", String(600), nullable=False),
    Column("upstream_task_pk", BigId, nullable=True),
    Column("upstream_run_pk", BigId, nullable=True),
    Column("upstream_slot", UtcDateTime(), nullable=True),
    Column("upstream_revision", Integer, nullable=True),
    Column("upstream_identity", String(1000), nullable=True),  # as the decision's: a MISSING one's identity
    Column("consumed_at", UtcDateTime(), nullable=False),
    # The decision's result: SATISFIED (ran with it), or MISSING (ran degraded without it: revision 0, or
    # the one its awaited slot had, is what it "consumed", so the slot's arrival makes it stale).
    Column("result", String(12), nullable=False, server_default="SATISFIED"),
    # A consumer's records of one slot, down to what a staleness check looks up (staleness.is_stale): the
    # check then reads the records that match, not every record of the consumer's slot.
    Index(
        "ix_la_consumption_downstream",
        "dag_id",
        "task_id",
        "downstream_slot",
        "dependency",
        "upstream_run_pk",
        "upstream_revision",
    ),
    Index("ix_la_consumption_upstream", "upstream_task_pk", "upstream_slot"),
    Index("ix_la_consumption_awaited", "upstream_identity", "upstream_slot"),
    Index("ix_la_consumption_time", "consumed_at", "id"),
)
#: A degraded run that re-runs once its missing dependencies arrive (``Fallback(on_late_arrival="rerun")``):
#: written when the gate admits it degraded, and the audit of that one re-run (requested, what Airflow said).
late_arrival = Table(
    "la_late_arrival",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("dag_id", String(250), nullable=False),
    Column("run_id", String(250), nullable=False),
    # The gate's attempt whose MISSING decisions the run consumed.
    Column("gate_task_id", String(250), nullable=False),
    Column("gate_attempt", Integer, nullable=False),
    # JSON list of the task ids cleared with the gate (the consumers); NULL: the whole run (a DAG's run gate).
    Column("task_ids", Text, nullable=True),
    Column("downstream_slot", UtcDateTime(), nullable=True),
    Column("state", String(12), nullable=False),  # waiting | requested | rerun | failed
    # A claim (requested) holds until then: past it, the claimant is taken for dead and any sweep takes it.
    Column("lease_until", UtcDateTime(), nullable=True),
    # The run's queued_at (Airflow's text) read before the first clear was asked: a later one means Airflow
    # cleared the run since, and the re-run is not asked again.
    Column("queued_before", String(64), nullable=True),
    Column("detail", Text, nullable=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    UniqueConstraint("dag_id", "run_id", "gate_task_id"),
    Index("ix_la_late_arrival_state", "state", "dag_id", "run_id"),
)

#: An early warning before a gate's deadline (``deadline=``, or its DAG's deadline alert): one row per run, gate
#: task, map index and deadline. The unique key makes the warning once: the one process whose insert lands
#: calls the callback (two triggerers never both warn); the row is then ``cleared`` once if the expected
#: completion comes back on time. See :mod:`airflow_leastaction.catalog.deadline_warnings`.
deadline_warning = Table(
    "la_deadline_warning",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("dag_id", String(250), nullable=False),
    Column("run_id", String(250), nullable=False),
    Column("task_id", String(250), nullable=False),  # the gate's task: the sensor, or a run condition's gate
    Column("map_index", Integer, nullable=False, default=-1),
    Column("deadline", UtcDateTime(), nullable=False),
    Column("state", String(12), nullable=False),  # warned | cleared
    Column("expected_median", UtcDateTime(), nullable=True),
    Column("expected_p90", UtcDateTime(), nullable=True),
    Column("critical_path", Text, nullable=True),  # the tasks it waits on: "a, which waits on b"
    Column("callback_outcome", Text, nullable=True),  # "called", "no callback", or the callback's error
    Column("created_at", UtcDateTime(), nullable=False),  # when it warned
    Column("updated_at", UtcDateTime(), nullable=False),
    UniqueConstraint("dag_id", "run_id", "task_id", "map_index", "deadline"),
)

#: SQLite allows 32,766 bound parameters; IN lists stay well below it.
IN_CHUNK = 30_000


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def identity_clause(identity):
    """WHERE terms selecting one task by its identity (name, project, account, partition)."""
    return (
        task.c.name == identity.name,
        task.c.project == identity.project,
        task.c.account == identity.account,
        task.c.partition == identity.partition,
    )


def in_chunks(items: list, size: int = IN_CHUNK):
    for i in range(0, len(items), size):
        yield items[i : i + size]


# Read paths of the UI pages, each newest first on (time, id) so keyset pages are index range scans.
Index("ix_la_gate_decision_dag_time", gate_decision.c.dag_id, gate_decision.c.decided_at, gate_decision.c.id)
Index(
    "ix_la_gate_decision_task_time",
    gate_decision.c.dag_id,
    gate_decision.c.task_id,
    gate_decision.c.decided_at,
    gate_decision.c.id,
)
# A task instance's verdicts: its run's decisions, newest first (migration 0013_run_decisions).
Index(
    "ix_la_gate_decision_run_time",
    gate_decision.c.dag_id,
    gate_decision.c.run_id,
    gate_decision.c.decided_at,
    gate_decision.c.id,
)
Index(
    "ix_la_consumption_task_time",
    consumption.c.dag_id,
    consumption.c.task_id,
    consumption.c.consumed_at,
    consumption.c.id,
)
Index("ix_la_consumption_upstream_time", consumption.c.upstream_task_pk, consumption.c.consumed_at, consumption.c.id)
Index("ix_la_task_name_id", task.c.name, task.c.id)

import airflow_leastaction.dbt.schema  # noqa: E402,F401  (queue tables share the catalog metadata)
