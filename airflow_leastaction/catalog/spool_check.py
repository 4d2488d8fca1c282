"""Spooled outcomes that can never be applied: found before spooling, set aside when replayed.

An outcome the catalog will always refuse (a name longer than its column, a naive time, a line cut short
by a crash) must not sit at the head of a spool: every later outcome on that machine would queue behind
it. Such an outcome goes to a quarantine file next to the spool, with the reason, and is logged; nothing
is dropped, and an operator can fix and report it by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from pathlib import Path

from airflow_leastaction.catalog.schema import consumption, task, task_run
from airflow_leastaction.exceptions import UnappliableOutcomeError

log = logging.getLogger(__name__)

QUARANTINE_PREFIX = "quarantine-"
_BIGINT = 2**63

# Text fields of an outcome and the column whose width bounds them (PostgreSQL refuses longer text).
_IDENTITY_COLUMNS = {f: task.c[f] for f in ("name", "project", "account", "partition")}
_META_COLUMNS = {f: task.c[f] for f in ("cron", "timezone", "source", "dag_id", "task_id")}
_CONSUMER_COLUMNS = {f: consumption.c[f] for f in ("dag_id", "task_id", "run_id")}


def check_outcome(event) -> None:
    """Raise :class:`UnappliableOutcomeError` if the catalog could never store ``event``, on any backend."""
    what = f"outcome of {event.identity} slot {getattr(event.slot, 'isoformat', lambda: event.slot)()}"
    fields = {f"task {f}": (getattr(event.identity, f), col) for f, col in _IDENTITY_COLUMNS.items()}
    fields["state"] = (event.state, task_run.c.state)
    fields["run_id"] = (event.run_id, task_run.c.run_id)
    fields["completion key"] = (f"{event.run_id}#{event.attempt}", task_run.c.completion_key)
    if event.meta is not None:
        fields.update({f"task {f}": (getattr(event.meta, f), col) for f, col in _META_COLUMNS.items()})
    if event.consumer is not None:
        fields.update({f"consumer {f}": (getattr(event.consumer, f), col) for f, col in _CONSUMER_COLUMNS.items()})
    for gate_id in event.gate_task_ids:
        fields["gate task id"] = (gate_id, consumption.c.task_id)
    for label, (value, column) in fields.items():
        limit = column.type.length
        if value is not None and limit is not None and len(str(value)) > limit:
            raise UnappliableOutcomeError(what, f"{label} is {len(str(value))} characters, the catalog holds {limit}")
    for label in ("slot", "at"):
        value = getattr(event, label)
        if not isinstance(value, dt.datetime) or value.tzinfo is None:
            raise UnappliableOutcomeError(what, f"{label} {value} is not a time with an offset")
    if not isinstance(event.attempt, int) or event.attempt < 0 or event.attempt >= _BIGINT:
        raise UnappliableOutcomeError(what, f"attempt {event.attempt!r} is not a small whole number")
    rows = event.rows_written
    if rows is not None and (not isinstance(rows, int) or not -_BIGINT <= rows < _BIGINT):
        raise UnappliableOutcomeError(what, f"rows_written {rows!r} is not a 64-bit whole number")
    if event.rows_error is not None and not isinstance(event.rows_error, str):
        raise UnappliableOutcomeError(what, f"rows_error {event.rows_error!r} is not text")


def can_never_apply(exc: BaseException) -> bool:
    """True for errors a retry cannot cure: the outcome itself is at fault, not the catalog's reachability.

    Connection losses, timeouts and locks (``OperationalError``, ``InterfaceError``) are transient, and so
    is a unique-key race between two writers (``IntegrityError``; the caller retries it once).
    """
    from sqlalchemy import exc as sa_exc

    if isinstance(exc, (UnappliableOutcomeError, sa_exc.DataError)):
        return True
    if isinstance(exc, sa_exc.DBAPIError):
        return False
    # A parameter the driver cannot bind (StatementError), or a malformed event (ValueError, KeyError...).
    return isinstance(exc, (sa_exc.StatementError, ValueError, TypeError, KeyError, OverflowError))


def quarantine(directory: Path, text: str, reason: str) -> Path:
    """Append one outcome (its spooled JSON text) with ``reason`` to this process's quarantine file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{QUARANTINE_PREFIX}{os.getpid()}.jsonl"
    record = {"reason": reason, "quarantined_at": dt.datetime.now(dt.UTC).isoformat(), "outcome": text.strip()}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    log.error(
        "leastaction: outcome can never be applied to the catalog (%s); quarantined in %s: %s",
        reason,
        path,
        text.strip(),
    )
    return path


def quarantined(directory: Path) -> list[dict]:
    """Every quarantined outcome under ``directory``, oldest file first.

    A line that cannot be read (cut short by a crash, edited by hand) and a spool file set aside whole
    because it could not be read are listed too, each with a reason saying so.
    """
    records = []
    for path in sorted(directory.glob(f"{QUARANTINE_PREFIX}*.jsonl")) if directory.is_dir() else []:
        try:
            with open(path, encoding="utf-8", errors="backslashreplace") as fh:
                records.extend(_quarantine_record(path, n, line) for n, line in enumerate(fh, 1) if line.strip())
        except OSError as exc:
            records.append({"reason": f"{path.name} cannot be read ({exc})", "outcome": None, "file": str(path)})
    return records


def _quarantine_record(path: Path, number: int, line: str) -> dict:
    try:
        record = json.loads(line)
    except ValueError as exc:
        record = None
        why = str(exc)
    else:
        why = "not a quarantine record"
    if not isinstance(record, dict):
        record = {"reason": f"line {number} of {path.name} cannot be read ({why})", "outcome": line.strip()}
    return {**record, "file": str(path)}
