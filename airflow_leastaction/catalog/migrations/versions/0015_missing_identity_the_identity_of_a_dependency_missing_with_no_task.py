"""The identity of a dependency missing with no task: ``upstream_identity`` on decisions and consumption
records, and the (identity, slot) index of consumption records. A degraded run that ran without a
dependency the catalog had never heard of (or a task of its own run not recorded yet) had no upstream task
to match its late arrival on: it was never listed stale nor re-run. Records already written get the
identity their dependency label names, for an identity written into it (``catalog:...``); a task of the
same run (``task:...``) is named by the deployment's project, which a migration does not know: those
records stay as they were

Revision ID: 0015_missing_identity
Revises: 0014_parent_names
Create Date: 2026-12-06 02:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_missing_identity"
down_revision = "0014_parent_names"
branch_labels = None
depends_on = None

_TABLES = ("la_gate_decision", "la_consumption")
_PREFIX = "catalog:"


def upgrade() -> None:
    for name in _TABLES:
        with op.batch_alter_table(name, schema=None) as batch_op:
            batch_op.add_column(sa.Column("upstream_identity", sa.String(length=1000), nullable=True))
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.create_index("ix_la_consumption_awaited", ["upstream_identity", "upstream_slot"], unique=False)
    for name in _TABLES:
        table = sa.table(
            name,
            sa.column("dependency", sa.String()),
            sa.column("upstream_task_pk", sa.BigInteger()),
            sa.column("upstream_identity", sa.String()),
            sa.column("result", sa.String()),
        )
        named = table.c.dependency.startswith(_PREFIX, autoescape=True)
        op.execute(
            table.update()
            .where(table.c.result == "MISSING", table.c.upstream_task_pk.is_(None), named)
            .values(upstream_identity=sa.func.substr(table.c.dependency, len(_PREFIX) + 1))
        )


def downgrade() -> None:
    with op.batch_alter_table("la_consumption", schema=None) as batch_op:
        batch_op.drop_index("ix_la_consumption_awaited")
    # A plain ALTER on both backends (SQLite has one since 3.35): batch mode would copy la_gate_decision,
    # which the consumption records' foreign key refuses to drop.
    for name in _TABLES:
        op.execute(f"ALTER TABLE {name} DROP COLUMN upstream_identity")
