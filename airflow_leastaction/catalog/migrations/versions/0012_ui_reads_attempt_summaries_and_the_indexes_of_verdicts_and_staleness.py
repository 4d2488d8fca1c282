"""UI reads: one summary row per gate attempt that recorded decisions (how many, how many met or
bypassed, when), counted from the decisions already recorded; the attempt index of the decisions ends
with their id, so an attempt's first decisions are the start of its index range; and the consumer
index of the consumption records holds what a staleness check looks up (dependency, upstream slot
record, revision), so the check reads the matching records, not the consumer's whole slot

Revision ID: 0012_ui_reads
Revises: 0007_change_seq
Create Date: 2026-12-03 18:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_ui_reads"
down_revision = "0009_asset_bridge"
branch_labels = None
depends_on = None

ATTEMPT = ["dag_id", "task_id", "run_id", "map_index", "attempt"]
CONSUMER = ["dag_id", "task_id", "downstream_slot"]
CAUGHT_UP = [*CONSUMER, "dependency", "upstream_run_pk", "upstream_revision"]


def upgrade() -> None:
    op.create_table(
        "la_gate_attempt",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("dag_id", sa.String(length=250), nullable=False),
        sa.Column("task_id", sa.String(length=250), nullable=False),
        sa.Column("run_id", sa.String(length=250), nullable=False),
        sa.Column("map_index", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("decisions", sa.Integer(), nullable=False),
        sa.Column("satisfied", sa.Integer(), nullable=False),
        sa.Column("bypassed", sa.Integer(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_gate_attempt")),
        sa.UniqueConstraint(*ATTEMPT, name=op.f("uq_la_gate_attempt_dag_id_task_id_run_id_map_index_attempt")),
    )
    columns = ", ".join(ATTEMPT)
    # Literal SQL with no value in it: the result words are the ones the gates write.
    op.execute(
        f"INSERT INTO la_gate_attempt ({columns}, decisions, satisfied, bypassed, decided_at) "
        f"SELECT {columns}, count(*), "
        "sum(CASE WHEN result = 'SATISFIED' THEN 1 ELSE 0 END), "
        "sum(CASE WHEN result = 'BYPASSED' THEN 1 ELSE 0 END), max(decided_at) "
        f"FROM la_gate_decision GROUP BY {columns}"
    )
    op.drop_index("ix_la_gate_decision_attempt", table_name="la_gate_decision")
    op.create_index("ix_la_gate_decision_attempt", "la_gate_decision", [*ATTEMPT, "id"], unique=False)
    op.drop_index("ix_la_consumption_downstream", table_name="la_consumption")
    op.create_index("ix_la_consumption_downstream", "la_consumption", CAUGHT_UP, unique=False)


def downgrade() -> None:
    op.drop_index("ix_la_consumption_downstream", table_name="la_consumption")
    op.create_index("ix_la_consumption_downstream", "la_consumption", CONSUMER, unique=False)
    op.drop_index("ix_la_gate_decision_attempt", table_name="la_gate_decision")
    op.create_index("ix_la_gate_decision_attempt", "la_gate_decision", ATTEMPT, unique=False)
    op.drop_table("la_gate_attempt")
