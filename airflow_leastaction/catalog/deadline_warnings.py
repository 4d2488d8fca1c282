"""Early warnings before a gate's deadline, as the catalog keeps them (``la_deadline_warning``).

One row per (DAG, run, gate task, map index, deadline). A gate warns by *claiming* it: an insert that only
one process's lands (the unique key; two triggerers that judge the same gate at once, a worker and a
triggerer), and only the claimant calls the callback, whose outcome it records on the row. A warning
stands (``warned``) until the expected completion comes back before the deadline: then it is ``cleared``,
once (an update from ``warned`` only). Rules: :mod:`airflow_leastaction.gating.deadline_warning`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import and_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite

from airflow_leastaction.catalog.schema import deadline_warning, in_chunks, utcnow
from airflow_leastaction.gating.deadline_warning import CLEARED, WARNED

#: Longest text kept of a callback's outcome (its error): enough for a message and the top of a traceback.
OUTCOME_WIDTH = 2000


@dataclass(frozen=True)
class WarningKey:
    """Whose warning: a gate task of one run (a mapped one's map index), for one deadline."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    deadline: dt.datetime

    def where(self):
        c = deadline_warning.c
        return and_(
            c.dag_id == self.dag_id,
            c.run_id == self.run_id,
            c.task_id == self.task_id,
            c.map_index == self.map_index,
            c.deadline == self.deadline,
        )


@dataclass(frozen=True)
class Expected:
    """What a warning records of the expectation it was made on."""

    median: dt.datetime | None
    p90: dt.datetime | None
    critical_path: str


def warning_state(store, key: WarningKey) -> str | None:
    """The recorded state of ``key``'s warning: ``warned``, ``cleared``, or None (none claimed)."""
    with store.engine.connect() as conn:
        return conn.execute(select(deadline_warning.c.state).where(key.where())).scalar()


def claim_warning(store, key: WarningKey, expected: Expected, now: dt.datetime | None = None) -> bool:
    """Claim ``key``'s warning for this process: True for exactly one claimant, however many try at once
    (the others find the row there, and say nothing)."""
    now = now or utcnow()
    with store.transactions.write() as conn:
        dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        done = conn.execute(
            dialect_insert(deadline_warning)
            .values(
                dag_id=key.dag_id,
                run_id=key.run_id,
                task_id=key.task_id,
                map_index=key.map_index,
                deadline=key.deadline,
                state=WARNED,
                expected_median=expected.median,
                expected_p90=expected.p90,
                critical_path=expected.critical_path,
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_nothing()
        )
        return done.rowcount == 1


def record_callback(store, key: WarningKey, outcome: str, now: dt.datetime | None = None) -> None:
    """What the claimant's callback did (``called``, ``no callback``, or its error), on the row."""
    with store.transactions.write() as conn:
        conn.execute(
            update(deadline_warning)
            .where(key.where())
            .values(callback_outcome=outcome[:OUTCOME_WIDTH], updated_at=now or utcnow())
        )


def clear_warning(store, key: WarningKey, expected: Expected, now: dt.datetime | None = None) -> bool:
    """Mark a standing warning back on time, with the expectation that cleared it: True for the one
    process whose update did it (a warning is cleared once)."""
    with store.transactions.write() as conn:
        done = conn.execute(
            update(deadline_warning)
            .where(key.where(), deadline_warning.c.state == WARNED)
            .values(
                state=CLEARED,
                expected_median=expected.median,
                expected_p90=expected.p90,
                critical_path=expected.critical_path,
                updated_at=now or utcnow(),
            )
        )
        return done.rowcount == 1


def warnings_of(conn, gates: Sequence[tuple[str, str, str, int]]) -> Mapping[tuple[str, str, str, int], list[dict]]:
    """The warnings of some gate task instances ((DAG, run, task, map index)), newest deadline first: one
    statement per 500 instances, on the unique key's leading columns."""
    c = deadline_warning.c
    found: dict[tuple[str, str, str, int], list[dict]] = {}
    for chunk in in_chunks(sorted(set(gates)), 500):
        rows = conn.execute(
            select(deadline_warning)
            .where(tuple_(c.dag_id, c.run_id, c.task_id, c.map_index).in_(chunk))
            .order_by(c.deadline.desc(), c.id.desc())
        ).mappings()
        for row in rows:
            found.setdefault((row["dag_id"], row["run_id"], row["task_id"], row["map_index"]), []).append(dict(row))
    return found


__all__ = [
    "Expected",
    "WarningKey",
    "claim_warning",
    "clear_warning",
    "record_callback",
    "warning_state",
    "warnings_of",
]
