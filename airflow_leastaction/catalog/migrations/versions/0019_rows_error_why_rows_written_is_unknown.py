"""Why a slot's rows written are unknown: ``la_task_run.rows_error`` (nullable text). Set when the
listener could not read the count a task reported (its XCom), so a HAS_DATA dependency waits on it
instead of reading it as "no rows written"; cleared by a success with a readable count.

Revision ID: 0019_rows_error
Revises: 0018_change_names
Create Date: 2026-12-06 21:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_rows_error"
down_revision = "0018_change_names"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rows_error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.drop_column("rows_error")
