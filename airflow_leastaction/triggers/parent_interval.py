"""The trigger behind a :class:`~airflow_leastaction.sensors.parent_interval.ParentIntervalSensor`: deferred
to by a worker, or started and ended in the triggerer (the sensor's default)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from airflow.triggers.base import BaseTrigger, TaskFailedEvent, TaskSuccessEvent, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_leastaction.airflow_seam.child_interval import (
    child_interval_end,
    child_slot,
    consumed_revisions,
    declare,
    triggerer_deadline,
)
from airflow_leastaction.airflow_seam.context import attempt_key, trigger_context
from airflow_leastaction.airflow_seam.deadline_runs import watch_in_triggerer
from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch, warn_async
from airflow_leastaction.catalog.audit import RerunOnArrival
from airflow_leastaction.catalog.engine import is_outage
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.admission import gate_mode
from airflow_leastaction.gating.engine import Verdict
from airflow_leastaction.gating.fallback import (
    Fallback,
    decide_all_with_fallback,
    fallback_deadline,
    reruns_on_late_arrival,
)
from airflow_leastaction.hooks.catalog import store_at
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import snapshot_requests
from airflow_leastaction.intervals.parents import judge_parents
from airflow_leastaction.intervals.run_slot import noted
from airflow_leastaction.triggers import wire
from airflow_leastaction.triggers.poll_group import readable_catalog_url
from airflow_leastaction.triggers.poller import CatalogPoller, DeadlineReached, next_until
from airflow_leastaction.triggers.task_end import record_success_from_trigger, settle_from_trigger
from airflow_leastaction.triggers.trigger_log import ClassLog
from airflow_leastaction.triggers.wire import TriggerStatus

#: What the watch loop concludes with: a :class:`~airflow_leastaction.triggers.wire.TriggerStatus`, the last
#: judgements and reasons; the answer is the event to fire, or None to keep waiting.
Conclude = Callable[[TriggerStatus, list, list[str]], Awaitable[TriggerEvent | None]]


async def _nothing() -> None:
    return None


@dataclass
class _Wait:
    """What one wait judges: the parents, the child's interval, what its consumers already consumed.

    ``prepare`` runs before each judgement until it succeeds once (work that needs the catalog up).
    """

    parents: list[TaskIdentity]
    child: dt.datetime
    end: dt.datetime | None
    consumed: dict
    deadline: dt.datetime | None
    prepare: Callable[[], Awaitable[None]] = field(default=_nothing)
    #: The fallback's (deadline, require), if any: from then on enough parents admit degraded.
    fallback: tuple[dt.datetime, int] | None = None
    #: The early warning before the sensor's deadline, if any: looked at on each change, and every
    #: :data:`~airflow_leastaction.airflow_seam.deadline_watch.RECHECK` while nothing changes.
    watch: DeadlineWatch | None = None

    def decide(self, judgements, now: dt.datetime):
        return decide_all_with_fallback(judgements, self.fallback, now)

    def fallback_pending(self, now: dt.datetime) -> bool:
        """The fallback's deadline is still ahead: the wait wakes at it, whatever changes."""
        return self.fallback is not None and now < self.fallback[0]

    def next_look(self, now: dt.datetime) -> dt.datetime | None:
        """When the warning looks next if nothing changes (None: it does not)."""
        return self.watch.next_look(now) if self.watch is not None else None


#: The state logged once for any number of failed polls in a row, whatever their errors say.
UNREACHABLE = ("catalog unreachable",)

#: What :meth:`ParentIntervalTrigger._next` returns when the warning's look is due before anything changed.
LOOK = object()

#: The reason a wait reports when its deadline passed before any catalog read answered.
NOTHING_READ_YET = "the deadline passed before the catalog answered a first read"


