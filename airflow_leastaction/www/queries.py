"""What a UI request asks the catalog for: the DAGs it may see (:class:`DagScope`), a page's filters, and
the cursor that names the last row of the page before (keyset pagination, see :mod:`.reads`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Select, or_

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.www.params import MAX_ID, in_time_range


class BadCursorError(ConfigurationError):
    def __init__(self, cursor: str):
        super().__init__(f"page cursor {cursor!r} is not one this UI produced; start again from the first page")


@dataclass(frozen=True)
class Cursor:
    """The last row of a page: ``(time, id)`` for time-ordered lists."""

    at: dt.datetime
    id: int

    def encode(self) -> str:
        return f"{self.at.isoformat()}|{self.id}"

    @classmethod
    def decode(cls, text: str | None) -> Cursor | None:
        if not text:
            return None
        try:
            at, _, pk = text.rpartition("|")
            when = dt.datetime.fromisoformat(at)
            if when.tzinfo is None or not in_time_range(when) or not pk.isdigit() or len(pk) > 19:
                raise ValueError("not a cursor of this UI")
            if int(pk) > MAX_ID:
                raise ValueError("id out of range")
            return cls(when, int(pk))
        except (ValueError, OverflowError):
            raise BadCursorError(text) from None


@dataclass(frozen=True)
class DagScope:
    """The DAGs whose rows a request may see: ``dag_ids`` None means every DAG (no filter at all).

    A catalog row that belongs to no DAG (a task an external system reported) is readable by anyone who
    may read task definitions; see :mod:`airflow_leastaction.www.access`.
    """

    dag_ids: frozenset[str] | None = None

    def allows(self, dag_id: str | None) -> bool:
        return dag_id is None or self.dag_ids is None or dag_id in self.dag_ids

    def where(self, stmt: Select, col, *, no_dag_readable: bool = False) -> Select:
        """``stmt`` cut to the readable DAGs (the ids are bound parameters)."""
        if self.dag_ids is None:
            return stmt
        allowed = col.in_(sorted(self.dag_ids))
        return stmt.where(or_(allowed, col.is_(None)) if no_dag_readable else allowed)


#: Every DAG: what the CLI, the tests and a user who may read all DAGs get.
EVERY_DAG = DagScope()


@dataclass
class Page:
    rows: list
    next_cursor: str | None


@dataclass(frozen=True)
class DecisionFilter:
    """Exact values (``dag_id``...: what links and Airflow's tabs pass), or the sets a partial name typed
    in a filter box stands for (``dag_ids``..., see :mod:`airflow_leastaction.www.names`)."""

    dag_id: str | None = None
    task_id: str | None = None
    #: With ``task_id``: the task's run-condition gate, whose decisions are the task's admission too.
    gate_task_id: str | None = None
    run_id: str | None = None
    map_index: int | None = None
    result: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    dag_ids: tuple[str, ...] | None = None
    task_ids: tuple[str, ...] | None = None
    #: Part of a run id.
    run_part: str | None = None


@dataclass(frozen=True)
class ConsumptionFilter:
    dag_id: str | None = None
    task_id: str | None = None
    upstream_task_pk: int | None = None
    stale_only: bool = False
    dag_ids: tuple[str, ...] | None = None
    task_ids: tuple[str, ...] | None = None
    #: Catalog ids of the upstream tasks a partial name stands for.
    upstream_task_pks: tuple[int, ...] | None = None


@dataclass(frozen=True)
class CatalogFilter:
    search: str | None = None
    project: str | None = None
    state: str | None = None
    source: str | None = None
    dag_id: str | None = None
