"""Slot records carry the change number of their last write, and the catalog keeps the assets its tasks
are published to, so an asset watcher resumes from one cursor

Existing records start at 0: a watcher that starts emits what is completed from then on.

Revision ID: 0009_asset_bridge
Revises: 0007_change_seq
Create Date: 2026-12-08 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_asset_bridge"
down_revision = "0007_change_seq"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("change_seq", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.create_index("ix_la_task_run_change_seq", ["task_pk", "change_seq"], unique=False)
    op.create_table(
        "la_asset_bridge",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("deployment", sa.String(length=250), nullable=False),
        sa.Column("asset_name", sa.String(length=1500), nullable=False),
        sa.Column("asset_uri", sa.String(length=1500), nullable=False),
        sa.Column("name", sa.String(length=250), nullable=False),
        sa.Column("project", sa.String(length=250), nullable=False),
        sa.Column("account", sa.String(length=250), nullable=False),
        sa.Column("partition", sa.String(length=250), nullable=False),
        sa.Column("key_format", sa.String(length=100), nullable=False),
        sa.Column("cursor_seq", sa.BigInteger(), nullable=True),
        sa.Column("cursor_slot", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_revision", sa.Integer(), nullable=True),
        sa.Column("last_emitted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_la_asset_bridge")),
        sa.UniqueConstraint("deployment", "asset_name", name=op.f("uq_la_asset_bridge_deployment_asset_name")),
    )
    op.create_index("ix_la_asset_bridge_task", "la_asset_bridge", ["name", "project"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_la_asset_bridge_task", table_name="la_asset_bridge")
    op.drop_table("la_asset_bridge")
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.drop_index("ix_la_task_run_change_seq")
        batch_op.drop_column("change_seq")
