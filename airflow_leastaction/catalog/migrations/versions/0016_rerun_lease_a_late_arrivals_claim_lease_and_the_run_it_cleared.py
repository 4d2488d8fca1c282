"""A late arrival's claim lease and the run it cleared: ``lease_until`` and ``queued_before`` on
``la_late_arrival``. A re-run claimed by a process that died stayed ``requested`` for ever; with a lease,
any later sweep takes it back, and the run's ``queued_at`` read before the clear tells whether the dead
claimant's clear reached Airflow (so the re-run is asked once). Rows already written get neither: a
``requested`` one without a lease is taken as expired

Revision ID: 0016_rerun_lease
Revises: 0015_missing_identity
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import Column, DateTime, String

revision = "0016_rerun_lease"
down_revision = "0015_missing_identity"
branch_labels = None
depends_on = None

_COLUMNS = ("lease_until", "queued_before")


def upgrade() -> None:
    with op.batch_alter_table("la_late_arrival", schema=None) as batch_op:
        batch_op.add_column(Column("lease_until", DateTime(timezone=True), nullable=True))
        batch_op.add_column(Column("queued_before", String(length=64), nullable=True))


def downgrade() -> None:
    for name in _COLUMNS:  # a plain ALTER on both backends, as 0015's downgrade
        op.execute(f"ALTER TABLE la_late_arrival DROP COLUMN {name}")
