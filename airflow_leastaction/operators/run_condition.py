"""The run-condition gate and the run-outcome task (see :func:`airflow_leastaction.run_conditions.run_condition`)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import Any

from airflow.sdk import TriggerRule
from airflow.triggers.base import StartTriggerArgs

from airflow_leastaction.airflow_seam.context import (
    attempt_key,
    context_interval_end,
    context_run_started,
    context_slot,
    resolve_poll_interval,
)
from airflow_leastaction.airflow_seam.deadline_alerts import declared_warning
from airflow_leastaction.airflow_seam.deadline_runs import run_watch, warning_spec
from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch, warn_sync
from airflow_leastaction.airflow_seam.run_tasks import task_states, triggers_run_inline
from airflow_leastaction.airflow_seam.schedule import task_timezone
from airflow_leastaction.catalog.audit import RerunOnArrival
from airflow_leastaction.catalog.engine import is_outage
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import MissingDataIntervalError
from airflow_leastaction.gating.admission import GateMode, gate_mode, settle
from airflow_leastaction.gating.deadline_warning import default_wait
from airflow_leastaction.gating.engine import GateOutcome, RunCondition, Verdict, check_condition
from airflow_leastaction.gating.fallback import Fallback, check_fallback, reruns_on_late_arrival
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.intervals.run_slot import RunSlot, noted
from airflow_leastaction.operators.waiting import _Waiting, utcnow
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.run_conditions.judging import (
    RunView,
    evaluate,
    in_run_pending,
    in_run_unfinished,
    judge_whole_intervals,
    whole_interval_requests,
)
from airflow_leastaction.run_conditions.model import Dependency, GateSpec
from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy
from airflow_leastaction.run_conditions.waves import check_type, check_upstreams
from airflow_leastaction.triggers import wire
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from airflow_leastaction.triggers.wire import TriggerStatus
from airflow_leastaction.version_compat import (
    AirflowSkipException,
    starts_in_triggerer,
)


def run_slot(context) -> dt.datetime:
    return _judged_at(context).instant


def _judged_at(context) -> RunSlot:
    found = context_slot(context)
    if found is None:
        ti = context.get("ti")
        raise MissingDataIntervalError(
            getattr(ti, "dag_id", "?"),
            getattr(ti, "task_id", "?"),
            context.get("run_id", "?"),
            "a run-condition gate judges the run's data interval, logical date or run_after",
        )
    return found


def _dependency(dag_id: str | None, gated_task_id: str, value: Dependency | dict) -> Dependency:
    if isinstance(value, Dependency):
        return value
    dependency_type = check_type(dag_id, gated_task_id, value.get("type", "SUCCESS"))
    return Dependency.from_dict({**value, "type": dependency_type})


class RunConditionGate(_Waiting):
    """Admit one task once its run condition holds; skip it once the condition never can in this run.

    Created by :func:`~airflow_leastaction.run_conditions.run_condition`, which wires each same-run
    upstream to this gate and the gate to the gated task, so the graph shows every dependency as an edge.
    The gate starts with the run (trigger rule ``always``), by default in the triggerer: its trigger
    judges, waits, records the decisions and ends the gate there, so no worker runs it. On the worker path
    (``start_from_trigger=False``) it judges once and, if it must wait, defers to the triggerer (no worker
    slot held). Either way it logs each dependency's reason. On admission it records one
    SATISFIED decision per dependency; the gated task consumes them when it succeeds. On skip it records
    the UNSATISFIED decisions the skip rests on, and the gated task is skipped with it.

    :param gated_task_id: the task this gate admits.
    :param dependencies: :class:`~airflow_leastaction.run_conditions.model.Dependency` objects (or dicts).
    :param condition: ``ALL`` (default), ``ANY`` or ``N``.
    :param count: how many dependencies must be satisfied, with ``N`` only.
    :param active: an inactive task never runs: its gate skips it without judging.
    :param max_wait: how long one check waits for a run in progress in another DAG (default
        ``[leastaction] gate_wait_minutes``, 60, or until the fallback's deadline when later; 0 judges at
        once).
    :param max_looks: how many times one check looks at runs in progress elsewhere (default 30).
    :param catalog_conn_id: connection of the catalog (default ``[leastaction] catalog_conn_id``).
    :param poll_interval: seconds between looks at the run (default ``[leastaction] poll_interval``).
    :param deferrable: wait in the triggerer (default). ``False``: wait for same-run upstreams by
        rescheduling, then for upstreams in other DAGs in the worker (the check's clock lives there).
    :param start_from_trigger: with ``deferrable``, start and end the gate in the triggerer (default):
        the trigger judges, records the decisions and ends the task, so no worker runs it. ``False``:
        a worker judges first and defers only to wait. Under ``dag.test()`` Airflow runs the worker path.
    :param run_gate: the DAG's run gate (set by
        :func:`~airflow_leastaction.run_conditions.dag_run_condition`): nothing is judged before it
        admitted the run.
    :param fallback: :class:`~airflow_leastaction.gating.fallback.Fallback` (or its dict): at its deadline, on
        the DAG's local clock, admit the task *degraded* when at least ``require`` dependencies are
        satisfied (the others recorded MISSING), else skip it. Until then a dependency on another DAG
        that is not satisfied is waited for. Checked at parse time against ``max_wait``.
    :param deadline: warn once per run when the p90 of the gated task's expected completion passes it (the
        forms of a fallback's ``at``; checked against ``max_wait``, which defaults to it; else the DAG's alert).
    :param deadline_callback: whom the warning tells: Airflow's ``AsyncCallback`` or ``SyncCallback``.
    """

    ui_color = "#fff1c2"
    template_fields: Sequence[str] = ()

    def __init__(
        self,
        *,
        gated_task_id: str,
        dependencies: Sequence[Dependency | dict],
        condition: str = "ALL",
        count: int | None = None,
        active: bool = True,
        max_wait: dt.timedelta | float | None = None,
        max_looks: int = 30,
        catalog_conn_id: str | None = None,
        poll_interval: float | None = None,
        deferrable: bool = True,
        start_from_trigger: bool = True,
        run_gate: str | None = None,
        fallback: Fallback | dict | None = None,
        deadline: dt.timedelta | dt.time | str | None = None,
        deadline_callback=None,
        **kwargs,
    ):
        kwargs["trigger_rule"] = TriggerRule.ALWAYS
        # A gate fails only when it cannot read (catalog or API down): try again rather than lose the path.
        kwargs.setdefault("retries", 2)
        kwargs.setdefault("retry_delay", dt.timedelta(seconds=10))
        super().__init__(**kwargs)
        self.gated_task_id = gated_task_id
        dag_id = self.dag_id if self.has_dag() else None
        # The checks of run_condition(), in its order, so a gate built directly fails as a declaration would.
        self.dependencies = [_dependency(dag_id, gated_task_id, d) for d in dependencies]
        total = len(self.dependencies)
        self.condition = RunCondition(*check_condition(dag_id, gated_task_id, condition, count, total))
        in_run = [d.upstream for d in self.dependencies if d.in_run]
        # Upstream tasks exist before their gate (as run_condition() needs them); without a DAG, none can be told.
        check_upstreams(dag_id, gated_task_id, in_run, self.dag.task_dict if self.has_dag() else set(in_run))
        self.active = active
        fallback = Fallback.from_dict(fallback) if isinstance(fallback, dict) else fallback
        given = max_wait
        if max_wait is None:
            max_wait = float(setting("gate_wait_minutes", "60")) * 60
        self.max_wait = max_wait.total_seconds() if isinstance(max_wait, dt.timedelta) else float(max_wait)
        if (
            given is None and isinstance(fallback, Fallback) and fallback.problem is None
        ):  # the default wait lasts until the deadline
            self.max_wait = max(self.max_wait, fallback.nominal.total_seconds())
        if given is None:  # likewise until the warning's deadline
            self.max_wait = max(self.max_wait, default_wait(deadline))
        self.catalog_conn_id = catalog_conn_id
        self.poll_interval = resolve_poll_interval(poll_interval)
        self.policy = WaitPolicy(
            dt.timedelta(seconds=self.max_wait), int(max_looks), dt.timedelta(seconds=self.poll_interval)
        )
        self.deferrable = deferrable
        self.run_gate = run_gate
        types = [d.type for d in self.dependencies]
        limit = dt.timedelta(seconds=self.max_wait)
        self.fallback = check_fallback(dag_id, gated_task_id, fallback, types, limit)
        self.deadline_warning = declared_warning(dag_id, gated_task_id, deadline, deadline_callback, limit)
        # Last: Airflow reads start_trigger_args once __init__ returns, and it needs the fields above.
        self._trigger_start_asked = bool(deferrable and start_from_trigger)
        parents = [d.upstream for d in self.spec.elsewhere] + list(self._identities().values())
        self.start_from_trigger = starts_in_triggerer(self._trigger_start_asked, self._route(parents, deferrable))

    @property
    def start_trigger_args(self) -> StartTriggerArgs | None:
        """What the scheduler defers this gate to without a worker (read when the DAG is serialized):
        the trigger with the gate's static values; it takes the run's from the task instance. Also where
        Airflow cannot start a task in the triggerer (its scheduler never reads them there): the serialized
        DAG carries the gate's condition and dependencies for the plugin's pages either way."""
        if not self._trigger_start_asked or not self.has_dag():
            return None
        path, kwargs = self._trigger(None, None, None, {}, WaitClock(), end_from_trigger=True).serialize()
        return StartTriggerArgs(trigger_cls=path, trigger_kwargs=kwargs, next_method="execute_complete")

    @start_trigger_args.setter
    def start_trigger_args(self, value) -> None:
        """Airflow assigns the deserialized value; this gate always derives its own."""

    @property
    def spec(self) -> GateSpec:
        return GateSpec(
            self.gated_task_id,
            tuple(self.dependencies),
            self.condition,
            self.active,
            self.task_id,
            run_gate=self.run_gate,
            fallback=self.fallback,
            timezone=task_timezone(self),
        )

    def rerun_on_arrival(self) -> RerunOnArrival | None:
        """What a degraded admission re-runs once its missing dependencies arrive (``on_late_arrival``)."""
        if not reruns_on_late_arrival(self.fallback):
            return None
        return RerunOnArrival((self.gated_task_id,))

    def _warning_spec(self) -> dict | None:
        """The warning as the trigger reads it: the gated task's expected completion, by its run condition."""
        target, dag = airflow_task(self.dag_id, self.gated_task_id), self.dag if self.has_dag() else None
        kind, n, deps, tz = self.condition.kind, self.condition.count, self.dependencies, task_timezone(self)
        return warning_spec(self.deadline_warning, dag, target, self.gated_task_id, tz, kind, n, deps)

    def _watch(self, context) -> DeadlineWatch | None:
        slot = run_slot(context)
        kw = dict(dag_id=self.dag_id, task_id=self.task_id, slot=slot, cap=self.spec.deadline(slot))
        return run_watch(self, self._warning_spec, context, **kw)

    # -- reading and judging ------------------------------------------------------------------------
    def _identities(self) -> dict[str, Any]:
        return {d.upstream: airflow_task(self.dag_id, d.upstream) for d in self.spec.in_run}

    def _consumed(self, store: CatalogStore, run_id: str) -> dict[str, tuple[dt.datetime, int]]:
        return store.audit.last_consumed(
            self.dag_id, self.gated_task_id, [d.key for d in self.spec.elsewhere], other_than=run_id
        )

    def _judge(self, context, store: CatalogStore, clock: WaitClock) -> tuple[GateOutcome, WaitClock]:
        slot, run_id = run_slot(context), context["run_id"]
        upstream, waiting = self._run_structure()
        states = task_states(self.dag_id, run_id) if self.spec.in_run or self.run_gate else {}
        found = store.runs.slot_records([(i, slot) for i in self._identities().values()])
        records = {tid: found[(i, slot)] for tid, i in self._identities().items() if (i, slot) in found}
        by_run = [d.upstream for d in self.spec.elsewhere if not d.whole_interval]
        latest = store.runs.latest_runs(by_run) if by_run else {}
        intervals = {}
        if any(d.whole_interval for d in self.spec.elsewhere):
            end = context_interval_end(context)
            snapshot = store.snapshot(whole_interval_requests(self.spec, slot, end))
            intervals = judge_whole_intervals(self.spec, snapshot, slot, end)
        view = RunView(run_id, states, upstream, frozenset(waiting), records)
        consumed = self._consumed(store, run_id)
        deadline, started = self.spec.deadline(slot), context_run_started(context)
        return evaluate(self.spec, view, latest, consumed, clock, self.policy, utcnow(), intervals, deadline, started)

    def _clock(self, carried: dict | None) -> WaitClock:
        # The check starts when the same-run dependencies are final (see wait_rule); until then a wait
        # by rescheduling has nothing to carry over.
        return WaitClock.from_dict(carried) if carried else WaitClock()

    # -- Airflow entry points -----------------------------------------------------------------------
    def execute(self, context) -> None:
        if not self.active:
            raise AirflowSkipException(f"task {self.gated_task_id!r} is inactive; its dependencies are ignored")
        self._step(context, None)

    def execute_complete(self, context, event: dict[str, Any] | None = None) -> None:
        # The trigger saw ADMIT or SKIP (or the gates relaxed, in the triggerer's configuration), or,
        # started in the triggerer, could not decide there; decide again here, on the worker, and record it.
        event = event or {}
        self._step(
            context, event.get("clock"), event.get("mode") if event.get("status") == TriggerStatus.RELAXED else None
        )

    def _step(self, context, carried: dict | None, mode: str | None = None) -> None:
        mode = gate_mode(mode)
        clock, said = self._clock(carried), None
        while True:
            try:
                store = catalog_store(self.catalog_conn_id)
                outcome, clock = self._judge(context, store, clock)
                pending = in_run_pending(outcome)
                # Relaxed gates never reorder a run: same-run upstreams still have to finish first.
                waits = outcome.verdict is Verdict.WAIT and (not mode.relaxed or pending)
                consumed = self._consumed(store, context["run_id"]) if waits else {}
                if not waits:
                    judged_at = _judged_at(context)
                    outcome = noted(outcome, judged_at)
                admission = (
                    None
                    if waits
                    else settle(
                        store,
                        attempt_key(context, self.dag_id, self.task_id),
                        outcome,
                        downstream_slot=judged_at.instant,
                        mode=mode,
                        rerun=self.rerun_on_arrival(),
                    )
                )
            except Exception as exc:
                if not is_outage(exc):
                    raise
                return self._catalog_unreachable(context, clock, mode, exc)
            if admission is not None:
                return self._conclude(outcome, admission, mode)
            if outcome.summary() != said:
                said = outcome.summary()
                self.log.info("%s waits: %s", self.gated_task_id, said)
            if (watch := self._watch(context)) is not None:
                warn_sync(watch, store, utcnow(), self.log, changed=False)
            if self.deferrable or pending:
                return self._wait(context, clock, pending, consumed)
            # Not deferrable, only other DAGs left: keep the check (its clock) in this process until decided.
            time.sleep(self.poll_interval)

    def _conclude(self, outcome: GateOutcome, admission, mode: GateMode) -> None:
        for j in outcome.judgements:
            self.log.info("  %s %s", "+" if j.satisfied else "-", j.reason)
        if admission.admitted:
            note = f" (gate bypassed: [leastaction] gates = {mode})" if admission.bypassed else ""
            note = " degraded, without the MISSING dependencies" if admission.degraded else note
            self.log.info("%s admitted%s: %s", self.gated_task_id, note, outcome.summary())
            return None
        raise AirflowSkipException(f"{self.gated_task_id} can never start in this run: {outcome.summary()}")

    def _catalog_unreachable(self, context, clock: WaitClock, mode: GateMode, exc: Exception) -> None:
        """Keep waiting while the catalog cannot be read: a run never fails because its audit store
        blinked. Relaxed gates admit (unrecorded) once no same-run upstream is still running."""
        unfinished = in_run_unfinished(self.spec, task_states(self.dag_id, context["run_id"]))
        if mode.relaxed and not unfinished:
            self.log.warning(
                "%s admitted without judging or recording ([leastaction] gates = %s): catalog unreachable: %s",
                self.gated_task_id,
                mode,
                exc,
            )
            return None
        self.log.warning("%s cannot be judged, waiting for the catalog: %s", self.gated_task_id, exc)
        return self._wait(context, clock, bool(unfinished), {})

    def _wait(
        self, context, clock: WaitClock, in_run_pending: bool, consumed: dict[str, tuple[dt.datetime, int]]
    ) -> None:
        if not self.deferrable or (in_run_pending and triggers_run_inline()):
            self._reschedule()
        end, watch, started = context_interval_end(context), self._watch(context), context_run_started(context)
        self.defer(
            trigger=self._trigger(
                context["run_id"], run_slot(context), end, consumed, clock, run_started=started, watch=watch
            ),
            method_name="execute_complete",
        )

    def _trigger(
        self,
        run_id: str | None,
        slot: dt.datetime | None,
        end: dt.datetime | None,
        consumed: dict[str, tuple[dt.datetime, int]],
        clock: WaitClock,
        end_from_trigger: bool = False,
        run_started: dt.datetime | None = None,
        watch: DeadlineWatch | None = None,
    ) -> RunConditionTrigger:
        """The gate's trigger; started in the triggerer (``end_from_trigger``), it takes the run's values
        (run, slot, interval end, the DAG's structure, consumed revisions) from its task instance."""
        upstream, waiting = (None, None) if end_from_trigger else self._run_structure()
        return RunConditionTrigger(
            dag_id=self.dag_id,
            run_id=run_id,
            task_id=self.gated_task_id,
            dependencies=[d.as_dict() for d in self.dependencies],
            condition=self.condition.kind,
            count=self.condition.count,
            slot_requests={t: i.as_dict() for t, i in self._identities().items()},
            slot=slot.isoformat() if slot is not None else None,
            upstream=upstream,
            waiting=waiting,
            consumed=wire.encode_last_consumed(consumed),
            clock=clock.as_dict(),
            interval_end=end.isoformat() if end is not None else None,
            max_wait=self.max_wait,
            max_looks=self.policy.max_looks,
            catalog_conn_id=self.catalog_conn_id,
            poll_interval=self.poll_interval,
            run_gate=self.run_gate,
            active=self.active,
            end_from_trigger=end_from_trigger,
            fallback=self.fallback.as_dict() if self.fallback else None,
            timezone=task_timezone(self),
            run_started=run_started.isoformat() if run_started is not None else None,
            warning=self._warning_spec() if end_from_trigger else watch.as_dict() if watch else None,
        )
