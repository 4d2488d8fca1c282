"""Early warnings before a gate's deadline: la_deadline_warning, one row per run, gate task, map index
and deadline, whose unique key makes the warning once across processes. A new, empty table: nothing
else is touched

Revision ID: 0017_deadline_warnings
Revises: 0016_rerun_lease
Create Date: 2026-12-08 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_deadline_warnings"
down_revision = "0016_rerun_lease"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "la_deadline_warning",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("run_id", sa.String(length=250), nullable=False),
        sa.Column("task_id", sa.String(length=250), nullable=False),
        sa.Column("map_index", sa.Integer(), nullable=False),
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("expected_median", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expected_p90", sa.DateTime(timezone=True), nullable=True),
        sa.Column("critical_path", sa.Text(), nullable=True),
        sa.Column("callback_outcome", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_deadline_warning")),
        sa.UniqueConstraint(
            "dag_id",
            "run_id",
            "task_id",
            "map_index",
            "deadline",
            name=op.f("uq_la_deadline_warning_dag_id_run_id_task_id_map_index_deadline"),
        ),
    )


def downgrade() -> None:
    op.drop_table("la_deadline_warning")
