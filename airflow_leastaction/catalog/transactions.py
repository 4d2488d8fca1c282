"""How a store talks to the catalog database: its write transactions and the poller's reads.

Each store holds one (``store.transactions``) instead of inheriting it; the dbt queue store holds its own
kind (:class:`airflow_leastaction.dbt.queue_transactions.QueueTransactions`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.changes import forget_marks, publish_changes


class Transactions:
    """Write transactions and poll reads on one engine."""

    def __init__(self, engine: Engine):
        self.engine = engine

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction; on SQLite it takes the write lock up front (``BEGIN IMMEDIATE``). The tasks
        its writes marked changed get their change number last, just before the commit
        (:mod:`airflow_leastaction.catalog.changes`)."""
        with self.engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                conn.info["sqlite_begin"] = "BEGIN IMMEDIATE"
            forget_marks(conn)  # the info outlives a checkout: never publish an earlier transaction's marks
            try:
                with conn.begin():
                    yield conn
                    publish_changes(conn)
            finally:
                forget_marks(conn)

    @contextmanager
    def poll_read(self) -> Iterator[Connection]:
        """A connection for the reads the triggerer's poller makes every tick: no explicit transaction on
        SQLite either, so each statement reads the latest committed state on its own (as under
        PostgreSQL's READ COMMITTED) and a tick sends its queries and nothing else."""
        with self.engine.connect() as conn:
            if conn.dialect.name != "sqlite":
                yield conn
                return
            conn.info["sqlite_begin"] = None
            try:
                yield conn
            finally:  # the info outlives this checkout: never leave the choice to the connection's next user
                if not conn.invalidated:  # a lost connection's info is cleared with it (and asking raises)
                    conn.info.pop("sqlite_begin", None)
