"""Task outcomes as events: applied to the catalog, or spooled to local disk when it cannot be reached.

The listener never writes the catalog directly: it builds a :class:`SlotEvent` and calls :func:`deliver`.
If the catalog is down, the event is appended (one JSON line, flushed and fsynced) to a spool file under
``[leastaction] spool_dir``; the next delivery from any process on that machine, or
``airflow-leastaction catalog replay``, applies spooled events first, oldest first. Applying is
idempotent (a success carries its run and attempt) and never goes backwards: the store applies an event
only if it is at least as new as its slot's record (try number within a run, else time), so spools of
several machines replayed in any order, or a replay interrupted and repeated, do no harm.
An event that can never be applied is quarantined, never spooled ahead of the others
(:mod:`~airflow_leastaction.catalog.spool_check`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from airflow_leastaction.catalog.engine import is_outage
from airflow_leastaction.catalog.spool_check import can_never_apply, check_outcome, quarantine
from airflow_leastaction.catalog.spool_files import SPOOL_SUFFIX, Claimed, append, claim, has_backlog  # noqa: F401
from airflow_leastaction.catalog.store import AttemptKey, CatalogStore, SlotOutcome, TaskMeta
from airflow_leastaction.config import airflow_home, setting
from airflow_leastaction.crash_points import CrashPoint
from airflow_leastaction.exceptions import UnappliableOutcomeError
from airflow_leastaction.identity import TaskIdentity

log = logging.getLogger(__name__)

AFTER_APPLY = CrashPoint("spool.after_apply", "one spooled outcome applied (or quarantined), the next not yet")
AFTER_APPLY_ALL = CrashPoint("spool.after_apply_all", "every claimed outcome applied, no claimed file removed yet")
AFTER_REQUEUE = CrashPoint(
    "spool.after_requeue", "a stopped replay's outcomes not applied put back, its claimed files not released yet"
)


@dataclass
class SlotEvent:
    """One outcome of one task slot: ``running``, ``success`` or a finished state (failed, skipped...)."""

    state: str
    identity: TaskIdentity
    slot: dt.datetime
    at: dt.datetime
    meta: TaskMeta | None = None
    run_id: str | None = None
    attempt: int = 1
    rows_written: int | None = None
    #: Why ``rows_written`` is unknown: the task's count could not be read (None: read, or nothing reported).
    rows_error: str | None = None
    consumer: AttemptKey | None = None
    gate_task_ids: list[str] = field(default_factory=list)
    consume_own: bool = True
    run_type: str | None = None  # Airflow's run type: backfill runs are told apart by it

    def to_json(self) -> str:
        data = asdict(self)
        data["slot"] = self.slot.isoformat()
        data["at"] = self.at.isoformat()
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> SlotEvent:
        data = json.loads(line)
        data["identity"] = TaskIdentity(**data["identity"])
        data["slot"] = dt.datetime.fromisoformat(data["slot"])
        data["at"] = dt.datetime.fromisoformat(data["at"])
        data["meta"] = TaskMeta(**data["meta"]) if data.get("meta") else None
        data["consumer"] = AttemptKey(**data["consumer"]) if data.get("consumer") else None
        return cls(**data)


def apply(store: CatalogStore, event: SlotEvent) -> SlotOutcome:
    common = dict(meta=event.meta, run_id=event.run_id, attempt=event.attempt, at=event.at, run_type=event.run_type)
    if event.state == "running":
        return store.record_running(event.identity, event.slot, **common)
    if event.state == "success":
        return store.record_success(
            event.identity,
            event.slot,
            rows_written=event.rows_written,
            rows_error=event.rows_error,
            consumer=event.consumer,
            gate_task_ids=event.gate_task_ids,
            consume_own=event.consume_own,
            **common,
        )
    return store.record_finished(event.identity, event.slot, event.state, **common)


def spool_dir() -> Path:
    configured = setting("spool_dir", "")
    return Path(configured) if configured else airflow_home() / "leastaction" / "spool"


def spool(event: SlotEvent, directory: Path | None = None) -> Path:
    """Append ``event`` to this process's spool file and fsync it."""
    return append(directory or spool_dir(), [event.to_json()])


def replay(store: CatalogStore, directory: Path | None = None, quarantined: list[str] | None = None) -> int:
    """Apply every spooled event, oldest first; returns how many were applied.

    Each spool file is claimed under a lock (:mod:`~airflow_leastaction.catalog.spool_files`), so two
    processes never replay the same file, and a file whose replay was killed is taken back. Whatever
    stops a replay half-way, the events it did not apply go back to the spool. An event that can never be
    applied, a line that cannot be read and a file that cannot be read at all are quarantined alone (see
    :mod:`~airflow_leastaction.catalog.spool_check`) and the replay goes on; each reason is appended to
    ``quarantined`` when a list is given.
    """
    directory = directory or spool_dir()
    if not directory.is_dir():
        return 0
    notes = quarantined if quarantined is not None else []
    unreadable: list = []
    claimed = claim(directory, unreadable)
    for path, aside, exc in unreadable:
        _note_unreadable(notes, path.name, aside, exc)
    try:
        claimed, events = _read_claimed(claimed, directory, notes)
    except BaseException:
        for held in claimed:
            held.put_back()
        raise
    events.sort(key=lambda e: e.at)
    done = applied = 0
    try:
        for event in events:
            applied += _apply_or_quarantine(store, event, directory, notes)
            done += 1
            AFTER_APPLY()
    except BaseException:
        _requeue(directory, events[done:], claimed)
        raise
    AFTER_APPLY_ALL()
    for held in claimed:
        held.release()
    if applied:  # what the replay recorded may be what a degraded run waited for: sweep for every due one
        _sweep_late_arrivals(store, lambda late: late.sweep(store, everything=True))
    return applied


