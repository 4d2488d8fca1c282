"""What the run-condition gates and the run-outcome task share: they wait on the other tasks of their
run and start nothing by themselves."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import BaseOperator

from airflow_leastaction.airflow_seam.run_tasks import WAITING_TASK_TYPES, run_structure
from airflow_leastaction.version_compat import AirflowRescheduleException


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class _Waiting(BaseOperator):
    """A task that waits on others of its run and starts nothing by itself."""

    consumes_own_decisions = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        WAITING_TASK_TYPES.add(cls.__name__)

    def _run_structure(self) -> tuple[dict[str, list[str]], list[str]]:
        return run_structure(self.dag)

    def _reschedule(self) -> None:
        raise AirflowRescheduleException(utcnow() + dt.timedelta(seconds=self.poll_interval))
