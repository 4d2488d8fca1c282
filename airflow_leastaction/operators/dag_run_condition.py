"""The run gate of a DAG (see :func:`airflow_leastaction.run_conditions.dag_run_condition`)."""

from __future__ import annotations

from typing import Any

from airflow_leastaction.airflow_seam.deadline_runs import warning_spec
from airflow_leastaction.airflow_seam.schedule import task_timezone
from airflow_leastaction.catalog.audit import RerunOnArrival
from airflow_leastaction.exceptions import RunConditionError
from airflow_leastaction.gating.admission import recorded_admission
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.operators.run_condition import RunConditionGate
from airflow_leastaction.refs import airflow_dag
from airflow_leastaction.run_conditions.model import DAG_GATE_TASK_ID
from airflow_leastaction.run_conditions.run_outcome import RUN_OUTCOME_TASK_ID
from airflow_leastaction.version_compat import AirflowSkipException, skip_downstream_tasks


class DagRunGate(RunConditionGate):
    """Admit a DAG run once its dependencies on other DAGs or catalog tasks hold under ALL, ANY or N;
    when they never can, skip every task of the run.

    Created by :func:`~airflow_leastaction.run_conditions.dag_run_condition`, which makes it the upstream
    of the DAG's root tasks. It judges once per run, when the run starts, waiting (deferred) for upstream
    runs in progress as every gate does, and records its decisions as the run's, under the task id
    ``leastaction_dag_gate``. A retried or cleared run resumes with those decisions: it never judges again.
    The catalog listener consumes the SATISFIED ones when the run succeeds.

    Takes the options of :class:`~airflow_leastaction.operators.run_condition.RunConditionGate`, but no
    ``gated_task_id``: the gate admits the whole run. Unlike a task's gate it always starts on a worker
    (``start_from_trigger=True`` is rejected) and defers only to wait: resuming a cleared run with
    its recorded decisions and skipping every task of the run whatever its trigger rule are done there.
    """

    ui_color = "#ffd866"

    def __init__(self, **kwargs):
        kwargs.setdefault("task_id", DAG_GATE_TASK_ID)
        if kwargs.pop("start_from_trigger", False):
            dag = kwargs.get("dag")
            raise RunConditionError(
                getattr(dag, "dag_id", None),
                kwargs["task_id"],
                "the run gate starts on a worker (it resumes recorded decisions and skips the whole run "
                "there); start_from_trigger=True is not supported",
            )
        kwargs["start_from_trigger"] = False
        super().__init__(gated_task_id=DAG_GATE_TASK_ID, **kwargs)

    def _warning_spec(self) -> dict | None:
        """The run gate warns about the run's expected completion (the DAG's catalog task), by its condition."""
        dag, target = self.dag if self.has_dag() else None, airflow_dag(self.dag_id)
        kind, n, tz = self.condition.kind, self.condition.count, task_timezone(self)
        return warning_spec(self.deadline_warning, dag, target, f"DAG {self.dag_id}", tz, kind, n, self.dependencies)

    def rerun_on_arrival(self) -> RerunOnArrival | None:
        """A degraded run re-runs as a whole: every task of it is cleared."""
        return None if super().rerun_on_arrival() is None else RerunOnArrival(None)

    def execute(self, context) -> None:
        store = catalog_store(self.catalog_conn_id)
        recorded = store.audit.run_decisions(self.dag_id, self.task_id, context["run_id"])
        if recorded:
            return self._resume(context, recorded)
        unheld = sorted(
            t.task_id
            for t in self.dag.tasks
            if not t.upstream_task_ids and t.task_id not in (self.task_id, RUN_OUTCOME_TASK_ID)
        )
        if unheld:
            self.log.warning(
                "tasks %s were declared after dag_run_condition(): they do not wait for the run's "
                "dependencies on other pipelines",
                ", ".join(unheld),
            )
        return self._judge_run(context, None)

    def execute_complete(self, context, event: dict[str, Any] | None = None) -> None:
        return self._judge_run(context, (event or {}).get("clock"))

    def _judge_run(self, context, carried: dict | None) -> None:
        try:
            self._step(context, carried)
        except AirflowSkipException:
            self._skip_run()
            raise

    def _resume(self, context, recorded) -> None:
        """Decide as the run's recorded decisions did, without judging again."""
        outcome, admission = recorded_admission(self.condition, recorded)
        attempt = recorded[0]["attempt"]
        for r in recorded:
            self.log.info("  %s %s", r["result"], r["reason"])
        if admission.admitted:
            how = " (degraded)" if admission.degraded else ""
            self.log.info(
                "run %s resumes with the decisions of attempt %s: admitted%s", context["run_id"], attempt, how
            )
            return
        self._skip_run()
        raise AirflowSkipException(
            f"run {context['run_id']} resumes with the decisions of attempt {attempt}: its "
            f"dependencies on other pipelines are not met: {outcome.summary()}"
        )

    def _skip_run(self) -> None:
        """Skip every task downstream of the gate, whatever its trigger rule: no task of the run starts."""
        downstream = sorted(self.get_flat_relative_ids(upstream=False))
        if downstream:
            skip_downstream_tasks(downstream)
