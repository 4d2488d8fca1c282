"""Degraded runs: each consumption record carries its decision's result (SATISFIED, or MISSING for a
dependency a task ran without at its fallback's deadline), and la_late_arrival records the one re-run of
a degraded run once its missing dependencies arrive; an attempt's summary counts its MISSING decisions

Existing consumption records were all made from SATISFIED decisions; the summaries count the MISSING
decisions already recorded (none, unless a catalog ran this code before it was upgraded).

Revision ID: 0010_degraded_runs
Revises: 0008_dbt_state
Create Date: 2026-12-02 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_degraded_runs"
down_revision = "0008_dbt_state"
branch_labels = None
depends_on = None

ATTEMPT = ["dag_id", "task_id", "run_id", "map_index", "attempt"]


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
    with op.batch_alter_table("la_gate_attempt", schema=None) as batch_op:
        batch_op.add_column(sa.Column("missing", sa.Integer(), nullable=False, server_default="0"))
    _count_missing_decisions()


def _count_missing_decisions() -> None:
    """Each attempt's MISSING decisions into its summary: read by the (result, time) index, so only the
    attempts that have some are touched."""
    decision, summary = (
        sa.table("la_gate_decision", *map(sa.column, [*ATTEMPT, "result"])),
        sa.table("la_gate_attempt", *map(sa.column, [*ATTEMPT, "missing"])),
    )
    conn = op.get_bind()
    keys = [decision.c[name] for name in ATTEMPT]
    counted = conn.execute(
        sa.select(*keys, sa.func.count()).where(decision.c.result == "MISSING").group_by(*keys)
    ).all()
    if counted:
        statement = (
            sa.update(summary)
            .where(*(summary.c[name] == sa.bindparam(f"k_{name}") for name in ATTEMPT))
            .values(missing=sa.bindparam("k_missing"))
        )
        conn.execute(
            statement,
            [{**{f"k_{n}": v for n, v in zip(ATTEMPT, row[:5], strict=True)}, "k_missing": row[5]} for row in counted],
        )


def downgrade() -> None:
    with op.batch_alter_table("la_gate_attempt", schema=None) as batch_op:
        batch_op.drop_column("missing")
    op.drop_index("ix_la_late_arrival_state", table_name="la_late_arrival")
    op.drop_table("la_late_arrival")
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.drop_column("result")
