"""A waiting gate's early warning before its deadline, wherever it waits: a trigger's wait loop in the
triggerer, a sensor's poke or a gate's look on a worker.

Each look (:meth:`DeadlineWatch.look`) reads the gated task's expected completion for the run's slot and
the chance it completes after the deadline (the expectations' reads, with the gate's own ALL/ANY/N and its
fallback's deadline as cap), asks
the rule (:func:`~airflow_leastaction.gating.deadline_warning.next_step`) and acts on the catalog
(:mod:`~airflow_leastaction.catalog.deadline_warnings`): the one process whose claim lands calls the
callback (:func:`warn_async`, :func:`warn_sync`) and records what it did. Nothing here ever fails a gate:
a look that cannot read, and a callback that raises, are logged (the latter recorded) and the gate waits
on.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from airflow_leastaction.airflow_seam.deadline_alerts import call_async, call_sync
from airflow_leastaction.catalog.deadline_warnings import (
    Expected,
    WarningKey,
    claim_warning,
    clear_warning,
    record_callback,
    warning_state,
)
from airflow_leastaction.catalog.engine import is_outage
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from airflow_leastaction.config import setting
from airflow_leastaction.gating.deadline_warning import (
    CLEAR,
    CLEARED,
    DEFAULT_CHANCE,
    DEFAULT_EARLY_CHANCE,
    DEFAULT_LEAD,
    WARN,
    WARNED,
    DeadlineWarning,
    WarningRule,
    cleared_message,
    next_step,
    path_text,
    task_names,
    warning_chance,
    warning_lead,
    warning_message,
)
from airflow_leastaction.identity import TaskIdentity

log = logging.getLogger(__name__)

#: How often a waiting gate looks at its expectation when nothing it watches changed: the estimate moves
#: with the clock too (a parent not started by its usual time pushes it later), but slowly.
RECHECK = dt.timedelta(seconds=60)


@dataclass(frozen=True)
class Notice:
    """What a look did: warned (the callback is due) or cleared, with the sentence said."""

    step: str
    message: str
    median: dt.datetime | None
    p90: dt.datetime | None
    critical_path: tuple[str, ...]
    chance: float | None = None  # that the task completes after the deadline


def warning_rule() -> WarningRule:
    """The deployment's warning rule: ``[leastaction] deadline_warning_probability``,
    ``deadline_warning_early_probability`` and ``deadline_warning_lead_minutes`` (each its default unset)."""
    early = "deadline_warning_early_probability"
    return WarningRule(
        warning_chance(setting("deadline_warning_probability", str(DEFAULT_CHANCE))),
        warning_chance(setting(early, str(DEFAULT_EARLY_CHANCE)), early),
        warning_lead(setting("deadline_warning_lead_minutes", str(DEFAULT_LEAD.total_seconds() / 60))),
    )


@dataclass
class DeadlineWatch:
    """One gate's warning for one run: whose (``key``, with the deadline), what is expected (``target`` at
    ``slot``, combined as ``mode``/``n``, started by ``cap`` at the latest), and whom to tell."""

    warning: DeadlineWarning
    key: WarningKey
    target: TaskIdentity
    slot: dt.datetime
    timezone: str = "UTC"
    mode: str = "ALL"
    n: int | None = None
    cap: dt.datetime | None = None
    #: The gated task, as messages name it.
    task: str = ""
    #: Parents to declare for ``target`` before the first look (a run condition's dependencies), with the
    #: task's schedule: ``{"parents": [identity dicts], "meta": {cron, timezone, dag_id, task_id}}``.
    declare: dict | None = None
    state: str | None = field(default=None, init=False)
    _known: bool = field(default=False, init=False)
    _last: dt.datetime | None = field(default=None, init=False)
    #: The last look that judged a chance through to its end (a look that could not read, had no estimate, or
    #: failed to record does not count): the warning rule's "previous look".
    _judged: dt.datetime | None = field(default=None, init=False)

    def take_turn(self, now: dt.datetime, changed: bool = True) -> bool:
        """Whether to look now (and the turn taken: a look that fails waits for the next one too): never
        once cleared or past the deadline; at once after a change of what the gate watches; otherwise
        every :data:`RECHECK`."""
        if self.state == CLEARED or now >= self.key.deadline:
            return False
        if changed or self._last is None or now - self._last >= RECHECK:
            self._last = now
            return True
        return False

    def next_look(self, now: dt.datetime) -> dt.datetime | None:
        """When :meth:`take_turn` says yes next if nothing changes (None: never again)."""
        if self.state == CLEARED or now >= self.key.deadline:
            return None
        return now if self._last is None else self._last + RECHECK

    def look(self, store: CatalogStore, now: dt.datetime) -> Notice | None:
        """One look (blocking: catalog reads and at most one write). The notice when this process warned
        or cleared, else None."""
        if not self._known and self.declare:  # the parents the expectation follows, before it is read
            parents = [TaskIdentity.from_dict(p) for p in self.declare["parents"]]
            store.declare_parents(self.target, TaskMeta(**self.declare["meta"]), parents)
        deadline = self.key.deadline
        how = {"mode": self.mode, "n": self.n, "cap": self.cap}
        found, chance = expectation(store, self.target, self.slot, now, deadline, **how)
        if not self._known:  # a gate resumed after a restart finds what it said before
            self.state, self._known = warning_state(store, self.key), True
        step = next_step(self.state, chance, deadline, now, warning_rule(), self._judged)
        notice = None if step is None else self._act(step, store, found, chance, now)
        if chance is not None:
            self._judged = now
        return notice

    def _act(self, step: str, store: CatalogStore, found, chance: float, now: dt.datetime) -> Notice | None:
        """Claim the warning or clear it, as ``step`` asks; the notice when this process did."""
        deadline = self.key.deadline
        path = tuple(found.critical_path)
        expected = Expected(found.median, found.p90, path_text(path))
        if step == WARN and claim_warning(store, self.key, expected, now):
            self.state = WARNED
            text = warning_message(self.task, self.slot, deadline, chance, found.p90, path, self.timezone)
            return Notice(WARN, text, found.median, found.p90, path, chance)
        if step == CLEAR and clear_warning(store, self.key, expected, now):
            self.state = CLEARED
            text = cleared_message(self.task, self.slot, deadline, chance, found.p90, self.timezone)
            return Notice(CLEAR, text, found.median, found.p90, path, chance)
        self.state = warning_state(store, self.key)  # another process claimed or cleared it first
        return None

    def as_dict(self) -> dict:
        """The watch as a worker hands it to its trigger (no state: the trigger reads the catalog's)."""
        k = self.key
        return {
            **declared(self.warning, self.target, self.task, self.timezone, self.mode, self.n),
            "key": {"dag_id": k.dag_id, "run_id": k.run_id, "task_id": k.task_id, "map_index": k.map_index},
            "at": k.deadline.isoformat(),
            "slot": self.slot.isoformat(),
            "cap": self.cap.isoformat() if self.cap else None,
            **({"declare": self.declare} if self.declare else {}),
        }

    @classmethod
    def from_dict(cls, data: dict) -> DeadlineWatch:
        key = WarningKey(**data["key"], deadline=dt.datetime.fromisoformat(data["at"]))
        cap = data.get("cap")
        return cls(
            DeadlineWarning.from_dict(data["deadline"]),
            key,
            TaskIdentity.from_dict(data["target"]),
            dt.datetime.fromisoformat(data["slot"]),
            data.get("timezone", "UTC"),
            data.get("mode", "ALL"),
            data.get("n"),
            dt.datetime.fromisoformat(cap) if cap else None,
            data.get("task", ""),
            data.get("declare"),
        )

    def context(self, notice: Notice) -> dict:
        """What the callback is given as its ``context``, in the shape of Airflow's deadline callbacks
        (``dag_run``, ``deadline``) plus the warning itself."""
        k = self.key
        return {
            "dag_run": {"dag_id": k.dag_id, "run_id": k.run_id},
            "deadline": {"deadline_time": k.deadline.isoformat(), "early_warning": True},
            "deadline_warning": {
                "message": notice.message,
                "dag_id": k.dag_id,
                "run_id": k.run_id,
                "gate": k.task_id,
                "map_index": k.map_index,
                "task": self.task,
                "slot": self.slot.isoformat(),
                "deadline": k.deadline.isoformat(),
                "expected_median": notice.median.isoformat() if notice.median else None,
                "expected_p90": notice.p90.isoformat() if notice.p90 else None,
                "chance_of_missing": notice.chance,
                "critical_path": task_names(notice.critical_path),
            },
        }


def declared(
    warning: DeadlineWarning, target: TaskIdentity, task: str, timezone: str, mode: str = "ALL", n: int | None = None
) -> dict:
    """A gate's warning as its trigger's kwargs carry it before the run is known (started in the
    triggerer): what to warn against, whose completion is expected and how its parents combine."""
    return {
        "deadline": warning.as_dict(),
        "target": target.as_dict(),
        "task": task,
        "timezone": timezone,
        "mode": mode,
        "n": n,
    }


def expectation(
    store: CatalogStore, identity: TaskIdentity, slot: dt.datetime, now: dt.datetime, deadline: dt.datetime, **how
):
    """The expectation of ``identity``'s slot ``slot`` and its chance of completing after ``deadline`` (the
    one read the warning makes)."""
    from airflow_leastaction.expectations.reads import expectation_and_chance

    return expectation_and_chance(store, identity, slot, now, deadline, **how)


def warn_sync(watch: DeadlineWatch, store: CatalogStore, now: dt.datetime, logger=log, changed: bool = True) -> None:
    """A look from a worker (a sensor's poke, a gate's check), and the callback if this process warned."""
    if watch.take_turn(now, changed) and (notice := _looked(watch, store, now, logger)) is not None:
        _record(store, watch, _called_sync(watch, notice, logger), logger)


async def warn_async(
    watch: DeadlineWatch, open_store: Callable[[], CatalogStore], now: dt.datetime, logger=log, changed: bool = True
) -> None:
    """A look from a trigger's wait loop: the catalog off the event loop (the store ``open_store`` builds, in
    a thread: the trigger's own, through the catalog hook), an async callback awaited, a sync one in a thread."""
    if not watch.take_turn(now, changed):
        return
    try:
        store = await asyncio.to_thread(open_store)
    except Exception as exc:
        _unread(watch, exc, logger)
        return
    notice = await asyncio.to_thread(_looked, watch, store, now, logger)
    if notice is not None:
        outcome = await _called_async(watch, notice, logger)
        await asyncio.to_thread(_record, store, watch, outcome, logger)


def _looked(watch: DeadlineWatch, store: CatalogStore, now: dt.datetime, logger) -> Notice | None:
    """One look, said in the log; the notice when this process warned (its callback is due)."""
    try:
        notice = watch.look(store, now)
    except Exception as exc:
        _unread(watch, exc, logger)
        return None
    if notice is None:
        return None
    if notice.step == CLEAR:
        logger.info("deadline warning cleared: %s", notice.message)
        return None
    logger.warning("deadline warning: %s", notice.message)
    return notice


def _called_sync(watch: DeadlineWatch, notice: Notice, logger) -> str:
    callback = watch.warning.callback
    if callback is None:
        return "no callback"
    try:
        call_sync(callback, watch.context(notice))
    except Exception as exc:
        return _failed(callback, exc, logger)
    return "called"


async def _called_async(watch: DeadlineWatch, notice: Notice, logger) -> str:
    callback = watch.warning.callback
    if callback is None:
        return "no callback"
    try:
        await call_async(callback, watch.context(notice))
    except Exception as exc:
        return _failed(callback, exc, logger)
    return "called"


def _failed(callback: dict, exc: Exception, logger) -> str:
    """A callback that raised: logged with its traceback, its error kept for the row; the gate waits on."""
    logger.error("deadline callback %s raised; the gate waits on", callback.get("path"), exc_info=exc)
    return f"failed: {type(exc).__name__}: {exc}"


def _record(store: CatalogStore, watch: DeadlineWatch, outcome: str, logger) -> None:
    try:
        record_callback(store, watch.key, outcome)
    except Exception as exc:  # the warning was given; only its audit line is lost
        logger.warning("could not record the deadline callback's outcome (%s): %s", outcome, exc)


def _unread(watch: DeadlineWatch, exc: Exception, logger) -> None:
    """A look that failed: the catalog away (said at info, the gate says so itself) or anything else,
    which never reaches the gate."""
    if is_outage(exc):
        logger.info("deadline warning of %s not looked at: catalog unreachable: %s", watch.key.task_id, exc)
    else:
        logger.warning("deadline warning of %s not looked at: %s: %s", watch.key.task_id, type(exc).__name__, exc)


__all__ = ["RECHECK", "DeadlineWatch", "Notice", "declared", "expectation", "warn_async", "warn_sync", "warning_rule"]
