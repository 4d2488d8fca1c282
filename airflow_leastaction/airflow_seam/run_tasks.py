"""The tasks of one DAG run as the provider's waiting tasks read them from Airflow: their states, through
the supervisor (on a worker or in the triggerer), and the DAG's structure.

Every question about task states goes to Airflow as one ``GetTaskStates`` message, which names one DAG
and any number of its runs (Airflow 3.1 to 3.3 alike); :data:`QUESTIONS` counts the messages this process
sent. A triggerer's gates ask for all their runs of one DAG at once (:func:`ask_task_states`, through
:mod:`~airflow_leastaction.triggers.run_states`).

Below both the operators and the triggers of the run-condition model: each imports it, neither imports
the other.
"""

from __future__ import annotations

from collections.abc import Sequence

from asgiref.sync import sync_to_async

from airflow_leastaction.exceptions import RunStatesUnreadableError
from airflow_leastaction.version_compat import (
    ask_supervisor_task_states,
    in_process_supervisor,
    supervisor_comms,
    supervisor_task_states,
)

#: The task types (class names) of the tasks that wait on others of their run and start nothing by
#: themselves: the gates and the run-outcome task. Subclasses add theirs when they are defined; the names
#: of the provider's own are here, since the triggerer reads a deserialized DAG without importing them.
WAITING_TASK_TYPES = {"RunConditionGate", "DagRunGate", "RunOutcome"}


class QuestionCount:
    """The questions about task states this process sent Airflow: one per ``GetTaskStates`` message.

    :ivar sent: messages sent.
    :ivar runs: runs they named, in all.
    """

    __slots__ = ("sent", "runs")

    def __init__(self) -> None:
        self.sent = 0
        self.runs = 0

    def asked(self, dag_id: str, run_ids: Sequence[str]) -> None:
        """Count one message about ``run_ids`` of ``dag_id``, as it is sent."""
        self.sent += 1
        self.runs += len(run_ids)


#: This process's count (read where it is needed: ``run_tasks.QUESTIONS``).
QUESTIONS = QuestionCount()


def task_states(dag_id: str, run_id: str) -> dict[str, str | None]:
    """Airflow state of every task of one run, read through the supervisor (no ORM on a worker)."""
    QUESTIONS.asked(dag_id, (run_id,))
    states = supervisor_task_states(dag_id=dag_id, run_ids=[run_id])
    return {k: (str(v) if v is not None else None) for k, v in (states.get(run_id) or {}).items()}


async def ask_task_states(dag_id: str, run_ids: Sequence[str]) -> dict[str, dict[str, str | None]]:
    """The state of every task of each of ``run_ids`` (runs of ``dag_id``), by run: ONE question to Airflow,
    from the triggerer's event loop (the comms' own ``asend``, no thread; a comms without one, in a thread).

    A run the answer leaves out is left out here too: the caller tells it apart from a run without tasks
    (it has none: every waiting gate is a task of its run). Raises :class:`RunStatesUnreadableError` when
    Airflow gives no answer (the supervisor's error, a lost connection, anything but its task states).
    """
    try:
        if supervisor_comms() is None:
            raise RuntimeError("no supervisor to ask (not in a task or a triggerer)")
        QUESTIONS.asked(dag_id, run_ids)
        answer = await ask_supervisor_task_states(dag_id, list(run_ids))
    except Exception as exc:
        raise RunStatesUnreadableError(f"Airflow cannot tell the task states of DAG {dag_id}: {exc}") from exc
    return {
        run_id: {task: (str(state) if state is not None else None) for task, state in (states or {}).items()}
        for run_id, states in answer.items()
    }


async def run_states(dag_id: str, run_id: str) -> dict[str, str | None]:
    """:func:`task_states` from the triggerer's event loop (the call blocks: it runs in a thread)."""
    return await sync_to_async(task_states)(dag_id, run_id)


def triggers_run_inline() -> bool:
    """True under ``dag.test()``: its in-process supervisor runs a trigger inline, blocking every other
    task of the run, so a task waiting on its own run must wait by rescheduling there instead."""
    return in_process_supervisor()


def run_structure(dag) -> tuple[dict[str, list[str]], list[str]]:
    """Every task's direct upstream task ids, and the ids of the waiting tasks (gates, run outcome).

    Works on the DAG as written and as Airflow deserialized it in the triggerer, where every task is a
    generic operator that names its class in ``task_type``.
    """
    upstream = {t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks}
    waiting = sorted(t.task_id for t in dag.tasks if getattr(t, "task_type", type(t).__name__) in WAITING_TASK_TYPES)
    return upstream, waiting
