"""The index of declared parent names: one row per (parent name, declaring task) in ``la_task_parent``,
so that the tasks naming a task as a parent (its children in the dependency graph and the DAG view, the
tasks a re-run plan reaches) are an index range per name; they were a scan of every task's declaration

Revision ID: 0014_parent_names
Revises: 0013_run_decisions
Create Date: 2026-12-05 12:00:00
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0014_parent_names"
down_revision = "0013_run_decisions"
branch_labels = None
depends_on = None

_task = sa.table("la_task", sa.column("id", sa.BigInteger()), sa.column("parents", sa.Text()))


def _names(text: str) -> set[str]:
    """The parent names of a declaration; none for one a reader would not parse either."""
    try:
        return {str(p["name"]) for p in json.loads(text)}
    except (ValueError, KeyError, TypeError):
        return set()


def upgrade() -> None:
    parent = op.create_table(
        "la_task_parent",
        sa.Column("parent_name", sa.String(length=250), nullable=False),
        sa.Column("task_pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_pk"], ["la_task.id"], name=op.f("fk_la_task_parent_task_pk_la_task"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("parent_name", "task_pk", name=op.f("pk_la_task_parent")),
    )
    with op.batch_alter_table("la_task_parent", schema=None) as batch_op:
        batch_op.create_index("ix_la_task_parent_task_pk", ["task_pk"], unique=False)
    conn = op.get_bind()
    declared = conn.execute(sa.select(_task.c.id, _task.c.parents).where(_task.c.parents.is_not(None)))
    rows = [{"parent_name": name, "task_pk": pk} for pk, text in declared for name in sorted(_names(text))]
    for start in range(0, len(rows), 10_000):
        op.bulk_insert(parent, rows[start : start + 10_000])


def downgrade() -> None:
    op.drop_table("la_task_parent")
