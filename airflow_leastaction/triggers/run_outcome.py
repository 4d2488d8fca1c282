"""The trigger behind the run-outcome task: wait until every other task of the run has finished."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TaskFailedEvent, TaskSuccessEvent, TriggerEvent

from airflow_leastaction.run_conditions.run_outcome import RUN_SUMMARY_KEY, summarize
from airflow_leastaction.states import TERMINAL_STATES
from airflow_leastaction.triggers.run_states import RunStates
from airflow_leastaction.triggers.trigger_log import ClassLog
from airflow_leastaction.triggers.wire import TriggerStatus


class RunOutcomeTrigger(ClassLog, BaseTrigger):
    """Wait until every other task of the run has finished.

    Deferred to by a worker, it fires ``finished`` with their states and the worker concludes. Started in
    the triggerer (the default, ``start_from_trigger``), it concludes itself and ends the task there:
    success, or failure naming the failed tasks, with the run summary as its XCom. No worker ever runs
    the task, so no worker's exit can race the trigger's event.

    :param dag_id: the DAG.
    :param run_id: the run (None: the run of the task instance Airflow started this trigger for).
    :param task_id: the run-outcome task itself (left out of the wait).
    :param poll_interval: seconds between looks.
    :param end_from_trigger: end the task in the triggerer (needs the task instance Airflow gives a task
        started in the triggerer; otherwise the trigger fires ``finished`` for a worker to conclude).
    """

    def __init__(
        self,
        dag_id: str,
        run_id: str | None,
        task_id: str,
        poll_interval: float = 5.0,
        end_from_trigger: bool = False,
    ):
        super().__init__()
        self.dag_id, self.run_id, self.task_id, self.poll_interval = dag_id, run_id, task_id, float(poll_interval)
        self.end_from_trigger = bool(end_from_trigger)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return self.classpath(), {
            "dag_id": self.dag_id,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "poll_interval": self.poll_interval,
            "end_from_trigger": self.end_from_trigger,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        run_id = self.run_id or self.task_instance.run_id
        # The run's states come from the triggerer's one question per DAG per tick, shared with every other
        # run-outcome trigger of the DAG there (a loop of their own: they read no catalog).
        async with RunStates.shared(None, self.poll_interval).subscribe(self.dag_id, run_id) as sub:
            while True:
                try:
                    states = await sub.next()
                except Exception as exc:
                    self.log.warning("run outcome cannot look yet: %s", exc)
                    continue
                others = {t: s for t, s in states.items() if t != self.task_id}
                if all(s in TERMINAL_STATES for s in others.values()):
                    break
        yield self._conclusion(others)

    def _conclusion(self, states: dict[str, str | None]) -> TriggerEvent:
        dag = getattr(getattr(self.task_instance, "task", None), "dag", None)
        if not self.end_from_trigger or dag is None:
            return TriggerEvent({"status": TriggerStatus.FINISHED.value, "states": states})
        summary = summarize(states, lambda t: dag.get_task(t).downstream_task_ids)
        xcoms = {RUN_SUMMARY_KEY: summary.as_dict()}
        if summary.failed:
            self.log.error("%s", summary.message())
            return TaskFailedEvent(xcoms=xcoms)
        self.log.info("no task failed: %s", ", ".join(f"{t}={s}" for t, s in sorted(states.items())))
        return TaskSuccessEvent(xcoms=xcoms)
