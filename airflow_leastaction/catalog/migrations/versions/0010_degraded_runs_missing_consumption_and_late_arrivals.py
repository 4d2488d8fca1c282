"""Degraded runs: each consumption record carries its decision's result (SATISFIED, or MISSING for a
dependency a task ran without at its fallback's deadline), and la_late_arrival records the one re-run of
a degraded run once its missing dependencies arrive

Existing consumption records were all made from SATISFIED decisions.

Revision ID: 0010_degraded_runs
Revises: 0007_change_seq
Create Date: 2026-12-02 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_degraded_runs"
down_revision = "0007_change_seq"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.add_column(sa.Column("result", sa.String(length=12), nullable=False, server_default="SATISFIED"))
    op.create_table(
        "la_late_arrival",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("run_id", sa.String(length=250), nullable=False),
        sa.Column("gate_task_id", sa.String(length=250), nullable=False),
        sa.Column("gate_attempt", sa.Integer(), nullable=False),
        sa.Column("task_ids", sa.Text(), nullable=True),
        sa.Column("downstream_slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_late_arrival")),
        sa.UniqueConstraint(
            "dag_id", "run_id", "gate_task_id", name=op.f("uq_la_late_arrival_dag_id_run_id_gate_task_id")
        ),
    )
    op.create_index("ix_la_late_arrival_state", "la_late_arrival", ["state", "dag_id", "run_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_la_late_arrival_state", table_name="la_late_arrival")
    op.drop_table("la_late_arrival")
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.drop_column("result")
