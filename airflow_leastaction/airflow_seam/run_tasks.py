"""The tasks of one DAG run as the provider's waiting tasks read them from Airflow: their states, through
the supervisor (on a worker or in the triggerer), and the DAG's structure.

Below both the operators and the triggers of the run-condition model: each imports it, neither imports
the other.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

#: The task types (class names) of the tasks that wait on others of their run and start nothing by
#: themselves: the gates and the run-outcome task. Subclasses add theirs when they are defined; the names
#: of the provider's own are here, since the triggerer reads a deserialized DAG without importing them.
WAITING_TASK_TYPES = {"RunConditionGate", "DagRunGate", "RunOutcome"}


def task_states(dag_id: str, run_id: str) -> dict[str, str | None]:
    """Airflow state of every task of one run, read through the supervisor (no ORM on a worker)."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    states = RuntimeTaskInstance.get_task_states(dag_id=dag_id, run_ids=[run_id])
    return {k: (str(v) if v is not None else None) for k, v in (states.get(run_id) or {}).items()}


async def run_states(dag_id: str, run_id: str) -> dict[str, str | None]:
    """:func:`task_states` from the triggerer's event loop (the call blocks: it runs in a thread)."""
    return await sync_to_async(task_states)(dag_id, run_id)


def triggers_run_inline() -> bool:
    """True under ``dag.test()``: its in-process supervisor runs a trigger inline, blocking every other
    task of the run, so a task waiting on its own run must wait by rescheduling there instead."""
    from airflow.sdk.execution_time import task_runner

    return type(getattr(task_runner, "SUPERVISOR_COMMS", None)).__name__ == "InProcessSupervisorComms"


def run_structure(dag) -> tuple[dict[str, list[str]], list[str]]:
    """Every task's direct upstream task ids, and the ids of the waiting tasks (gates, run outcome).

    Works on the DAG as written and as Airflow deserialized it in the triggerer, where every task is a
    generic operator that names its class in ``task_type``.
    """
    upstream = {t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks}
    waiting = sorted(t.task_id for t in dag.tasks if getattr(t, "task_type", type(t).__name__) in WAITING_TASK_TYPES)
    return upstream, waiting
