"""Catalog change sequence: each task row carries the number of its last change a gate could judge
differently, handed out by a one-row counter, so a triggerer's poller asks once per tick what changed

Existing rows start at 0 and the counter at 0: a poller that starts reads its subscriptions in full, and
every change written from now on carries a number above it.

Revision ID: 0007_change_seq
Revises: 0006_run_type
Create Date: 2026-12-01 04:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_change_seq"
down_revision = "0006_run_type"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.add_column(sa.Column("change_seq", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.create_index("ix_la_task_change_seq", ["change_seq"], unique=False)
    counter = op.create_table(
        "la_change_counter",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_change_counter")),
    )
    op.bulk_insert(counter, [{"id": 1, "seq": 0}])


def downgrade() -> None:
    op.drop_table("la_change_counter")
    with op.batch_alter_table("la_task", schema=None) as batch_op:
        batch_op.drop_index("ix_la_task_change_seq")
        batch_op.drop_column("change_seq")
