"""Counting every statement an engine sends (SQLAlchemy ``before_cursor_execute``), unfiltered, and the
connections taken from its pool."""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager

from sqlalchemy import event


class StatementCounter:
    """Every statement sent through ``engine`` while entered, attributed to the catalog read running on
    the sending thread (see :meth:`attribute`), or to ``None`` when no read is running there."""

    def __init__(self, engine):
        self.engine = engine
        self.by_read: Counter = Counter()
        self.statements: list[str] = []
        #: Connections checked out of the engine's pool.
        self.checkouts = 0
        self._local = threading.local()
        self._lock = threading.Lock()

    def _count(self, conn, cursor, statement, parameters, context, executemany):
        with self._lock:
            self.by_read[getattr(self._local, "read", None)] += 1
            self.statements.append(statement)

    def _checkout(self, *_):
        with self._lock:
            self.checkouts += 1

    @property
    def total(self) -> int:
        return sum(self.by_read.values())

    def attribute(self, cls, name: str, monkeypatch, label=None) -> None:
        """Attribute the statements of ``cls.name`` (a store read) to ``name`` while it runs, or to
        ``label(obj)`` of the object it runs on."""
        original = getattr(cls, name)
        local = self._local

        def read(store, *args, **kwargs):
            local.read = name if label is None else label(store)
            try:
                return original(store, *args, **kwargs)
            finally:
                local.read = None

        monkeypatch.setattr(cls, name, read)

    def __enter__(self):
        event.listen(self.engine, "before_cursor_execute", self._count)
        event.listen(self.engine.pool, "checkout", self._checkout)
        return self

    def __exit__(self, *exc):
        event.remove(self.engine, "before_cursor_execute", self._count)
        event.remove(self.engine.pool, "checkout", self._checkout)


@contextmanager
def counting(engine):
    with StatementCounter(engine) as counter:
        yield counter
