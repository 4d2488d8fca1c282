"""What the run-condition gates and the run-outcome task share: they wait on the other tasks of their
run and start nothing by themselves."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import BaseOperator

from airflow_leastaction.airflow_seam.run_tasks import WAITING_TASK_TYPES, run_structure
from airflow_leastaction.airflow_seam.trigger_queue import say_queue, trigger_queue_of
from airflow_leastaction.version_compat import AirflowRescheduleException


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class _Waiting(BaseOperator):
    """A task that waits on others of its run and starts nothing by itself.

    :param trigger_queue: the triggerer queue its trigger waits in (a team's, a project's): the task's
        ``queue``. Default: where the projects of most of what it waits on hash into ``[leastaction]
        trigger_queues`` (none listed: no queue). Airflow 3.2+ with ``[triggerer] queues_enabled``; such a
        task starts on a worker of that queue, which defers to the triggerer serving it.
    """

    consumes_own_decisions = False

    def __init__(self, *, trigger_queue: str | None = None, **kwargs):
        self._trigger_queue, self._given_queue = trigger_queue, kwargs.get("queue")
        super().__init__(**kwargs)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        WAITING_TASK_TYPES.add(cls.__name__)

    def _run_structure(self) -> tuple[dict[str, list[str]], list[str]]:
        return run_structure(self.dag)

    def _reschedule(self) -> None:
        raise AirflowRescheduleException(utcnow() + dt.timedelta(seconds=self.poll_interval))

    def _route(self, parents, deferrable: bool) -> str | None:
        """The triggerer queue this task waits in (set as its ``queue``), from ``parents``; None: no queue."""
        return trigger_queue_of(self, parents, self._trigger_queue, self._given_queue, deferrable)

    def defer(self, **kwargs):
        say_queue(self)
        super().defer(**kwargs)