class ParentIntervalTrigger(ClassLog, BaseTrigger):
    """Wait until every parent has finished the interval that covers the child's.

    All instances in one triggerer share one catalog poll per tick (see
    :class:`~airflow_leastaction.triggers.poller.CatalogPoller`). While the catalog cannot be reached it
    keeps waiting and says so once. Each event carries the per-parent reasons.

    Deferred to by a worker, it fires ``admitted`` when the parents are satisfied (the worker judges again
    and records), ``failed`` when a parent is in a failed state and ``on_parent_failure == "fail"``,
    ``relaxed`` when ``[leastaction] gates`` is no longer ``enforce``, and ``timeout`` at ``deadline``
    (whether or not the catalog answers).

    Started in the triggerer (``end_from_trigger``, with the task instance Airflow gives a
    ``start_from_trigger`` task), it works out the run's slot and attempt itself, declares the parents,
    and ends the task there: on admission it records the SATISFIED decisions (and, when the sensor gates
    nothing, their consumption with its success) and succeeds; a failed parent under ``fail`` fails the
    task. The deadline fails the task too, unless it has retries: a timeout is never retried, so it is
    handed to a worker to fail without retry, as on the worker path. ``relaxed`` goes to a worker too.

    :param parents: parent identities, as dicts (``TaskIdentity.as_dict()``), each with an optional
        ``coverage`` (``slot`` or ``interval``).
    :param child_interval: ISO-8601 start of the child's interval. Started in the triggerer: the sensor's
        own (templated) value, None for the run's slot.
    :param interval_end: ISO-8601 end of the child's interval (for parents judged on the whole interval).
    :param consumed: per parent key, the revision already consumed per parent slot (ISO keys).
    :param catalog_conn_id: catalog connection id (None: the configured default).
    :param poll_interval: seconds between catalog polls.
    :param deadline: ISO-8601 instant at which to give up, or None.
    :param on_parent_failure: ``wait`` (default) or ``fail``.
    :param end_from_trigger: started in the triggerer: decide, record and end the task there.
    :param child_interval_end: started in the triggerer: the sensor's own (templated) interval end, None
        for the run's data-interval end.
    :param consumers: started in the triggerer: the tasks that consume the admission (the sensor itself
        when it gates nothing); their declared parents are recorded.
    :param wait_for_new_output: started in the triggerer: wait for a newer revision of a parent slot the
        consumers already consumed.
    :param timeout: started in the triggerer: the sensor's timeout in seconds.
    :param execution_timeout: started in the triggerer: the task's execution timeout in seconds, if any.
    :param fallback: the sensor's fallback (``Fallback.as_dict()``), if any: at its deadline the wait takes
        the shared poll's next read (no read of its own) and admits degraded with ``require`` parents.
    :param timezone: the DAG's timezone, on whose clock the fallback's deadline is read.
    :param warning: the sensor's early warning before a deadline, if any (see
        :mod:`~airflow_leastaction.airflow_seam.deadline_watch`): resolved for the run by a worker that
        deferred, or as declared (the run's values are read here) when started in the triggerer.
    """

    def __init__(
        self,
        parents: list[dict[str, str]],
        child_interval: str | dt.datetime | None = None,
        consumed: dict[str, dict[str, int]] | None = None,
        catalog_conn_id: str | None = None,
        poll_interval: float = 5.0,
        deadline: str | None = None,
        on_parent_failure: str = "wait",
        interval_end: str | None = None,
        end_from_trigger: bool = False,
        child_interval_end: str | dt.datetime | None = None,
        consumers: list[str] | None = None,
        declarations: dict[str, list[dict]] | None = None,
        wait_for_new_output: bool = False,
        timeout: float | None = None,
        execution_timeout: float | None = None,
        fallback: dict | None = None,
        timezone: str = "UTC",
        warning: dict | None = None,
    ):
        super().__init__()
        self.parents = parents
        self.child_interval = child_interval
        self.consumed = consumed or {}
        self.catalog_conn_id = catalog_conn_id
        self.poll_interval = float(poll_interval)
        self.deadline = deadline
        self.on_parent_failure = on_parent_failure
        self.interval_end = interval_end
        self.end_from_trigger = bool(end_from_trigger)
        self.child_interval_end = child_interval_end
        self.consumers = list(consumers or [])
        self.declarations = declarations
        self.wait_for_new_output = bool(wait_for_new_output)
        self.timeout = timeout
        self.execution_timeout = execution_timeout
        self.fallback = fallback
        self.timezone = timezone
        self.warning = warning

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {
            "parents": self.parents,
            "child_interval": self.child_interval,
            "consumed": self.consumed,
            "catalog_conn_id": self.catalog_conn_id,
            "poll_interval": self.poll_interval,
            "deadline": self.deadline,
            "on_parent_failure": self.on_parent_failure,
            "interval_end": self.interval_end,
        }
        if self.end_from_trigger:  # a worker's deferral keeps the form every release reads
            kwargs.update(
                end_from_trigger=True,
                child_interval_end=self.child_interval_end,
                consumers=self.consumers,
                declarations=self.declarations,
                wait_for_new_output=self.wait_for_new_output,
                timeout=self.timeout,
                execution_timeout=self.execution_timeout,
            )
        if self.fallback is not None:  # a sensor without one keeps the form every release reads
            kwargs.update(fallback=self.fallback, timezone=self.timezone)
        if self.warning is not None:  # likewise without a warning
            kwargs.update(warning=self.warning)
        return self.classpath(), kwargs

    def _fallback_at(self, child: dt.datetime) -> tuple[dt.datetime, int] | None:
        if self.fallback is None:
            return None
        fallback = Fallback.from_dict(self.fallback)
        return fallback_deadline(fallback.at, child, self.timezone), fallback.require

    async def run(self) -> AsyncIterator[TriggerEvent]:
        parents = [TaskIdentity.from_dict(p) for p in self.parents]
        url = await readable_catalog_url(self.catalog_conn_id, self.poll_interval, self.log)
        if self.end_from_trigger:
            async for event in self._run_in_triggerer(parents, url):
                yield event
            return
        child = dt.datetime.fromisoformat(str(self.child_interval))
        end = dt.datetime.fromisoformat(self.interval_end) if self.interval_end else None
        deadline = dt.datetime.fromisoformat(self.deadline) if self.deadline else None
        wait = _Wait(
            parents, child, end, wire.decode_consumed(self.consumed), deadline, fallback=self._fallback_at(child)
        )
        wait.watch = DeadlineWatch.from_dict(self.warning) if self.warning else None
        yield await self._watch(url, wait, self._for_worker)

    async def _run_in_triggerer(self, parents: list[TaskIdentity], url: str) -> AsyncIterator[TriggerEvent]:
        context = trigger_context(self)
        if context is None:
            raise RuntimeError(
                f"{type(self).__name__}: end_from_trigger needs the task instance Airflow gives a task started "
                "in the triggerer"
            )
        ti = self.task_instance
        try:
            judged_at = child_slot(context, self.child_interval, ti.dag_id, ti.task_id)
            end = child_interval_end(context, self.child_interval_end, [p.coverage for p in parents], ti.task_id)
        except ConfigurationError as exc:
            self.log.error("%s", exc)
            yield TaskFailedEvent()
            return
        deadline = triggerer_deadline(self.timeout_after, float(self.timeout or 0), self.execution_timeout)
        wait = _Wait(parents, judged_at.instant, end, {}, deadline, fallback=self._fallback_at(judged_at.instant))
        cap = wait.fallback[0] if wait.fallback else None
        run = dict(dag_id=ti.dag_id, task_id=ti.task_id, slot=wait.child, cap=cap)
        wait.watch = await watch_in_triggerer(self.warning, context, self.log, **run)

        async def prepare() -> None:
            wait.consumed = await sync_to_async(self._declare_and_read_consumed)(url, ti.dag_id, judged_at.instant)
            wait.prepare = _nothing

        wait.prepare = prepare
        attempt = attempt_key(context, ti.dag_id, ti.task_id)

        async def conclude(status: TriggerStatus, judgements, reasons: list[str]) -> TriggerEvent | None:
            if status == TriggerStatus.ADMITTED:
                outcome = noted(wait.decide(judgements, dt.datetime.now(dt.UTC)), judged_at)
                return await self._admit(url, attempt, outcome, judged_at.instant)
            if status == TriggerStatus.FAILED:
                self.log.error("parent failed: %s", "; ".join(j.reason for j in judgements if j.rejected))
                return TaskFailedEvent()
            if status == TriggerStatus.TIMEOUT and not getattr(self.task, "retries", 0):
                self.log.error("parents not satisfied in time: %s", "; ".join(reasons) or "no reason given")
                return TaskFailedEvent()
            return await self._for_worker(status, judgements, reasons)

        yield await self._watch(url, wait, conclude)

    def _declare_and_read_consumed(self, url: str, dag_id: str, slot: dt.datetime) -> dict:
        """Declare the consumers' parents; read what they consumed of them already (``wait_for_new_output``)."""
        store = store_at(url)
        parents = [TaskIdentity.from_dict(p) for p in self.parents]
        declare(store, getattr(self.task, "dag", None), dag_id, self.consumers, parents, self.declarations)
        return consumed_revisions(store, dag_id, self.consumers, slot) if self.wait_for_new_output else {}

    async def _admit(self, url: str, attempt, outcome, slot: dt.datetime) -> TriggerEvent | None:
        """Record the admission, and the sensor's success when it consumes its own (it gates nothing).
        The catalog down at this instant: None, and the next poll judges again."""
        try:
            await settle_from_trigger(
                url, attempt, outcome, downstream_slot=slot, mode=gate_mode(), rerun=self._rerun()
            )
        except Exception as exc:
            if not is_outage(exc):
                raise
            self.log.warning("admitted, but the catalog cannot record the decisions yet; judging again: %s", exc)
            return None
        self.log.info("admitted: %s", "; ".join(j.reason for j in outcome.judgements) or "no parents")
        await record_success_from_trigger(self.task_instance, gate=self.task_instance.task_id not in self.consumers)
        return TaskSuccessEvent()

    async def _for_worker(self, status: str, judgements, reasons: list[str]) -> TriggerEvent:
        event = self._event(
            status, judgements, reasons if status in (TriggerStatus.TIMEOUT, TriggerStatus.RELAXED) else None
        )
        return TriggerEvent({**event, "mode": gate_mode().value} if status == TriggerStatus.RELAXED else event)

    async def _watch(self, url: str, wait: _Wait, conclude: Conclude) -> TriggerEvent:
        """Judge on each shared poll until ``conclude`` gives an event, and return it (a coroutine, not a
        generator: ten thousand gates released by one tick each return through one frame)."""
        poller = CatalogPoller.shared(url, self.poll_interval)
        last_state: list | tuple | None = None
        reasons: list[str] = []
        judgements: list = []
        sub = poller.join(snapshot_requests(wait.parents, [p.coverage for p in wait.parents], wait.child, wait.end))
        try:
            while True:
                event = None
                try:
                    snapshot = await self._next(sub, wait)
                    if wait.prepare is not _nothing:
                        await wait.prepare()
                    if wait.watch is not None:  # before judging: a parent that just landed may clear it
                        await warn_async(
                            wait.watch, partial(store_at, url), dt.datetime.now(dt.UTC), self.log, snapshot is not LOOK
                        )
                    if snapshot is LOOK:
                        continue
                except DeadlineReached:
                    # A deadline may pass before the first read answers (a short timeout, a slow catalog).
                    event = await conclude(TriggerStatus.TIMEOUT, judgements, reasons or [NOTHING_READ_YET])
                except Exception as exc:  # the catalog is down: keep waiting, judge nothing; a bug fails the task
                    if not is_outage(exc):
                        raise
                    reasons, judgements = [f"catalog unreachable: {exc}"], []
                    state: list | tuple = UNREACHABLE
                else:
                    judgements = judge_parents(wait.parents, wait.child, snapshot, wait.consumed, interval_end=wait.end)
                    outcome = wait.decide(judgements, dt.datetime.now(dt.UTC))
                    if outcome.verdict is Verdict.ADMIT:
                        event = await conclude(TriggerStatus.ADMITTED, judgements, [])
                        if event is not None:
                            return event
                    reasons = outcome.waiting_reasons
                    state, outcome = reasons, None  # not held while waiting
                if event is None and state != last_state:  # once per change, whatever the poll interval
                    self.log.info("not admitted yet: %s", "; ".join(reasons))
                    last_state = state
                if event is None and gate_mode().relaxed:
                    # The deployment relaxed its gates after this wait began: a worker admits and records
                    # BYPASSED decisions.
                    event = await conclude(TriggerStatus.RELAXED, judgements, reasons)
                if event is None and self.on_parent_failure == "fail" and any(j.rejected for j in judgements):
                    event = await conclude(TriggerStatus.FAILED, judgements, reasons)
                if event is not None:
                    return event
        finally:
            poller.leave(sub)

    @staticmethod
    async def _next(sub, wait: _Wait):
        """The next snapshot that may change the answer: one that changed, or, once the fallback's deadline
        passes, the shared poll's next read (taken at or after the deadline: no read of its own); or
        :data:`LOOK` when the warning's next look comes first (nothing read)."""
        now = dt.datetime.now(dt.UTC)
        pending, look = wait.fallback_pending(now), wait.next_look(now)
        if not pending and look is None:
            return await (sub.next_change() if wait.deadline is None else next_until(sub, wait.deadline))
        wakes = (wait.deadline, wait.fallback[0] if pending else None, look)
        try:
            return await next_until(sub, min(d for d in wakes if d is not None))
        except DeadlineReached:
            now = dt.datetime.now(dt.UTC)
            if wait.deadline is not None and now >= wait.deadline:
                raise
            if pending and now >= wait.fallback[0]:
                return await sub.next()
        return LOOK

    def _rerun(self) -> RerunOnArrival | None:
        """What a degraded admission in the triggerer re-runs on late arrival: the sensor's consumers."""
        if not reruns_on_late_arrival(self.fallback):
            return None
        return RerunOnArrival(tuple(t for t in self.consumers if t != self.task_instance.task_id))

    def _event(self, status: TriggerStatus, judgements, reasons: list[str] | None = None) -> dict[str, Any]:
        return {
            "status": status.value,
            "judgements": [j.as_event() for j in judgements],
            "reasons": reasons if reasons is not None else [j.reason for j in judgements if not j.satisfied],
        }
