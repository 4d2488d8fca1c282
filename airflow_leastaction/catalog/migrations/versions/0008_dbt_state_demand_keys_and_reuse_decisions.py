"""dbt queue: demand keys (command, --full-refresh, --vars, --exclude, target), and each pass's reuse decision

Active rows become unique per (environment, model, demand key): a model requested under two keys is two
rows. Existing rows get the key of what they were (their command, mode and exclusions, no flags). Each
finished pass can now say whether it was built or reused, why, what it consumed and which build it stands
on; passes of earlier releases leave those empty.

Revision ID: 0008_dbt_state
Revises: 0012_ui_reads (the newest revision when this one was written; numbers are kept as assigned)
Create Date: 2026-12-03 16:00:00
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op

revision = "0008_dbt_state"
down_revision = "0012_ui_reads"
branch_labels = None
depends_on = None

ACTIVE = sa.text("status IN ('pending', 'running')")
KEY_COLUMNS = (
    ("full_refresh", sa.Boolean(), sa.false()),
    ("dbt_vars", sa.Text(), ""),
    ("exclude_selector", sa.Text(), ""),
    ("target", sa.String(length=250), ""),
)


def _digest(action: str, mode: str, exclusions: str) -> str:
    # request_key.demand_digest of a key without flags, as it is at this revision.
    text = json.dumps([action, mode, exclusions, False, "", "", ""])
    return hashlib.sha256(text.encode()).hexdigest()


def upgrade() -> None:
    with op.batch_alter_table("la_dbt_queue", schema=None) as batch_op:
        for name, type_, default in KEY_COLUMNS:
            batch_op.add_column(sa.Column(name, type_, nullable=False, server_default=default))
        batch_op.add_column(sa.Column("demand_key", sa.String(length=64), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("force", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column("request_slot", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("decision", sa.String(length=12), nullable=True))
        batch_op.add_column(sa.Column("reason", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("inputs", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("build_ref", sa.BigInteger(), nullable=True))
    queue = sa.table(
        "la_dbt_queue", sa.column("action"), sa.column("mode"), sa.column("exclusions"), sa.column("demand_key")
    )
    conn = op.get_bind()
    keys = sa.select(queue.c.action, queue.c.mode, queue.c.exclusions).distinct()
    for action, mode, exclusions in conn.execute(keys).all():
        conn.execute(
            queue.update()
            .where(queue.c.action == action, queue.c.mode == mode, queue.c.exclusions == exclusions)
            .values(demand_key=_digest(action, mode, exclusions))
        )
    with op.batch_alter_table("la_dbt_queue", schema=None) as batch_op:
        batch_op.drop_index("uq_la_dbt_queue_active")
        batch_op.create_index(
            "uq_la_dbt_queue_active",
            ["environment", "unique_id", "demand_key"],
            unique=True,
            sqlite_where=ACTIVE,
            postgresql_where=ACTIVE,
        )
    with op.batch_alter_table("la_dbt_batch", schema=None) as batch_op:
        for name, type_, default in KEY_COLUMNS:
            batch_op.add_column(sa.Column(name, type_, nullable=False, server_default=default))
        batch_op.add_column(sa.Column("built_count", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("reused_count", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("la_dbt_batch", schema=None) as batch_op:
        for name in ("reused_count", "built_count", *(c[0] for c in reversed(KEY_COLUMNS))):
            batch_op.drop_column(name)
    with op.batch_alter_table("la_dbt_queue", schema=None) as batch_op:
        batch_op.drop_index("uq_la_dbt_queue_active")
    # Rows of one model under several keys cannot all stay active under the older index: keep the oldest.
    op.execute(
        "DELETE FROM la_dbt_queue WHERE status IN ('pending', 'running') AND id NOT IN "
        "(SELECT min(id) FROM la_dbt_queue WHERE status IN ('pending', 'running') GROUP BY environment, unique_id)"
    )
    with op.batch_alter_table("la_dbt_queue", schema=None) as batch_op:
        batch_op.create_index(
            "uq_la_dbt_queue_active", ["environment", "unique_id"], unique=True, sqlite_where=ACTIVE,
            postgresql_where=ACTIVE,
        )  # fmt: skip
        for name in ("build_ref", "inputs", "reason", "decision", "request_slot", "force", "demand_key"):
            batch_op.drop_column(name)
        for name, _, _ in reversed(KEY_COLUMNS):
            batch_op.drop_column(name)
