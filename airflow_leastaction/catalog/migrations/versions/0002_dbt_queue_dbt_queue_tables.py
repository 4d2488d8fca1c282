"""dbt queue tables

Revision ID: 0002_dbt_queue
Revises: 0001_catalog
Create Date: 2026-11-29 18:54:36.824634
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_dbt_queue"
down_revision = "0001_catalog"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "la_dbt_batch",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("environment", sa.String(length=250), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("mode", sa.String(length=50), nullable=False),
        sa.Column("exclusions", sa.String(length=500), nullable=False),
        sa.Column("owner", sa.String(length=250), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("selection", sa.Text(), nullable=False),
        sa.Column("model_count", sa.Integer(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("invocations", sa.Integer(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("airflow_ti", sa.String(length=600), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_dbt_batch")),
    )
    with op.batch_alter_table("la_dbt_batch", schema=None) as batch_op:
        batch_op.create_index("ix_la_dbt_batch_env", ["environment", "status", "heartbeat_at"], unique=False)

    op.create_table(
        "la_dbt_queue",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("environment", sa.String(length=250), nullable=False),
        sa.Column("unique_id", sa.String(length=500), nullable=False),
        sa.Column("fqn", sa.String(length=500), nullable=False),
        sa.Column("materialized", sa.String(length=50), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("mode", sa.String(length=50), nullable=False),
        sa.Column("exclusions", sa.String(length=500), nullable=False),
        sa.Column("tier", sa.String(length=50), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("selectors", sa.Text(), nullable=False),
        sa.Column("request_count", sa.Integer(), nullable=False),
        sa.Column("requested_while_running", sa.Boolean(), nullable=False),
        sa.Column("first_requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("batch_id", sa.String(length=64), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=40), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_dbt_queue")),
    )
    with op.batch_alter_table("la_dbt_queue", schema=None) as batch_op:
        batch_op.create_index("ix_la_dbt_queue_claim", ["environment", "status", "last_requested_at"], unique=False)
        batch_op.create_index("ix_la_dbt_queue_history", ["environment", "unique_id", "finished_at"], unique=False)
        batch_op.create_index(
            "uq_la_dbt_queue_active",
            ["environment", "unique_id"],
            unique=True,
            sqlite_where=sa.text("status IN ('pending', 'running')"),
            postgresql_where=sa.text("status IN ('pending', 'running')"),
        )

    op.create_table(
        "la_dbt_request",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("environment", sa.String(length=250), nullable=False),
        sa.Column("selector", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("model_count", sa.Integer(), nullable=False),
        sa.Column("excluded_count", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("requested_by", sa.String(length=500), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_dbt_request")),
    )
    with op.batch_alter_table("la_dbt_request", schema=None) as batch_op:
        batch_op.create_index("ix_la_dbt_request_time", ["environment", "requested_at"], unique=False)

    op.create_table(
        "la_dbt_request_event",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("environment", sa.String(length=250), nullable=False),
        sa.Column("unique_id", sa.String(length=500), nullable=False),
        sa.Column("selector", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("queue_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("requested_by", sa.String(length=500), nullable=True),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_dbt_request_event")),
    )
    with op.batch_alter_table("la_dbt_request_event", schema=None) as batch_op:
        batch_op.create_index("ix_la_dbt_request_event_request", ["request_id"], unique=False)
        batch_op.create_index("ix_la_dbt_request_event_time", ["environment", "requested_at", "id"], unique=False)

    op.create_table(
        "la_dbt_worker_lease",
        sa.Column("environment", sa.String(length=250), nullable=False),
        sa.Column("owner", sa.String(length=250), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("environment", name=op.f("pk_la_dbt_worker_lease")),
    )


def downgrade() -> None:
    op.drop_table("la_dbt_worker_lease")
    with op.batch_alter_table("la_dbt_request_event", schema=None) as batch_op:
        batch_op.drop_index("ix_la_dbt_request_event_time")
        batch_op.drop_index("ix_la_dbt_request_event_request")

    op.drop_table("la_dbt_request_event")
    with op.batch_alter_table("la_dbt_request", schema=None) as batch_op:
        batch_op.drop_index("ix_la_dbt_request_time")

    op.drop_table("la_dbt_request")
    with op.batch_alter_table("la_dbt_queue", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_la_dbt_queue_active",
            sqlite_where=sa.text("status IN ('pending', 'running')"),
            postgresql_where=sa.text("status IN ('pending', 'running')"),
        )
        batch_op.drop_index("ix_la_dbt_queue_history")
        batch_op.drop_index("ix_la_dbt_queue_claim")

    op.drop_table("la_dbt_queue")
    with op.batch_alter_table("la_dbt_batch", schema=None) as batch_op:
        batch_op.drop_index("ix_la_dbt_batch_env")

    op.drop_table("la_dbt_batch")
