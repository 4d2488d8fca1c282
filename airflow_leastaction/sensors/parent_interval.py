"""``ParentIntervalSensor``: admit a task once each catalog parent has finished the interval covering it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.triggers.base import StartTriggerArgs

from airflow_leastaction.airflow_seam.child_interval import (
    DEADLINE_BACKSTOP,
    child_interval_end,
    child_slot,
    consumed_revisions,
    declarations_of,
    declare,
)
from airflow_leastaction.airflow_seam.context import attempt_key, resolve_poll_interval
from airflow_leastaction.airflow_seam.deadline_alerts import declared_warning
from airflow_leastaction.airflow_seam.deadline_runs import run_watch, warning_spec
from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch, warn_sync
from airflow_leastaction.airflow_seam.schedule import task_timezone
from airflow_leastaction.airflow_seam.trigger_queue import say_queue, trigger_queue_of
from airflow_leastaction.catalog.audit import RerunOnArrival
from airflow_leastaction.catalog.engine import is_outage
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.exceptions import ConfigurationError, DuplicateParentError, ParentFailedError
from airflow_leastaction.gating.admission import GateMode, gate_mode, settle
from airflow_leastaction.gating.engine import DependencyType, GateOutcome, Judgement
from airflow_leastaction.gating.fallback import (
    Fallback,
    check_fallback,
    decide_all_with_fallback,
    fallback_deadline,
    reruns_on_late_arrival,
)
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import check_coverage, snapshot_requests
from airflow_leastaction.intervals.parents import judge_parents
from airflow_leastaction.intervals.run_slot import RunSlot, noted
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from airflow_leastaction.triggers.wire import TriggerStatus, encode_consumed
from airflow_leastaction.version_compat import AirflowSensorTimeout, starts_in_triggerer

ON_PARENT_FAILURE = ("wait", "fail")


def _as_identity(parent: Any, task_id: str) -> TaskIdentity:
    if isinstance(parent, TaskIdentity):
        return parent
    if isinstance(parent, dict):
        try:
            return TaskIdentity.from_dict(parent)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"task {task_id!r}: parent {parent!r} is not a task identity: {exc}") from exc
    raise ConfigurationError(
        f"task {task_id!r}: parent {parent!r} is not a task identity; use airflow_task(dag_id, task_id) "
        "or external_task(name, project)"
    )


class ParentIntervalSensor(BaseSensorOperator):
    """Wait until every parent in the task catalog has finished the interval that covers this run's.

    For each parent the expected slot is the latest slot of the parent's cron at or before the child
    interval, compared with what the parent completed at the parent's granularity, in the parent's
    timezone. A weekly parent therefore satisfies a daily child. Parents may be tasks of other DAGs, other
    deployments or systems outside Airflow: they are named by catalog identity. An empty ``parents`` list
    passes at once.

    By default the sensor starts and ends in the triggerer (Airflow's ``start_from_trigger``): its trigger
    declares the parents, shares one catalog poll per tick with every other waiting gate in the
    triggerer, and on admission records the decisions and ends the task, so waiting and deciding take
    no worker slot and no DAG-file parse. With ``start_from_trigger=False`` it checks once on a worker
    in ``execute()`` and, if not satisfied, defers to the same trigger, and a worker decides when it
    fires. Each wait is logged per parent (``orders_raw: expected slot 2026-11-28 (day), completed up to
    2026-11-27; judged by its slot records``). On admission one SATISFIED gate decision per parent is
    recorded; the tasks this sensor gates consume them when they succeed.

    :param parents: catalog identities of the parents (:func:`~airflow_leastaction.refs.airflow_task`,
        :func:`~airflow_leastaction.refs.external_task`).
    :param child_interval: the interval to check, ISO-8601 or datetime (templated). Default: the run's
        slot, by the rule the catalog listener records runs with: its data-interval start, else its
        logical date, else its ``run_after`` (manual and asset-triggered runs may have neither).
    :param child_interval_end: the end of that interval, for parents judged with ``coverage="interval"``
        (templated). Default: the run's data-interval end.
    :param coverage: how parents that do not say their own are judged: ``slot`` (default: the parent slot
        covering the child's interval start is done) or ``interval`` (every parent slot inside the child's
        interval is done). A parent says its own with ``airflow_task(..., coverage=...)``.
    :param on_parent_failure: ``wait`` (default: a failed parent slot may be retried or repaired) or
        ``fail`` (fail this sensor at once).
    :param wait_for_new_output: when this run's slot already consumed a parent slot (a re-run, a
        backfill), wait for a newer revision of that parent slot (the parent re-run first).
    :param catalog_conn_id: connection of the catalog (type ``leastaction_catalog``; default
        ``[leastaction] catalog_conn_id``, resolved where the check runs).
    :param poll_interval: seconds between catalog polls while deferred (default ``[leastaction]
        poll_interval``). In poke/reschedule mode ``poke_interval`` applies.
    :param consumer_task_ids: tasks that consume what this sensor admits (default: its direct
        downstream tasks; itself when it has none). Their catalog rows carry the declared parents.
    :param deferrable: wait in the triggerer (default) instead of poking from a worker.
    :param start_from_trigger: with ``deferrable``, start and end in the triggerer (default); False: start
        on a worker, which defers and decides when the trigger fires. ``dag.test()`` always runs the
        worker path. A timeout of a task with retries, and relaxed gates (``[leastaction] gates``), are
        finished on a worker.
    :param fallback: :class:`~airflow_leastaction.gating.fallback.Fallback`: from its deadline (on the DAG's local
        clock) the task is admitted *degraded* once at least ``require`` parents are satisfied, the others
        recorded MISSING; until then, and below ``require``, it waits as without one (until ``timeout``).
        Checked at parse time against ``timeout``.
    :param deadline: warn early: while the sensor waits, once the p90 of its gated task's expected
        completion passes this deadline, warn once per run (and say when it is back on time). The forms of
        a fallback's ``at``, on the DAG's local clock; checked at parse time against ``timeout``. Without
        one, the DAG's ``DeadlineAlert`` is warned against when its time can be computed for the run.
    :param deadline_callback: whom the warning tells: Airflow's ``AsyncCallback`` or ``SyncCallback``, as
        a ``DeadlineAlert`` takes (default: the DAG alert's callback, else the log and the catalog only).
    :param trigger_queue: the triggerer queue to wait in (a team's, a project's): the task's ``queue``.
        Default: where most parents' projects hash into ``[leastaction] trigger_queues`` (none: no queue). Airflow
        3.2+ with ``[triggerer] queues_enabled``; such a sensor starts on a worker of that queue.
    """

    template_fields: Sequence[str] = ("child_interval", "child_interval_end")
    ui_color = "#e8f0fe"

    def __init__(
        self,
        *,
        parents: Sequence[TaskIdentity | dict],
        child_interval: str | dt.datetime | None = None,
        child_interval_end: str | dt.datetime | None = None,
        coverage: str | None = "slot",
        on_parent_failure: str = "wait",
        wait_for_new_output: bool = False,
        catalog_conn_id: str | None = None,
        poll_interval: float | None = None,
        consumer_task_ids: Sequence[str] | None = None,
        deferrable: bool = True,
        start_from_trigger: bool = True,
        fallback: Fallback | None = None,
        deadline: dt.timedelta | dt.time | str | None = None,
        deadline_callback=None,
        trigger_queue: str | None = None,
        **kwargs,
    ):
        given_queue = kwargs.get("queue")
        super().__init__(**kwargs)
        identities = [_as_identity(p, self.task_id) for p in parents]
        seen: set[TaskIdentity] = set()
        for identity in identities:
            if identity in seen:
                raise DuplicateParentError(self.task_id, str(identity))
            seen.add(identity)
        if on_parent_failure not in ON_PARENT_FAILURE:
            raise ConfigurationError(
                f"task {self.task_id!r}: on_parent_failure={on_parent_failure!r}; expected 'wait' or 'fail'"
            )
        if catalog_conn_id is not None and not str(catalog_conn_id).strip():
            raise ConfigurationError(f"task {self.task_id!r}: catalog_conn_id must be a connection id or None")
        check_coverage(coverage, f"task {self.task_id!r}")
        for identity in identities:
            check_coverage(identity.coverage, f"task {self.task_id!r} parent {identity}")
        self.parents = identities
        self.child_interval = child_interval
        self.child_interval_end = child_interval_end
        self.coverage = coverage or "slot"
        self.on_parent_failure = on_parent_failure
        self.wait_for_new_output = wait_for_new_output
        self.catalog_conn_id = catalog_conn_id
        self.poll_interval = resolve_poll_interval(poll_interval)
        self.consumer_task_ids = list(consumer_task_ids) if consumer_task_ids else None
        self.deferrable = deferrable
        self.fallback = check_fallback(
            self.dag_id if self.has_dag() else None,
            self.task_id,
            Fallback.from_dict(fallback) if isinstance(fallback, dict) else fallback,
            [DependencyType.SUCCESS] * len(identities),
            dt.timedelta(seconds=float(self.timeout)),
            "timeout",
        )
        dag_id = self.dag_id if self.has_dag() else None
        timeout = dt.timedelta(seconds=float(self.timeout))
        self.deadline_warning = declared_warning(dag_id, self.task_id, deadline, deadline_callback, timeout, "timeout")
        self._trigger_start_asked = bool(deferrable and start_from_trigger)
        queue = trigger_queue_of(self, identities, trigger_queue, given_queue, deferrable)
        self.start_from_trigger = starts_in_triggerer(self._trigger_start_asked, queue)

    @property
    def start_trigger_args(self) -> StartTriggerArgs | None:
        """What the scheduler starts this task as in the triggerer (read when the DAG is serialized).

        Static: the run's slot, interval end and attempt come from the task instance Airflow gives the
        trigger. ``child_interval`` and ``child_interval_end`` keep their names, so the triggerer renders
        them as templates. Also where Airflow cannot start a task in the triggerer (its scheduler never
        reads them there): the serialized DAG carries the sensor's parents for the plugin's pages either way."""
        if not self._trigger_start_asked:
            return None
        trigger = ParentIntervalTrigger(
            parents=self._parents_with_coverage(),
            child_interval=self.child_interval,
            child_interval_end=self.child_interval_end,
            catalog_conn_id=self.catalog_conn_id,
            poll_interval=self.poll_interval,
            on_parent_failure=self.on_parent_failure,
            end_from_trigger=True,
            consumers=self._consumers(),
            declarations=declarations_of(self.dag if self.has_dag() else None, self._consumers(), self._own_parents()),
            wait_for_new_output=self.wait_for_new_output,
            timeout=float(self.timeout),
            execution_timeout=self.execution_timeout.total_seconds() if self.execution_timeout else None,
            warning=self._warning_spec(),
            **self._fallback_kwargs(),
        )
        classpath, kwargs = trigger.serialize()
        return StartTriggerArgs(
            trigger_cls=classpath,
            trigger_kwargs=kwargs,
            next_method="execute_complete",
            timeout=dt.timedelta(seconds=self.timeout) + DEADLINE_BACKSTOP,
        )

    @start_trigger_args.setter
    def start_trigger_args(self, value) -> None:
        """Airflow assigns the deserialized value; this operator always derives its own."""

    # -- the check ---------------------------------------------------------------------------------
    def _slot(self, context) -> RunSlot:
        return child_slot(context, self.child_interval, self.dag_id, self.task_id)

    def _interval_end(self, context) -> dt.datetime | None:
        return child_interval_end(context, self.child_interval_end, self._coverages(), self.task_id)

    def _coverages(self) -> list[str]:
        """Each parent's coverage: its own, else this sensor's."""
        return [p.coverage or self.coverage for p in self.parents]

    def _parents_with_coverage(self) -> list[dict]:
        """The parents as the trigger reads them, each with the coverage it is judged with."""
        return [{**p.as_dict(), "coverage": c} for p, c in zip(self.parents, self._coverages(), strict=True)]

    @property
    def consumes_own_decisions(self) -> bool:
        """Read by the catalog listener: the sensor consumes its decisions only when it gates nothing."""
        return self.task_id in self._consumers()

    def _consumers(self) -> list[str]:
        return self.consumer_task_ids or sorted(self.downstream_task_ids) or [self.task_id]

    def _store(self) -> CatalogStore:
        return catalog_store(self.catalog_conn_id)

    def _consumed(self, store: CatalogStore, slot: dt.datetime) -> dict[str, dict[dt.datetime, int]]:
        return consumed_revisions(store, self.dag_id, self._consumers(), slot) if self.wait_for_new_output else {}

    def _evaluate(self, store: CatalogStore, slot: dt.datetime, end: dt.datetime | None, consumed) -> GateOutcome:
        snapshot = store.snapshot(snapshot_requests(self.parents, self._coverages(), slot, end))
        judged = judge_parents(self.parents, slot, snapshot, consumed, interval_end=end, coverage=self.coverage)
        return decide_all_with_fallback(judged, self._fallback_deadline(slot), dt.datetime.now(dt.UTC))

    def _fallback_kwargs(self) -> dict:
        """The fallback as the trigger reads it (nothing without one: the trigger's kwargs stay as they were)."""
        return {"fallback": self.fallback.as_dict(), "timezone": task_timezone(self)} if self.fallback else {}

    def _fallback_deadline(self, slot: dt.datetime) -> tuple[dt.datetime, int] | None:
        if self.fallback is None:
            return None
        return fallback_deadline(self.fallback.at, slot, task_timezone(self)), self.fallback.require

    def _warning_spec(self) -> dict | None:
        """The warning as the trigger reads it: the expected completion of the first task this gates."""
        gated, dag = self._consumers()[0], self.dag if self.has_dag() else None
        return warning_spec(self.deadline_warning, dag, airflow_task(self.dag_id, gated), gated, task_timezone(self))

    def _watch(self, context, slot: dt.datetime) -> DeadlineWatch | None:
        fallback = self._fallback_deadline(slot)
        cap = fallback[0] if fallback else None
        return run_watch(
            self, self._warning_spec, context, dag_id=self.dag_id, task_id=self.task_id, slot=slot, cap=cap
        )

    def _rerun(self) -> RerunOnArrival | None:
        if not reruns_on_late_arrival(self.fallback):
            return None
        return RerunOnArrival(tuple(t for t in self._consumers() if t != self.task_id))

    def _own_parents(self) -> list[TaskIdentity]:
        # Each parent with the coverage it is judged with, as the trigger declares them: one declaration text.
        return [TaskIdentity.from_dict(p) for p in self._parents_with_coverage()]

    def catalog_parents_for(self, consumer: str) -> list[TaskIdentity]:
        """The parents this sensor declares for ``consumer``: none unless it admits it (read by the other
        sensors of that task, :func:`~airflow_leastaction.airflow_seam.child_interval.declared_for`; the
        parents are built only for a task it admits, so a DAG of many sensors is not read quadratically)."""
        return self._own_parents() if consumer in self._consumers() else []

    def _declare(self, store: CatalogStore) -> None:
        declare(store, self.dag if self.has_dag() else None, self.dag_id, self._consumers(), self._own_parents())

    def _check(self, context, mode: str | None = None) -> tuple[bool, dict]:
        """Judge now; on admission record the decisions. Returns (admitted, the consumed revisions judged
        against), so a deferral hands the trigger what was already read. While the catalog is
        unreachable nothing is judged: (False, {}) and the sensor keeps waiting, unless gates are relaxed.
        ``mode``: the gate mode to apply (default ``[leastaction] gates`` of this process)."""
        judged_at = self._slot(context)
        mode = gate_mode(mode)
        try:
            return self._check_slot(context, judged_at, mode)
        except Exception as exc:
            if not is_outage(exc):
                raise
            return self._catalog_unreachable(exc, mode), {}

    def _catalog_unreachable(self, exc: Exception, mode: GateMode) -> bool:
        """Whether to run the task although the catalog cannot be read: only when gates are relaxed."""
        if not mode.relaxed:
            self.log.warning("catalog unreachable, waiting for it (judging nothing meanwhile): %s", exc)
            return False
        self.log.warning(
            "admitted without judging or recording ([leastaction] gates = %s): catalog unreachable: %s", mode, exc
        )
        return True

    def _check_slot(self, context, judged_at: RunSlot, mode: GateMode) -> tuple[bool, dict]:
        store = self._store()
        if not getattr(self, "_declared", False):  # once per task instance object, once the catalog answers
            self._declare(store)
            self._declared = True
        slot = judged_at.instant
        consumed = self._consumed(store, slot)
        outcome = noted(self._evaluate(store, slot, self._interval_end(context), consumed), judged_at)
        attempt = attempt_key(context, self.dag_id, self.task_id)
        admission = settle(store, attempt, outcome, downstream_slot=slot, mode=mode, rerun=self._rerun())
        if admission.admitted:
            self.log.info("admitted: %s", "; ".join(j.reason for j in outcome.judgements) or "no parents")
        else:
            self.log.info("not admitted yet: %s", "; ".join(outcome.waiting_reasons))
            self._maybe_fail(outcome.judgements)
            watch = self._watch(context, slot)
            if watch is not None:
                warn_sync(watch, store, dt.datetime.now(dt.UTC), self.log)
        return admission.admitted, consumed

    def _maybe_fail(self, judgements: Sequence[Judgement]) -> None:
        rejected = [j.reason for j in judgements if j.rejected]
        if rejected and self.on_parent_failure == "fail":
            raise ParentFailedError(f"task {self.task_id!r}: parent failed: {'; '.join(rejected)}")

    # -- Airflow entry points -----------------------------------------------------------------------
    def execute(self, context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        admitted, consumed = self._check(context)
        if not admitted:
            self._defer(context, consumed, deadline=None)
        return None

    def poke(self, context) -> bool:
        return self._check(context)[0]

    def _defer(self, context, consumed: dict, deadline: dt.datetime | None) -> None:
        now = dt.datetime.now(dt.UTC)
        deadline = deadline or now + dt.timedelta(seconds=self.timeout)
        slot, end = self._slot(context).instant, self._interval_end(context)
        watch = self._watch(context, slot)
        say_queue(self)
        self.defer(
            trigger=ParentIntervalTrigger(
                parents=self._parents_with_coverage(),
                child_interval=slot.isoformat(),
                interval_end=end.isoformat() if end else None,
                consumed=encode_consumed(consumed),
                catalog_conn_id=self.catalog_conn_id,
                poll_interval=self.poll_interval,
                deadline=deadline.isoformat(),
                on_parent_failure=self.on_parent_failure,
                warning=watch.as_dict() if watch is not None else None,
                **self._fallback_kwargs(),
            ),
            method_name="execute_complete",
            kwargs={"deadline": deadline.isoformat()},
            # Backstop only: the trigger itself fires "timeout" with the reasons at the deadline.
            timeout=max(deadline - now, dt.timedelta(0)) + DEADLINE_BACKSTOP,
        )

    def execute_complete(self, context, event: dict[str, Any] | None = None, deadline: str | None = None) -> None:
        event = event or {}
        status = event.get("status")
        reasons = "; ".join(event.get("reasons") or []) or "no reason given"
        if status == TriggerStatus.TIMEOUT:
            raise AirflowSensorTimeout(f"task {self.task_id!r}: parents not satisfied in time: {reasons}")
        if status == TriggerStatus.FAILED:
            raise ParentFailedError(f"task {self.task_id!r}: parent failed: {reasons}")
        # The trigger saw the parents satisfied (or the gates relaxed, in the triggerer's configuration);
        # admission is decided here, on the worker, and recorded.
        admitted, consumed = self._check(context, event.get("mode") if status == TriggerStatus.RELAXED else None)
        if not admitted:
            self._defer(context, consumed, dt.datetime.fromisoformat(deadline) if deadline else None)
