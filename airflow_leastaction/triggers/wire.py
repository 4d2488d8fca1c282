"""What travels between a waiting task and its trigger (event statuses and consumed revisions), and the
payload of a catalog slot published as an asset event.

Pure, no Airflow import. These are wire formats: a trigger's event is stored by Airflow and read by a
worker that may run another release, so a value, once released, never changes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from enum import StrEnum
from typing import NamedTuple

from airflow_leastaction.gating.engine import Verdict


class TriggerStatus(StrEnum):
    """The ``status`` of every event the provider's triggers fire, one vocabulary for all of them. The value
    is the text an event carries (a plain string: write ``.value``); ``TriggerStatus(text)`` reads it."""

    #: Both gate triggers: the task may run (every parent interval is satisfied; the run condition is met).
    ADMITTED = "admitted"
    #: RunConditionTrigger: the run condition can never be met in this run.
    SKIPPED = "skipped"
    #: ParentIntervalTrigger: a parent failed and the sensor fails with it (``on_parent_failure="fail"``).
    FAILED = "failed"
    #: ParentIntervalTrigger: the deadline passed with parents still unsatisfied.
    TIMEOUT = "timeout"
    #: Both gate triggers: the deployment relaxed its gates (``[leastaction] gates``) after the wait began.
    RELAXED = "relaxed"
    #: RunConditionTrigger started in the triggerer: it cannot decide there (no run context, catalog down
    #: while it records); the worker judges and records instead.
    UNDECIDED = "undecided"
    #: RunOutcomeTrigger: every other task of the run reached a terminal state.
    FINISHED = "finished"

    @classmethod
    def of(cls, verdict: Verdict) -> TriggerStatus:
        """The status of a gate's final verdict (ADMIT or SKIP; a WAIT fires no event)."""
        if verdict is Verdict.ADMIT:
            return cls.ADMITTED
        if verdict is Verdict.SKIP:
            return cls.SKIPPED
        raise ValueError(f"a {verdict.value} verdict fires no trigger event")


# -- consumed revisions -----------------------------------------------------------------------------
# One form: per dependency key, the output revision consumed per upstream slot (ISO text keys).
def encode_consumed(consumed: Mapping[str, Mapping[dt.datetime, int]] | None) -> dict[str, dict[str, int]]:
    return {k: {slot.isoformat(): rev for slot, rev in v.items()} for k, v in (consumed or {}).items()}


def decode_consumed(data: Mapping[str, Mapping[str, int]] | None) -> dict[str, dict[dt.datetime, int]]:
    """Read :func:`encode_consumed`'s form."""
    return {k: {dt.datetime.fromisoformat(slot): rev for slot, rev in v.items()} for k, v in (data or {}).items()}


def encode_last_consumed(consumed: Mapping[str, tuple[dt.datetime, int]]) -> dict[str, dict[str, int]]:
    """A run-condition gate's last consumed (upstream slot, revision) per dependency, in the one form."""
    return encode_consumed({k: {slot: rev} for k, (slot, rev) in consumed.items()})


def decode_last_consumed(data) -> dict[str, tuple[dt.datetime, int]]:
    """The last consumed (upstream slot, revision) per dependency: the latest slot of each."""
    return {k: max(v.items()) for k, v in decode_consumed(data).items() if v}


# -- catalog slots published as asset events ---------------------------------------------------------
#: CatalogAssetTrigger: the payload of an event for one completed catalog slot (Airflow keeps it in the
#: asset event's extra, ``{"from_trigger": true, "payload": {...}}``).
CATALOG_SLOT = "catalog_slot"
#: The asset state store key of a watcher's cursor (as of the last event Airflow committed).
CURSOR_KEY = "leastaction.cursor"


class Cursor(NamedTuple):
    """Where a watcher is in a task's slot records: the change number and slot of the last slot it emitted
    (``slot`` None: nothing emitted yet, every record written after change ``seq`` is new)."""

    seq: int
    slot: dt.datetime | None = None

    def passed(self, seq: int, slot: dt.datetime) -> bool:
        """Is the record (``seq``, ``slot``) at or before this cursor (emitted already)?"""
        if seq != self.seq:
            return seq < self.seq
        return self.slot is None or slot <= self.slot

    def encode(self) -> dict:
        return {"seq": self.seq, "slot": self.slot.isoformat() if self.slot else None}

    @classmethod
    def decode(cls, data: Mapping | None) -> Cursor | None:
        if not data or data.get("seq") is None:
            return None
        slot = data.get("slot")
        return cls(int(data["seq"]), dt.datetime.fromisoformat(slot) if slot else None)


def slot_event(
    identity: Mapping[str, str],
    slot: dt.datetime,
    partition_key: str,
    revision: int,
    cursor: Cursor,
    *,
    rows_written: int | None = None,
    run_id: str | None = None,
) -> dict:
    """The payload of one completed slot (revision 2 and above: a repair)."""
    return {
        "leastaction": CATALOG_SLOT,
        "identity": dict(identity),
        "slot": slot.isoformat(),
        "partition_key": partition_key,
        "revision": revision,
        "repair": revision > 1,
        "rows_written": rows_written,
        "run_id": run_id,
        "cursor": cursor.encode(),
    }


def read_slot_event(extra: Mapping | None) -> dict | None:
    """The payload of a catalog slot event from an asset event's extra, or None for any other event."""
    payload = (extra or {}).get("payload")
    if isinstance(payload, Mapping) and payload.get("leastaction") == CATALOG_SLOT:
        return dict(payload)
    return None
