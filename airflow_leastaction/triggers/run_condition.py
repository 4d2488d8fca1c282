"""The trigger behind a deferred run-condition gate."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from airflow.triggers.base import BaseTrigger, TaskSkippedEvent, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_leastaction.airflow_seam.context import (
    attempt_key,
    context_interval_end,
    context_run_started,
    context_slot,
    trigger_context,
)
from airflow_leastaction.airflow_seam.deadline_runs import watch_in_triggerer
from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch, warn_async
from airflow_leastaction.airflow_seam.run_tasks import run_states, run_structure
from airflow_leastaction.catalog.audit import AttemptKey, RerunOnArrival
from airflow_leastaction.catalog.engine import is_outage
from airflow_leastaction.exceptions import RunStatesUnreadableError
from airflow_leastaction.gating.admission import gate_mode
from airflow_leastaction.gating.engine import RunCondition, Verdict
from airflow_leastaction.gating.fallback import Fallback, reruns_on_late_arrival
from airflow_leastaction.hooks.catalog import store_at
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.run_slot import RunSlot, noted
from airflow_leastaction.run_conditions.judging import (
    RunView,
    evaluate,
    in_run_pending,
    in_run_unfinished,
    judge_whole_intervals,
    whole_interval_requests,
)
from airflow_leastaction.run_conditions.model import Dependency, GateSpec
from airflow_leastaction.run_conditions.rejudge import NOT_MADE, Judged, judged, stands
from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy, due
from airflow_leastaction.triggers import wire
from airflow_leastaction.triggers.poll_group import readable_catalog_url
from airflow_leastaction.triggers.poller import CatalogPoller, look
from airflow_leastaction.triggers.run_states import RunStates
from airflow_leastaction.triggers.task_end import end_event, settle_from_trigger
from airflow_leastaction.triggers.trigger_log import ClassLog
from airflow_leastaction.triggers.wire import TriggerStatus


@dataclass(frozen=True)
class _Started:
    """A gate started in the triggerer: the attempt its decisions belong to and the run's instant."""

    attempt: AttemptKey
    judged_at: RunSlot


