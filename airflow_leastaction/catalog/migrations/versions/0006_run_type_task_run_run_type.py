"""Record the Airflow run type of each slot record, so backfill runs are told apart

Revision ID: 0006_run_type
Revises: 0004_airflow_task_names
Create Date: 2026-11-30 21:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_run_type"
down_revision = "0004_airflow_task_names"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable with no default: existing records were written without a run type and are not backfills.
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_type", sa.String(length=30), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("la_task_run", schema=None) as batch_op:
        batch_op.drop_column("run_type")
