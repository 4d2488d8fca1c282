"""A drain's owner as Airflow knows it: the task instance that runs it, named in the queue's rows.

A drain task claims batches under a worker name that starts with its task instance's hash (every try of
one task instance shares it), records the task instance in each batch it owns, and when a batch's worker
has gone silent, asks Airflow whether that task instance is still alive before taking the batch over.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from airflow_leastaction.states import ALIVE_STATES
from airflow_leastaction.version_compat import supervisor_task_states


def ti_identity(context) -> str:
    """``dag|run|task|map_index``: how the queue names the task instance that asked or drains."""
    ti = context["ti"]
    return f"{ti.dag_id}|{ti.run_id}|{ti.task_id}|{ti.map_index}"


def same_task_prefix(ident: str) -> str:
    """The start of the worker name of every try of one task instance (a hash: names are short columns)."""
    return f"ti-{hashlib.sha256(ident.encode()).hexdigest()[:16]}:"


def airflow_task_alive(batch: Mapping) -> bool | None:
    """Ask Airflow whether the task instance that owns a stale batch is still alive (None: cannot tell)."""
    ident = batch.get("airflow_ti")
    if not ident:
        return None
    try:
        dag_id, run_id, task_id, map_index = ident.split("|")
        states = supervisor_task_states(dag_id=dag_id, task_ids=[task_id], run_ids=[run_id], map_index=int(map_index))
    except Exception:  # outside a task (CLI) or the API is unreachable: fall back to the heartbeat alone
        return None
    found = [s for per_run in (states or {}).values() for s in (per_run or {}).values()]
    return any(str(s) in ALIVE_STATES for s in found) if found else None