class RunConditionTrigger(ClassLog, BaseTrigger):
    """Wait until a gated task's run condition is met (``ADMIT``) or can never be (``SKIP``).

    Same-run upstream states come from Airflow through the supervisor each tick, and catalog reads (slot
    records of same-run upstreams, latest runs of tasks in other DAGs) from the catalog: both shared with
    every other gate in the triggerer, one catalog poll per tick per kind and one question to Airflow per
    tick per DAG (:mod:`~airflow_leastaction.triggers.run_states`). Upstreams in other DAGs are looked at on the wait
    rule's schedule only. While the catalog cannot be read the trigger keeps waiting (and says so once);
    when ``[leastaction] gates`` is no longer ``enforce`` it fires ``relaxed`` as soon as no same-run
    upstream is still running, so the worker can admit and record BYPASSED decisions.

    Started in the triggerer (``end_from_trigger``, the gate's default), it takes the run's values from
    the task instance Airflow gives it, records the decisions itself and ends the task: success when it
    admits, skipped when it skips. What it cannot decide there (relaxed gates, catalog down while it
    records, no run context) it hands to a worker with a plain event, as a trigger a worker deferred to.

    :param dag_id: the DAG of the gate.
    :param run_id: the run.
    :param task_id: the gated task.
    :param dependencies: the gate's dependencies (``Dependency.as_dict()``).
    :param condition: ``ALL``, ``ANY`` or ``N``.
    :param count: the count of ``N``.
    :param slot_requests: catalog identity (dict) of each same-run upstream, by task id.
    :param slot: ISO-8601 slot of the run in the catalog.
    :param upstream: direct upstream task ids of every task of the DAG.
    :param waiting: task ids of the gates and the run-outcome task.
    :param consumed: per dependency key, the revision consumed last by its upstream slot (ISO), in
        :func:`~airflow_leastaction.triggers.wire.encode_last_consumed`'s form.
    :param clock: the wait clock (``WaitClock.as_dict()``); it starts when the same-run dependencies
        are final.
    :param max_wait: seconds one check may wait for runs in progress elsewhere.
    :param max_looks: looks one check may take.
    :param catalog_conn_id: catalog connection id.
    :param poll_interval: seconds between ticks.
    :param run_gate: the DAG's run gate, if it has one: the gate waits until it admitted the run.
    :param interval_end: ISO-8601 end of the run's data interval (for dependencies judged on the whole
        interval).
    :param active: False: the gated task is inactive; a trigger started in the triggerer skips at once.
    :param end_from_trigger: started in the triggerer: ``run_id``, ``slot``, ``interval_end``,
        ``upstream``, ``waiting`` and ``consumed`` (None) come from the run, and the trigger ends the task.
    :param fallback: the gate's fallback (``Fallback.as_dict()``), if any: its deadline is judged on each
        tick of the shared poll, so it is met within one poll interval, with no read of its own.
    :param timezone: the DAG's timezone, on whose clock the fallback's deadline is read.
    :param run_started: ISO-8601 time the run started (with a fallback): a run that started after its
        deadline waits for its own tasks (:func:`~airflow_leastaction.gating.fallback.awaits_own_run`).
    """

    def __init__(
        self,
        dag_id: str,
        run_id: str | None,
        task_id: str,
        dependencies: list[dict],
        condition: str,
        count: int | None,
        slot_requests: dict[str, dict],
        slot: str | None,
        upstream: dict[str, list[str]] | None,
        waiting: list[str] | None,
        consumed: dict[str, list] | None = None,
        clock: dict | None = None,
        max_wait: float = 3600.0,
        max_looks: int = 30,
        catalog_conn_id: str | None = None,
        poll_interval: float = 5.0,
        run_gate: str | None = None,
        interval_end: str | None = None,
        active: bool = True,
        end_from_trigger: bool = False,
        fallback: dict | None = None,
        timezone: str = "UTC",
        run_started: str | None = None,
        warning: dict | None = None,
    ):
        super().__init__()
        # Not ``self.task_id``: Airflow sets that to the gate's own task id once it hands the trigger its task
        # instance, and the gated task's would be lost (its consumption, its re-run on late arrival).
        self.dag_id, self.run_id, self.gated_task_id = dag_id, run_id, task_id
        self.run_gate = run_gate
        self.dependencies, self.condition, self.count = dependencies, condition, count
        self.slot_requests, self.slot, self.upstream, self.waiting = slot_requests, slot, upstream, waiting
        self.consumed = consumed or {}
        self.clock = clock or WaitClock().as_dict()
        self.max_wait, self.max_looks = float(max_wait), int(max_looks)
        self.catalog_conn_id, self.poll_interval = catalog_conn_id, float(poll_interval)
        self.interval_end = interval_end
        self.active, self.end_from_trigger = bool(active), bool(end_from_trigger)
        self.fallback, self.timezone, self.run_started = fallback, timezone, run_started
        self.warning = warning
        self._watch: DeadlineWatch | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        keys = (
            "dag_id",
            "run_id",
            "dependencies",
            "condition",
            "count",
            "slot_requests",
            "slot",
            "upstream",
            "waiting",
            "consumed",
            "clock",
            "max_wait",
            "max_looks",
            "catalog_conn_id",
            "poll_interval",
            "run_gate",
            "interval_end",
            "active",
            "end_from_trigger",
        )
        kwargs = {"task_id": self.gated_task_id, **{k: getattr(self, k) for k in keys}}
        if self.fallback is not None:  # a gate without one keeps the form every release reads
            kwargs.update(fallback=self.fallback, timezone=self.timezone, run_started=self.run_started)
        if self.warning is not None:  # likewise without a warning
            kwargs.update(warning=self.warning)
        return self.classpath(), kwargs

    def spec(self) -> GateSpec:
        deps = tuple(Dependency.from_dict(d) for d in self.dependencies)
        fallback = Fallback.from_dict(self.fallback) if self.fallback else None
        condition = RunCondition(self.condition, self.count)
        return GateSpec(
            self.gated_task_id, deps, condition, run_gate=self.run_gate, fallback=fallback, timezone=self.timezone
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        if self.end_from_trigger and not self.active:
            self.log.info("task %r is inactive; its dependencies are ignored", self.gated_task_id)
            yield TaskSkippedEvent()
            return
        url = await readable_catalog_url(self.catalog_conn_id, self.poll_interval, self.log)
        started = await self._start(url) if self.end_from_trigger else None
        if isinstance(started, TriggerEvent):
            yield started
            return
        spec = self.spec()
        slot = dt.datetime.fromisoformat(self.slot)
        deadline = spec.deadline(slot)
        run_started = dt.datetime.fromisoformat(self.run_started) if self.run_started else None
        policy = WaitPolicy(
            dt.timedelta(seconds=self.max_wait), self.max_looks, dt.timedelta(seconds=self.poll_interval)
        )
        clock = WaitClock.from_dict(self.clock)
        consumed = wire.decode_last_consumed(self.consumed)
        if self.warning and "key" in self.warning:  # resolved by the worker that deferred
            self._watch = DeadlineWatch.from_dict(self.warning)
        seen: tuple | None = None
        by_identity = {tid: TaskIdentity.from_dict(i) for tid, i in self.slot_requests.items()}
        last_reasons = None
        latest: dict = {}
        last: Judged | None = None  # what the last judgement was made on: an unchanged tick does not judge
        async with AsyncExitStack() as stack:
            slots_sub = await stack.enter_async_context(
                CatalogPoller.shared(url, self.poll_interval, "slot_records").subscribe(
                    [(i, slot) for i in by_identity.values()]
                )
            )
            runs_sub = intervals_sub = None
            by_run = [d.upstream for d in spec.elsewhere if not d.whole_interval]
            if by_run:
                runs_sub = await stack.enter_async_context(
                    CatalogPoller.shared(url, self.poll_interval, "latest_runs").subscribe(by_run)
                )
            end = dt.datetime.fromisoformat(self.interval_end) if self.interval_end else None
            if any(d.whole_interval for d in spec.elsewhere):
                intervals_sub = await stack.enter_async_context(
                    CatalogPoller.shared(url, self.poll_interval).subscribe(whole_interval_requests(spec, slot, end))
                )
            states_sub = None
            if spec.in_run or spec.run_gate:  # one question per DAG per tick for every gate of the triggerer
                states_sub = await stack.enter_async_context(
                    RunStates.shared(url, self.poll_interval).subscribe(self.dag_id, self.run_id)
                )
            blind = False
            while True:
                try:
                    subs = (slots_sub, runs_sub, intervals_sub, states_sub)
                    asleep = last is not None and self._watch is None  # a warning's watch looks every tick
                    found, fresh_runs, snapshot, states = await look(subs, NOT_MADE, last and last.until, asleep)
                except Exception as exc:  # catalog or API down: keep waiting, say why once; a bug fails the task
                    if not (is_outage(exc) or isinstance(exc, RunStatesUnreadableError)):
                        raise
                    if not blind:
                        self.log.warning("gate %s cannot look, waiting for the catalog: %s", self.gated_task_id, exc)
                    blind, last = True, None
                    relaxed = await self._relaxed(spec, clock, None, f"catalog unreachable: {exc}")
                    if relaxed is not None:
                        yield relaxed
                        return
                    continue
                if blind:
                    self.log.warning("gate %s can look again", self.gated_task_id)
                    blind = False
                now = dt.datetime.now(dt.UTC)
                if self._watch is not None:  # before judging: an upstream that just landed may clear it
                    reads = (found, fresh_runs if runs_sub is not None else None, snapshot)
                    changed = seen is None or any(a is not b for a, b in zip(reads, seen, strict=True))
                    seen = reads
                    await warn_async(self._watch, lambda: store_at(url), now, self.log, changed)
                if stands(last, (found, fresh_runs, snapshot, states), clock, now):
                    continue  # nothing it reads changed and no instant it waits for came: the same verdict
                if due(clock, now) or not latest:
                    latest = fresh_runs
                records = {tid: found[(i, slot)] for tid, i in by_identity.items() if (i, slot) in found}
                view = RunView(self.run_id, states, self.upstream, frozenset(self.waiting), records)
                intervals = judge_whole_intervals(spec, snapshot, slot, end) if snapshot is not None else {}
                before = clock
                outcome, clock = evaluate(
                    spec, view, latest, consumed, clock, policy, now, intervals, deadline, run_started
                )
                last = judged((found, fresh_runs, snapshot, states), before, clock, policy, deadline, now)
                event = (
                    None
                    if outcome.verdict is Verdict.WAIT
                    else TriggerEvent(
                        {
                            "status": TriggerStatus.of(outcome.verdict).value,
                            "summary": outcome.summary(),
                            "clock": clock.as_dict(),
                        }
                    )
                )
                if event is not None and started is not None:
                    event = await self._end(started, outcome, url, event)
                event = event or await self._relaxed(spec, clock, outcome, outcome.summary())
                if event is not None:
                    yield event
                    return
                if outcome.waiting_reasons != last_reasons:
                    last_reasons = outcome.waiting_reasons
                    self.log.info("%s waiting: %s", self.gated_task_id, outcome.summary())

    async def _start(self, url: str) -> _Started | TriggerEvent:
        """Take from the run what a worker would have passed: the run, its slot and interval end, the
        DAG's structure, the revisions consumed last and the attempt the decisions belong to. A plain
        event hands the gate to a worker instead (no run context, or gates relaxed during an outage)."""
        context = await sync_to_async(trigger_context)(self)
        judged_at = context_slot(context) if context is not None else None
        if judged_at is None:  # the worker judges, or fails naming the run without an instant
            self.log.warning("gate %s has no run context in the triggerer; a worker judges it", self.gated_task_id)
            return self._undecided()
        self.run_id = context["run_id"]
        self.slot = judged_at.instant.isoformat()
        end, started = context_interval_end(context), context_run_started(context)
        self.interval_end = end.isoformat() if end is not None else None
        self.run_started = started.isoformat() if started is not None else None
        self.upstream, self.waiting = run_structure(context["ti"].task.dag)
        keys = [d.key for d in self.spec().elsewhere]
        consumed = await self._last_consumed(url, keys) if keys else {}
        if isinstance(consumed, TriggerEvent):
            return consumed
        self.consumed = wire.encode_last_consumed(consumed)
        slot, gate = judged_at.instant, context["ti"].task_id
        run = dict(dag_id=self.dag_id, task_id=gate, slot=slot, cap=self.spec().deadline(slot))
        self._watch = await watch_in_triggerer(self.warning, context, self.log, **run)
        return _Started(attempt_key(context, self.dag_id, gate), judged_at)

    async def _last_consumed(self, url: str, keys: list[str]) -> dict | TriggerEvent:
        """The revisions this task consumed last, read once the catalog answers: a catalog that is down
        when the gate starts keeps it waiting here (the outage logged once, as in the wait below), or
        hands it to a worker only when the deployment relaxed its gates meanwhile."""
        blind = False
        while True:
            try:
                store = await sync_to_async(store_at)(url)
                consumed = await sync_to_async(store.audit.last_consumed)(
                    self.dag_id, self.gated_task_id, keys, other_than=self.run_id
                )
            except Exception as exc:
                if not is_outage(exc):
                    raise
                if not blind:
                    self.log.warning("gate %s cannot look, waiting for the catalog: %s", self.gated_task_id, exc)
                    blind = True
                relaxed = await self._relaxed(self.spec(), WaitClock(), None, f"catalog unreachable: {exc}")
                if relaxed is not None:
                    return relaxed
                await asyncio.sleep(self.poll_interval)
                continue
            if blind:
                self.log.warning("gate %s can look again", self.gated_task_id)
            return consumed

    async def _end(self, started: _Started, outcome, url: str, event: TriggerEvent) -> TriggerEvent:
        """Record the decisions of ``outcome`` and end the task, or hand ``event`` (the verdict) to a
        worker: with relaxed gates (the worker records BYPASSED decisions under its own configuration)
        or when the catalog cannot take the decisions now."""
        mode = gate_mode()
        if mode.relaxed:
            return event
        outcome = noted(outcome, started.judged_at)
        try:
            rerun = RerunOnArrival((self.gated_task_id,)) if reruns_on_late_arrival(self.fallback) else None
            admission = await settle_from_trigger(
                url, started.attempt, outcome, downstream_slot=started.judged_at.instant, mode=mode, rerun=rerun
            )
        except Exception as exc:
            if not is_outage(exc):
                raise
            self.log.warning("gate %s cannot record its decisions; a worker will: %s", self.gated_task_id, exc)
            return event
        for j in outcome.judgements:
            self.log.info("  %s %s", "+" if j.satisfied else "-", j.reason)
        verb = "admitted" if admission.admitted else "can never start in this run"
        verb += " degraded, without the MISSING dependencies" if admission.degraded else ""
        self.log.info("%s %s: %s", self.gated_task_id, verb, outcome.summary())
        return end_event(admission)

    @staticmethod
    def _undecided() -> TriggerEvent:
        return TriggerEvent({"status": TriggerStatus.UNDECIDED.value, "clock": WaitClock().as_dict()})

    async def _relaxed(self, spec: GateSpec, clock: WaitClock, outcome, summary: str) -> TriggerEvent | None:
        """The ``relaxed`` event once the deployment relaxed its gates after this wait began (the worker
        admits and records BYPASSED decisions), unless a same-run upstream is still pending: relaxing
        never reorders a run. ``outcome`` None: the catalog is down and Airflow alone tells."""
        mode = gate_mode()
        if not mode.relaxed:
            return None
        if outcome is not None and in_run_pending(outcome):
            return None
        if outcome is None and not await self._in_run_finished(spec):
            return None
        return TriggerEvent(
            {"status": TriggerStatus.RELAXED.value, "mode": mode.value, "summary": summary, "clock": clock.as_dict()}
        )

    async def _in_run_finished(self, spec: GateSpec) -> bool:
        """Whether every same-run upstream is finished, from Airflow alone (the catalog is down)."""
        try:
            states = await run_states(self.dag_id, self.run_id) if spec.in_run else {}
        except Exception:  # the API is down too: nothing is known to be finished
            return False
        return not in_run_unfinished(spec, states)
