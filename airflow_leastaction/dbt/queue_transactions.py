"""How queue transactions run: one writer at a time per SQLite file; on PostgreSQL, deadlock victims retried
and a frozen writer's transaction ended by the server."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from airflow_leastaction.catalog.transactions import Transactions

#: PostgreSQL's deadlock and serialization failures: the transaction is safe to run again.
RETRYABLE = frozenset({"40P01", "40001"})
RETRIES = 5
#: A queue writer that keeps its transaction open this long without sending a statement is taken as frozen
#: (a stopped process, a paused machine): PostgreSQL ends its session (``idle_in_transaction_session_timeout``),
#: its writes roll back, and the locks it held (the environment's lease, a batch's rows) go to whoever waits
#: for them, so a takeover after the grace period never waits on it for ever. A queue transaction sends its
#: statements back to back, far under this; half a minute leaves room for a process starved of CPU (5 s
#: ended a worker's claim with both cores of a machine busy), and delays a takeover by that much at most.
FROZEN_AFTER_MS = 30_000
T = TypeVar("T")
#: One writer at a time per SQLite file within a process: threads queue on a lock instead of polling
#: SQLite's busy handler (which sleeps up to 100 ms between tries).
_SQLITE_WRITERS: dict[str, threading.Lock] = {}
_SQLITE_WRITERS_GUARD = threading.Lock()


class QueueTransactions(Transactions):
    """The catalog's write transaction, tuned for many concurrent queue writers; held by the queue store."""

    @contextmanager
    def write(self) -> Iterator[Connection]:
        if self.engine.dialect.name != "sqlite":
            with super().write() as conn:
                conn.exec_driver_sql(f"SET LOCAL idle_in_transaction_session_timeout = {FROZEN_AFTER_MS}")
                yield conn
            return
        with _SQLITE_WRITERS_GUARD:
            lock = _SQLITE_WRITERS.setdefault(str(self.engine.url), threading.Lock())
        with lock, super().write() as conn:
            yield conn

    def retrying(self, transaction: Callable[[], T]) -> T:
        """Run ``transaction``, again when PostgreSQL chose it as a deadlock or serialization victim."""
        for attempt in range(1, RETRIES + 1):
            try:
                return transaction()
            except OperationalError as exc:
                if getattr(exc.orig, "pgcode", None) not in RETRYABLE or attempt == RETRIES:
                    raise
                time.sleep(random.uniform(0.005, 0.05) * attempt)
        raise AssertionError("unreachable")
