"""The decisions of one run newest first: an index on (DAG, run, time, id), so a task instance's page of
verdicts reads its run's range from the newest decision on and stops at the page's end; the task's
(time, id) range held every run of the task (PostgreSQL walked it back to the run, longer the older the
run), and the attempt index held the run's decisions out of time order (SQLite read and sorted all of
them: an attempt of 2,000 decisions cost 6 ms before its first row)

Revision ID: 0013_run_decisions
Revises: 0010_degraded_runs
Create Date: 2026-12-04 18:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0013_run_decisions"
down_revision = "0010_degraded_runs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("la_gate_decision", schema=None) as batch_op:
        batch_op.create_index("ix_la_gate_decision_run_time", ["dag_id", "run_id", "decided_at", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("la_gate_decision", schema=None) as batch_op:
        batch_op.drop_index("ix_la_gate_decision_run_time")
