"""The run-outcome task (see :func:`airflow_leastaction.run_conditions.run_condition`)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import TriggerRule
from airflow.triggers.base import StartTriggerArgs

from airflow_leastaction.airflow_seam.context import resolve_poll_interval
from airflow_leastaction.airflow_seam.run_tasks import task_states, triggers_run_inline
from airflow_leastaction.operators.waiting import _Waiting
from airflow_leastaction.run_conditions.run_outcome import RUN_SUMMARY_KEY, summarize
from airflow_leastaction.states import TERMINAL_STATES
from airflow_leastaction.triggers.run_outcome import RunOutcomeTrigger
from airflow_leastaction.version_compat import AirflowFailException, starts_in_triggerer


class RunOutcome(_Waiting):
    """Ends the run FAILED when any task of it failed, naming the tasks skipped because of the failure.

    Airflow decides a run's state from its leaf tasks; with gates, a failure is followed by skipped tasks
    and alert paths that succeed, which would leave the run green. This task is a leaf that waits until
    every other task has finished, then fails if any of them failed. One is added to each DAG that
    declares a run condition.

    By default it starts and ends in the triggerer (Airflow's ``start_from_trigger``): no worker slot, no
    worker-side DAG-file parse, and no worker exit that could race the trigger's event (Airflow 3.3
    still has the dag-processor parse the file once to look for callbacks of the task it ended).
    ``deferrable=False`` waits on a worker by rescheduling instead. Under ``dag.test()`` it runs on the worker path.

    :param poll_interval: seconds between looks (default ``[leastaction] poll_interval``).
    :param deferrable: wait in the triggerer (default) or by rescheduling on a worker.
    """

    ui_color = "#eeeeee"

    def __init__(self, *, poll_interval: float | None = None, deferrable: bool = True, **kwargs):
        kwargs["trigger_rule"] = TriggerRule.ALWAYS
        kwargs.setdefault("retries", 0)
        super().__init__(**kwargs)
        self.poll_interval = resolve_poll_interval(poll_interval)
        self.deferrable = deferrable
        self.start_from_trigger = starts_in_triggerer(deferrable)

    @property
    def start_trigger_args(self) -> StartTriggerArgs | None:
        """What the scheduler defers this task to without a worker (read when the DAG is serialized)."""
        if not self.start_from_trigger:
            return None
        trigger = RunOutcomeTrigger(self.dag_id, None, self.task_id, self.poll_interval, end_from_trigger=True)
        return StartTriggerArgs(
            trigger_cls=trigger.serialize()[0], trigger_kwargs=trigger.serialize()[1], next_method="execute_complete"
        )

    @start_trigger_args.setter
    def start_trigger_args(self, value) -> None:
        """Airflow assigns the deserialized value; this operator always derives its own."""

    def execute(self, context) -> None:
        states = {t: s for t, s in task_states(self.dag_id, context["run_id"]).items() if t != self.task_id}
        if any(s not in TERMINAL_STATES for s in states.values()):
            if not self.deferrable or triggers_run_inline():
                self._reschedule()
            self.defer(
                trigger=RunOutcomeTrigger(self.dag_id, context["run_id"], self.task_id, self.poll_interval),
                method_name="execute_complete",
            )
        self._conclude(context, states)

    def execute_complete(self, context, event: dict[str, Any] | None = None) -> None:
        self._conclude(context, (event or {}).get("states") or {})

    def _conclude(self, context, states: dict[str, str | None]) -> None:
        summary = summarize(states, lambda t: self.dag.get_task(t).downstream_task_ids)
        context["ti"].xcom_push(key=RUN_SUMMARY_KEY, value=summary.as_dict())
        if not summary.failed:
            self.log.info("no task failed: %s", ", ".join(f"{t}={s}" for t, s in sorted(states.items())))
            return
        raise AirflowFailException(summary.message())
