"""Indexes for the UI read paths: newest-first keyset pages per DAG, task and upstream; catalog by name

Revision ID: 0003_ui_indexes
Revises: 0002_dbt_queue
Create Date: 2026-11-29 18:57:40.425471
"""

from __future__ import annotations

from alembic import op

revision = "0003_ui_indexes"
down_revision = "0002_dbt_queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.create_index("ix_la_consumption_task_time", ["dag_id", "task_id", "consumed_at", "id"], unique=False)
        batch_op.create_index(
            "ix_la_consumption_upstream_time", ["upstream_task_pk", "consumed_at", "id"], unique=False
        )

    with op.batch_alter_table("la_gate_decision", schema=None) as batch_op:
        batch_op.create_index("ix_la_gate_decision_dag_time", ["dag_id", "decided_at", "id"], unique=False)
        batch_op.create_index("ix_la_gate_decision_task_time", ["dag_id", "task_id", "decided_at", "id"], unique=False)

    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.create_index("ix_la_task_name_id", ["name", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.drop_index("ix_la_task_name_id")

    with op.batch_alter_table("la_gate_decision", schema=None) as batch_op:
        batch_op.drop_index("ix_la_gate_decision_task_time")
        batch_op.drop_index("ix_la_gate_decision_dag_time")

    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.drop_index("ix_la_consumption_upstream_time")
        batch_op.drop_index("ix_la_consumption_task_time")
