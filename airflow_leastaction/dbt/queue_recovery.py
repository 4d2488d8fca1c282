"""Worker ownership and crash recovery: the environment lease and the requeue of stale batches.

Mixed into the queue store: uses its ``write()`` transaction (``BEGIN IMMEDIATE`` on SQLite) and its
dialect's ``insert`` (``self._insert``).
"""

from __future__ import annotations

import datetime as dt
from typing import Callable, Mapping

from sqlalchemy import case, select, update

from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.dbt.policy import ModelOutcome
from airflow_leastaction.dbt.schema import dbt_batch, dbt_queue, dbt_worker_lease

q = dbt_queue.c


class QueueRecovery:
    """Leases and recovery, as store methods."""

    def requeue_stale(
        self,
        environment: str,
        grace: dt.timedelta,
        *,
        is_alive: Callable[[Mapping], bool | None] | None = None,
        now: dt.datetime | None = None,
    ) -> list[str]:
        """Return the rows of batches whose heartbeat is older than ``grace`` to pending.

        ``is_alive(batch_row)`` may veto (True: the task running it is still alive, keep waiting).
        Returns the unique ids requeued.
        """
        now = now or utcnow()
        return self._retrying(lambda: self._requeue_stale(environment, grace, is_alive, now))

    def _requeue_stale(self, environment, grace, is_alive, now) -> list[str]:
        requeued: list[str] = []
        with self.write() as conn:
            stale = (
                conn.execute(
                    select(dbt_batch)
                    .where(
                        dbt_batch.c.environment == environment,
                        dbt_batch.c.status == "running",
                        dbt_batch.c.heartbeat_at < now - grace,
                    )
                    .with_for_update(skip_locked=True)
                )
                .mappings()
                .all()
            )
            for batch in stale:
                if is_alive is not None and is_alive(batch) is True:
                    continue
                uids = (
                    conn.execute(
                        select(q.unique_id)
                        .where(q.batch_id == batch["id"], q.status == "running")
                        .order_by(q.unique_id)
                        .with_for_update()
                    )
                    .scalars()
                    .all()
                )
                conn.execute(
                    update(dbt_queue)
                    .where(q.batch_id == batch["id"], q.status == "running")
                    .values(
                        status="pending",
                        batch_id=None,
                        outcome=ModelOutcome.NOT_RUN.value,
                        message=f"requeued: batch {batch['id']} of {batch['owner']} stopped heartbeating",
                    )
                )
                conn.execute(
                    update(dbt_batch)
                    .where(dbt_batch.c.id == batch["id"])
                    .values(
                        status="abandoned",
                        finished_at=now,
                        message=f"heartbeat older than {grace}; {len(uids)} model(s) requeued",
                    )
                )
                requeued.extend(uids)
        return sorted(requeued)

    # -- worker lease -------------------------------------------------------------------------------
    def acquire_lease(
        self, environment: str, owner: str, grace: dt.timedelta, *, now: dt.datetime | None = None
    ) -> bool:
        """Become the environment's single worker: the lease is free, ours, or silent for ``grace``."""
        now = now or utcnow()
        lease = dbt_worker_lease.c
        with self.write() as conn:
            conn.execute(
                self._insert(dbt_worker_lease)
                .values(
                    environment=environment,
                    owner=owner,
                    acquired_at=now,
                    heartbeat_at=now,
                )
                .on_conflict_do_nothing(index_elements=["environment"])
            )
            res = conn.execute(
                update(dbt_worker_lease)
                .where(
                    lease.environment == environment,
                    (lease.owner == owner) | (lease.heartbeat_at < now - grace),
                )
                .values(
                    owner=owner,
                    heartbeat_at=now,
                    acquired_at=case((lease.owner == owner, lease.acquired_at), else_=now),
                )
            )
            return res.rowcount == 1

    def renew_lease(self, environment: str, owner: str, *, now: dt.datetime | None = None) -> bool:
        lease = dbt_worker_lease.c
        with self.write() as conn:
            res = conn.execute(
                update(dbt_worker_lease)
                .where(lease.environment == environment, lease.owner == owner)
                .values(heartbeat_at=now or utcnow())
            )
            return res.rowcount == 1

    def release_lease(self, environment: str, owner: str) -> None:
        lease = dbt_worker_lease.c
        with self.write() as conn:
            conn.execute(
                dbt_worker_lease.delete().where(lease.environment == environment, lease.owner == owner)
            )