def _read_claimed(claimed: list[Claimed], directory: Path, notes: list[str]) -> tuple[list[Claimed], list[SlotEvent]]:
    """The events of the claimed files, and the files read; a file that cannot be read is set aside whole."""
    read, events = [], []
    for held in claimed:
        try:
            lines = list(held.read_lines())
        except OSError as exc:  # a directory, an I/O error
            _note_unreadable(notes, held.claimed_from, held.set_aside(), exc)
            continue
        read.append(held)
        events.extend(e for e in (_read_spooled(line, directory, notes) for line in lines) if e)
    return read, events


def _note_unreadable(notes: list[str], name: str, aside: Path, exc: OSError) -> None:
    reason = f"spool file {name} cannot be read ({exc}); set aside whole as {aside.name}"
    notes.append(reason)
    log.error("leastaction: %s", reason)


def _read_spooled(raw: bytes, directory: Path, notes: list[str]) -> SlotEvent | None:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"a spooled line that is not UTF-8 text ({exc.reason} at byte {exc.start})"
        notes.append(reason)
        quarantine(directory, raw.decode("utf-8", "backslashreplace"), reason)
        return None
    try:
        event = SlotEvent.from_json(line)
        check_outcome(event)
        return event
    except Exception as exc:  # a line cut short, an event no catalog can hold
        notes.append(f"{exc}")
        quarantine(directory, line, str(exc))
        return None


def _apply_or_quarantine(store: CatalogStore, event: SlotEvent, directory: Path, notes: list[str]) -> int:
    """1 if applied, 0 if quarantined; a transient error propagates (the rest is requeued)."""
    from sqlalchemy.exc import IntegrityError

    try:
        try:
            apply(store, event)
        except IntegrityError:  # two writers inserted the same task or slot at once: the second try sees it
            apply(store, event)
        return 1
    except Exception as exc:
        if not isinstance(exc, IntegrityError) and not can_never_apply(exc):
            raise
        reason = f"outcome of {event.identity} slot {event.slot.isoformat()}: {exc}"
        notes.append(reason)
        quarantine(directory, event.to_json(), reason)
        return 0


def _requeue(directory: Path, events: list[SlotEvent], claimed: list[Claimed]) -> None:
    """Put the events a replay did not apply back in the spool; if even that fails, the claimed files
    themselves go back (the events already applied will be applied again, which changes nothing)."""
    try:
        if events:
            append(directory, [event.to_json() for event in events])
    except BaseException:
        log.exception("leastaction: could not requeue %d spooled outcomes; their files go back whole", len(events))
        for held in claimed:
            held.put_back()
        return
    AFTER_REQUEUE()
    for held in claimed:
        held.release()


def deliver(event: SlotEvent, store_factory=CatalogStore) -> SlotOutcome | None:
    """Apply ``event`` (after any spooled backlog); on any catalog error spool it and return None.

    Never raises: a catalog outage must not fail the user's task. Whatever goes wrong with the backlog
    is the backlog's: the new event is applied, or spooled when the catalog cannot be reached.
    """
    try:
        check_outcome(event)
    except UnappliableOutcomeError as exc:  # spooled, it would block every later outcome of this machine
        _quarantine_quietly(event, str(exc))
        return None
    try:
        store = store_factory()
        _replay_backlog(store)
        outcome = apply(store, event)
    except Exception as exc:  # the catalog is down, misconfigured, locked...
        if can_never_apply(exc):
            _quarantine_quietly(event, f"outcome of {event.identity} slot {event.slot.isoformat()}: {exc}")
            return None
        try:
            path = spool(event)
            log.warning(
                "catalog unavailable (%s); outcome of %s slot %s spooled to %s",
                exc,
                event.identity,
                event.slot.isoformat(),
                path,
            )
        except Exception:
            log.exception(
                "catalog unavailable and spooling failed; outcome of %s slot %s: %s",
                event.identity,
                event.slot.isoformat(),
                event.to_json(),
            )
        return None
    _sweep_late_arrivals(store, lambda late: late.after_delivered(store, event, outcome))
    return outcome


def _sweep_late_arrivals(store: CatalogStore, how) -> None:
    """A recorded success may make a degraded run due to re-run (``on_late_arrival="rerun"``): ``how``
    (given :mod:`~airflow_leastaction.reruns.late_arrival`) sweeps for it. Imported here, not at the top: the
    re-run asks Airflow's API, which the catalog's modules do not import."""
    from airflow_leastaction.reruns import late_arrival

    how(late_arrival)


def _replay_backlog(store: CatalogStore) -> None:
    """Replay this machine's spool before a new event; raises only when the catalog cannot be reached."""
    directory = spool_dir()
    if not has_backlog(directory):
        return
    try:
        replay(store, directory)
    except Exception as exc:
        if is_outage(exc):
            raise  # the new event cannot be applied either: it is spooled behind the backlog
        log.exception("leastaction: the spooled backlog in %s could not be replayed; it stays spooled", directory)


def _quarantine_quietly(event: SlotEvent, reason: str) -> None:
    try:
        quarantine(spool_dir(), event.to_json(), reason)
    except Exception:
        log.exception("outcome can never be applied (%s) and quarantining failed: %s", reason, event.to_json())
