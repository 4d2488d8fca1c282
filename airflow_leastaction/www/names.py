"""Names a person types in a filter, resolved to the exact ids the indexed queries use.

A filter box takes part of a name (``sales`` finds ``sales_daily``): the DAG ids, task ids and catalog
tasks containing it are looked up in the catalog's task table (a few thousand rows at most, by its
indexes), and the list pages then filter on those exact values, as a link's ``dag_id=`` does. The text
itself is always one of the values, so a gate or a DAG the catalog has no row for is still found by its
full name. Matching is literal (``%`` and ``_`` are characters) and ignores case.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from airflow_leastaction.catalog.schema import task
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import gate_task_id, is_gate_task_id

#: At most this many names a partial filter stands for (the page says when it was cut).
MAX_MATCHES = 200
IN_CHUNK = 500


def _contains(col, text: str):
    return func.lower(col).contains(text.lower(), autoescape=True)


class Names:
    """Partial names to exact ones, read from the catalog's task table."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def dags(self, text: str) -> tuple[str, ...]:
        """``text`` and every DAG id of the catalog that contains it."""
        t = task.c
        stmt = select(t.dag_id).where(t.dag_id.is_not(None), _contains(t.dag_id, text)).distinct()
        return self._with(text, stmt.order_by(t.dag_id).limit(MAX_MATCHES))

    def tasks(self, text: str, dag_ids: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """``text`` and every task id containing it (in ``dag_ids`` when given), with their gates' ids."""
        t = task.c
        stmt = select(t.task_id).where(t.task_id.is_not(None), _contains(t.task_id, text))
        if dag_ids:
            stmt = stmt.where(t.dag_id.in_(dag_ids))
        found = self._with(text, stmt.distinct().order_by(t.task_id).limit(MAX_MATCHES))
        gates = tuple(gate_task_id(f) for f in found if f and not is_gate_task_id(f))
        return tuple(dict.fromkeys(found + gates))

    def catalog_tasks(self, text: str) -> tuple[int, ...]:
        """Catalog ids of the tasks whose name contains ``text``."""
        t = task.c
        stmt = select(t.id).where(_contains(t.name, text)).order_by(t.name, t.id).limit(MAX_MATCHES)
        with self.engine.connect() as conn:
            return tuple(conn.execute(stmt).scalars())

    def _with(self, text: str, stmt) -> tuple[str, ...]:
        with self.engine.connect() as conn:
            found = list(conn.execute(stmt).scalars())
        return tuple(dict.fromkeys([text, *found]))


def rows_by_identity(conn, identities: set[TaskIdentity]) -> dict[TaskIdentity, dict]:
    """The catalog rows of ``identities`` (those the catalog has), by identity."""
    names = sorted({i.name for i in identities})
    found: dict[TaskIdentity, dict] = {}
    for start in range(0, len(names), IN_CHUNK):
        for row in conn.execute(select(task).where(task.c.name.in_(names[start : start + IN_CHUNK]))).mappings():
            ident = TaskIdentity.from_row(row)
            if ident in identities:
                found[ident] = dict(row)
    return found
