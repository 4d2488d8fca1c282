"""Worker ownership and crash recovery: the environment lease and the requeue of stale batches.

Mixed into the queue store: uses its ``write()`` transaction (``BEGIN IMMEDIATE`` on SQLite) and its
dialect's ``insert`` (``self._insert``). Airflow is asked whether a silent owner's task is alive before the
transaction that may take its work, never inside it: a transaction holding the lease row or a batch's rows
does not wait on another process (and PostgreSQL ends a queue transaction idle for
:data:`~airflow_leastaction.dbt.queue_transactions.FROZEN_AFTER_MS`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping

from sqlalchemy import false, select, update
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.dbt.policy import ModelOutcome
from airflow_leastaction.dbt.queue_clock import utcnow
from airflow_leastaction.dbt.queue_transactions import QueueTransactions
from airflow_leastaction.dbt.schema import BatchStatus, dbt_batch, dbt_queue, dbt_worker_lease

q = dbt_queue.c
log = logging.getLogger(__name__)


class QueueRecovery:
    """Leases and recovery, as store methods."""

    engine: Engine
    transactions: QueueTransactions

    def requeue_stale(
        self,
        environment: str,
        grace: dt.timedelta,
        *,
        is_alive: Callable[[Mapping], bool | None] | None = None,
        airflow_ti: str | None = None,
        owner: str | None = None,
        now: dt.datetime | None = None,
    ) -> list[str]:
        """Return the rows of batches whose heartbeat is older than ``grace`` to pending.

        ``is_alive(batch_row)`` may veto (True: the task running it is still alive, keep waiting). A running
        batch of the same Airflow task instance (``airflow_ti``) under another owner is an earlier try of
        this task: it is requeued at once, whatever its heartbeat. Returns the unique ids requeued.
        """
        now = now or utcnow()
        return self.transactions.retrying(
            lambda: self._requeue_stale(environment, grace, is_alive, airflow_ti, owner, now)
        )

    def _requeue_stale(self, environment, grace, is_alive, airflow_ti, owner, now) -> list[str]:
        b = dbt_batch.c
        earlier_try = (b.airflow_ti == airflow_ti) & (b.owner != owner) if airflow_ti and owner else false()
        stale_batches = select(dbt_batch).where(
            b.environment == environment,
            b.status == BatchStatus.RUNNING.value,
            (b.heartbeat_at < now - grace) | earlier_try,
        )
        answers = None
        if is_alive is not None:
            with self.engine.connect() as conn:
                answers = {r["id"]: is_alive(r) for r in conn.execute(stale_batches).mappings()}
        requeued: list[str] = []
        with self.transactions.write() as conn:
            stale = conn.execute(stale_batches.with_for_update(skip_locked=True)).mappings().all()
            for batch in stale:
                mine = bool(airflow_ti) and batch["airflow_ti"] == airflow_ti
                # A batch that went silent after Airflow was asked waits for the next look.
                if not mine and answers is not None and answers.get(batch["id"], True) is True:
                    continue
                why = f"an earlier try of {airflow_ti} stopped" if mine else f"heartbeat older than {grace}"
                requeued.extend(_requeue_batch(conn, batch, why, now))
        return sorted(requeued)

    # -- worker lease -------------------------------------------------------------------------------
    def acquire_lease(
        self,
        environment: str,
        owner: str,
        grace: dt.timedelta,
        *,
        same_task: str | None = None,
        is_alive: Callable[[Mapping], bool | None] | None = None,
        now: dt.datetime | None = None,
    ) -> bool:
        """Become the environment's single worker. The lease is taken when it is free or ours; when its
        owner's name starts with ``same_task`` (an earlier try of the same Airflow task instance); or when
        its owner has been silent for ``grace`` and ``is_alive`` (asked about each of the silent owner's
        running batches) does not say its task is still alive."""
        now = now or utcnow()
        lease = dbt_worker_lease.c
        answers = self._ask_about_silent_owner(environment, grace, is_alive, now) if is_alive else None
        with self.transactions.write() as conn:
            conn.execute(
                self._insert(dbt_worker_lease)
                .values(environment=environment, owner=owner, acquired_at=now, heartbeat_at=now)
                .on_conflict_do_nothing(index_elements=["environment"])
            )
            holder = (
                conn.execute(select(dbt_worker_lease).where(lease.environment == environment).with_for_update())
                .mappings()
                .one()
            )
            if not _may_take(conn, holder, owner, grace, same_task, answers, now):
                return False
            if holder["owner"] != owner:
                log.warning("environment %r: taking the lease over from %r", environment, holder["owner"])
            conn.execute(
                update(dbt_worker_lease)
                .where(lease.environment == environment)
                .values(
                    owner=owner,
                    heartbeat_at=now,
                    acquired_at=holder["acquired_at"] if holder["owner"] == owner else now,
                )
            )
            return True

    def _ask_about_silent_owner(
        self, environment: str, grace: dt.timedelta, is_alive: Callable[[Mapping], bool | None], now: dt.datetime
    ) -> dict[str, bool | None]:
        """Ask ``is_alive`` about each running batch of the lease's owner when it has been silent for
        ``grace``, outside any transaction: {batch id: answer}."""
        with self.engine.connect() as conn:
            holder = conn.execute(
                select(dbt_worker_lease).where(dbt_worker_lease.c.environment == environment)
            ).mappings().first()  # fmt: skip
            if holder is None or holder["heartbeat_at"] >= now - grace:
                return {}
            return {r["id"]: is_alive(r) for r in conn.execute(_running_of(holder)).mappings()}

    def renew_lease(
        self,
        environment: str,
        owner: str,
        *,
        batch_id: str | None = None,
        now: dt.datetime | None = None,
    ) -> bool:
        """Refresh the lease, and the running batch's heartbeat when ``batch_id`` is given, in one
        transaction. False when the lease is another worker's or recovery took the batch back (it is
        ``abandoned``): the worker must stop. A batch this worker already settled is not a loss."""
        now = now or utcnow()
        with self.transactions.write() as conn:
            held = hold_lease(conn, environment, owner, now)
            if not held or batch_id is None:
                return held
            b = dbt_batch.c
            res = conn.execute(
                update(dbt_batch)
                .where(b.id == batch_id, b.owner == owner, b.status == BatchStatus.RUNNING.value)
                .values(heartbeat_at=now)
            )
            if res.rowcount == 1:
                return True
            status = conn.execute(select(b.status).where(b.id == batch_id)).scalar()
            return status != BatchStatus.ABANDONED.value

    def release_lease(self, environment: str, owner: str) -> None:
        lease = dbt_worker_lease.c
        with self.transactions.write() as conn:
            conn.execute(dbt_worker_lease.delete().where(lease.environment == environment, lease.owner == owner))


def hold_lease(conn: Connection, environment: str, owner: str, now: dt.datetime) -> bool:
    """Refresh the lease inside the caller's transaction; False when another worker owns it.

    The update locks the lease row until the transaction ends, so a takeover cannot interleave with it.
    """
    lease = dbt_worker_lease.c
    res = conn.execute(
        update(dbt_worker_lease).where(lease.environment == environment, lease.owner == owner).values(heartbeat_at=now)
    )
    return res.rowcount == 1


def _running_of(holder: Mapping):
    b = dbt_batch.c
    return select(dbt_batch).where(
        b.environment == holder["environment"], b.owner == holder["owner"], b.status == BatchStatus.RUNNING.value
    )


def _may_take(conn, holder, owner, grace, same_task, answers: dict | None, now) -> bool:
    """``answers``: what Airflow said of the silent owner's running batches before the transaction (None:
    no one to ask)."""
    if holder["owner"] == owner or (same_task and holder["owner"].startswith(same_task)):
        return True
    if holder["heartbeat_at"] >= now - grace:
        return False
    if answers is None:
        return True
    # The silent owner's running batches carry the Airflow task that claimed them: Airflow was asked, as
    # the requeue does, before taking the environment from a task that may only be slow to heartbeat. A
    # batch it was not asked about (the owner changed in between) counts as alive until the next look.
    running = conn.execute(_running_of(holder)).mappings().all()
    alive = [r["id"] for r in running if answers.get(r["id"], True) is True]
    if alive:
        log.info("lease owner %r is silent but Airflow says batch(es) %s are alive", holder["owner"], alive)
    return not alive


def _requeue_batch(conn: Connection, batch: Mapping, why: str, now: dt.datetime) -> list[str]:
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
            message=f"requeued: batch {batch['id']} of {batch['owner']} abandoned ({why})",
        )
    )
    conn.execute(
        update(dbt_batch)
        .where(dbt_batch.c.id == batch["id"])
        .values(status=BatchStatus.ABANDONED.value, finished_at=now, message=f"{why}; {len(uids)} model(s) requeued")
    )
    return list(uids)
