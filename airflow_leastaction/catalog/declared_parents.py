"""Declared parents: the declaration a task's row holds (``la_task.parents``, a JSON list of identities),
reading it back, and the index of its parent names (``la_task_parent``), written with each declaration and
read to find the tasks that may name given tasks as parents.

A task's declaration is read whole when the task is. Finding a
task's *children* means the other direction: every row that names it. The index keeps one row per (parent
name, declaring task), written in the transaction that changes the declaration, so that question is an
index range per name instead of a scan of every declaration. A name is a pre-filter: the caller checks the
whole identity (name, project, account, partition) in the declaration it then reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from sqlalchemy import Select, delete, insert, select
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.schema import task, task_parent
from airflow_leastaction.identity import TaskIdentity


def declaration(parents: Sequence[TaskIdentity]) -> str:
    """The text of a declaration of ``parents``, as a task's row holds it (equal parents, equal text).

    A parent judged on the child's whole interval says so (``"coverage": "interval"``), so readers of the
    graph (expected times) wait on the slots its gate waits on; the default coverage is left unsaid.
    """
    return json.dumps([_declared(p) for p in parents], sort_keys=True)


def _declared(parent: TaskIdentity) -> dict[str, str]:
    return {**parent.as_dict(), "coverage": "interval"} if parent.coverage == "interval" else parent.as_dict()


def parse_parents(text: str | None) -> list[TaskIdentity]:
    """The declared parents of a task row (the JSON list :meth:`CatalogStore.declare_parents` writes)."""
    if not text:
        return []
    try:
        return [TaskIdentity.from_dict(p) for p in json.loads(text)]
    except (ValueError, KeyError, TypeError):
        return []  # a malformed row must not take a page or a plan down: it declares no parents


def write_parent_names(conn: Connection, task_pk: int, names: Iterable[str]) -> None:
    """Make ``names`` the parent names ``task_pk`` declares (inside the declaration's transaction)."""
    conn.execute(delete(task_parent).where(task_parent.c.task_pk == task_pk))
    rows = [{"parent_name": name, "task_pk": task_pk} for name in sorted(set(names))]
    if rows:
        conn.execute(insert(task_parent), rows)


def naming_any(names: Iterable[str]) -> Select:
    """The task rows whose declarations name one of ``names`` as a parent's name (the caller checks the
    whole identity)."""
    named = select(task_parent.c.task_pk).where(task_parent.c.parent_name.in_(sorted(set(names))))
    return select(task).where(task.c.id.in_(named))
