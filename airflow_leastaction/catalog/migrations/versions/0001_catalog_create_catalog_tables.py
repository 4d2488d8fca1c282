"""create catalog tables

Revision ID: 0001_catalog
Revises:
Create Date: 2026-11-29 18:45:30.748797
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_catalog"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "la_gate_decision",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("task_id", sa.String(length=250), nullable=False),
        sa.Column("run_id", sa.String(length=250), nullable=False),
        sa.Column("map_index", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("downstream_slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dependency", sa.String(length=600), nullable=False),
        sa.Column("dependency_type", sa.String(length=20), nullable=False),
        sa.Column("upstream_task_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("upstream_run_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("upstream_slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("upstream_revision", sa.Integer(), nullable=True),
        sa.Column("result", sa.String(length=12), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_gate_decision")),
    )
    with op.batch_alter_table("la_gate_decision", schema=None) as batch_op:
        batch_op.create_index(
            "ix_la_gate_decision_attempt", ["dag_id", "task_id", "run_id", "map_index", "attempt"], unique=False
        )
        batch_op.create_index("ix_la_gate_decision_result_time", ["result", "decided_at", "id"], unique=False)
        batch_op.create_index("ix_la_gate_decision_time", ["decided_at", "id"], unique=False)

    op.create_table(
        "la_task",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("project", sa.String(length=250), nullable=False),
        sa.Column("account", sa.String(length=250), nullable=False),
        sa.Column("partition", sa.String(length=250), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("cron", sa.String(length=100), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=True),
        sa.Column("logical_date", sa.DateTime(timezone=True), nullable=True),
        sa.Column("prev_interval_start", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dag_id", sa.String(length=250), nullable=True),
        sa.Column("task_id", sa.String(length=250), nullable=True),
        sa.Column("parents", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_task")),
        sa.UniqueConstraint(
            "name", "project", "account", "partition", name=op.f("uq_la_task_name_project_account_partition")
        ),
    )
    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.create_index("ix_la_task_dag", ["dag_id", "task_id"], unique=False)
        batch_op.create_index("ix_la_task_updated", ["updated_at"], unique=False)

    op.create_table(
        "la_consumption",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("decision_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("task_id", sa.String(length=250), nullable=False),
        sa.Column("run_id", sa.String(length=250), nullable=False),
        sa.Column("map_index", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("downstream_task_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("downstream_slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dependency", sa.String(length=600), nullable=False),
        sa.Column("upstream_task_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("upstream_run_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("upstream_slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("upstream_revision", sa.Integer(), nullable=True),
        sa.Column("consumed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["decision_id"], ["la_gate_decision.id"], name=op.f("fk_la_consumption_decision_id_la_gate_decision")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_consumption")),
    )
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_la_consumption_decision_id"), ["decision_id"], unique=False)
        batch_op.create_index("ix_la_consumption_downstream", ["dag_id", "task_id", "downstream_slot"], unique=False)
        batch_op.create_index("ix_la_consumption_time", ["consumed_at", "id"], unique=False)
        batch_op.create_index("ix_la_consumption_upstream", ["upstream_task_pk", "upstream_slot"], unique=False)

    op.create_table(
        "la_task_run",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("task_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("slot", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=250), nullable=True),
        sa.Column("output_revision", sa.Integer(), nullable=False),
        sa.Column("repair_pending", sa.Boolean(), nullable=False),
        sa.Column("rows_written", sa.BigInteger(), nullable=True),
        sa.Column("completion_key", sa.String(length=300), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_pk"], ["la_task.id"], name=op.f("fk_la_task_run_task_pk_la_task"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_task_run")),
        sa.UniqueConstraint("task_pk", "slot", name=op.f("uq_la_task_run_task_pk_slot")),
    )
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.create_index("ix_la_task_run_updated", ["updated_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.drop_index("ix_la_task_run_updated")

    op.drop_table("la_task_run")
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.drop_index("ix_la_consumption_upstream")
        batch_op.drop_index("ix_la_consumption_time")
        batch_op.drop_index("ix_la_consumption_downstream")
        batch_op.drop_index(batch_op.f("ix_la_consumption_decision_id"))

    op.drop_table("la_consumption")
    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.drop_index("ix_la_task_updated")
        batch_op.drop_index("ix_la_task_dag")

    op.drop_table("la_task")
    with op.batch_alter_table("la_gate_decision", schema=None) as batch_op:
        batch_op.drop_index("ix_la_gate_decision_time")
        batch_op.drop_index("ix_la_gate_decision_result_time")
        batch_op.drop_index("ix_la_gate_decision_attempt")

    op.drop_table("la_gate_decision")
