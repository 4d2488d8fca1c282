"""The change sequence indexed with task names: ``ix_la_task_change_seq_name`` on ``la_task (change_seq,
name)`` replaces ``ix_la_task_change_seq``. A triggerer reads only the changed tasks its own gates watch
(``change_seq`` above its last tick and ``name`` in their names); the name in the index filters the
changed entries before any row is read. Its first column serves every read the old index served

Revision ID: 0018_change_names
Revises: 0017_deadline_warnings
Create Date: 2026-12-09 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0018_change_names"
down_revision = "0017_deadline_warnings"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.create_index("ix_la_task_change_seq_name", ["change_seq", "name"], unique=False)
        batch_op.drop_index("ix_la_task_change_seq")


def downgrade() -> None:
    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.create_index("ix_la_task_change_seq", ["change_seq"], unique=False)
        batch_op.drop_index("ix_la_task_change_seq_name")
