"""Partition keys of catalog slots: the one rule for writing a slot as a key and reading it back. Pure.

A catalog slot becomes a partition key the way Airflow's ``CronPartitionTimetable`` writes one: the
slot's wall-clock time in its task's timezone, with ``strftime`` (``%Y-%m-%dT%H:%M:%S`` by default),
which is also what Airflow's temporal partition mappers read by default. Reading a key back localizes a
naive time in the given timezone (a key format with ``%z`` carries its own offset).
"""

from __future__ import annotations

import datetime as dt
import re

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.intervals.slots import resolve_timezone

#: What ``CronPartitionTimetable`` writes and Airflow's temporal mappers read (their ``input_format``).
DEFAULT_KEY_FORMAT = "%Y-%m-%dT%H:%M:%S"

#: The sample key's slot: a Monday at 13:45:30 UTC, so no field of a key format is zero by chance.
SAMPLE_SLOT = dt.datetime(2026, 11, 16, 13, 45, 30, tzinfo=dt.UTC)

#: The slots a key format must write and read back, in two zones. strptime reads some fields with a
#: variable width (``%z`` may take seconds after its minutes), so a format whose fields run together can
#: read one key right and another wrong: small values (day 001, 01:01:01) and large ones (day 365, 23:59:59)
#: next to each field catch that, a single sample does not ("%Y%z%j" reads day 032 back as day 001).
CHECKED_SLOTS = (
    SAMPLE_SLOT,
    dt.datetime(2000, 1, 1, 0, 0, 0, tzinfo=dt.UTC),
    dt.datetime(2000, 2, 1, 1, 1, 1, tzinfo=dt.UTC),
    dt.datetime(2009, 9, 9, 9, 9, 9, tzinfo=dt.UTC),
    dt.datetime(2099, 12, 31, 23, 59, 59, tzinfo=dt.UTC),
)
CHECKED_ZONES = ("UTC", "Asia/Kolkata")


def partition_key(slot: dt.datetime, timezone: str | dt.tzinfo = "UTC", key_format: str = DEFAULT_KEY_FORMAT) -> str:
    """The partition key of ``slot`` (an aware instant): its wall-clock time in ``timezone``, formatted."""
    if slot.tzinfo is None:
        raise ValueError(f"slot {slot.isoformat()} has no timezone")
    return slot.astimezone(resolve_timezone(timezone)).strftime(key_format)


def slot_of_key(key: str, timezone: str | dt.tzinfo = "UTC", key_format: str = DEFAULT_KEY_FORMAT) -> dt.datetime:
    """The instant a partition key names (the inverse of :func:`partition_key`), in UTC.

    :raises ValueError: the key does not match ``key_format``.
    """
    parsed = dt.datetime.strptime(key, key_format)  # noqa: DTZ007 - localized just below, or carries %z
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=resolve_timezone(timezone))
    return parsed.astimezone(dt.UTC)


def check_key_format(key_format: str, owner: str) -> str:
    """``key_format`` if it names the year and a key written with it reads back as the same key; else
    :class:`ConfigurationError` naming ``owner``. A format coarser than the slots (``%Y-%m-%d`` for an
    hourly task) gives several slots one key: it is for tasks whose slots are that coarse."""
    if not isinstance(key_format, str):
        raise ConfigurationError(f"{owner}: key_format {key_format!r} is not text (a strftime format)")
    directives = key_format.replace("%%", "")  # a literal percent sign names no field
    if directives.count("%Y") != 1 or "%y" in directives:  # %y reads 69 back as 1969
        raise ConfigurationError(f"{owner}: key_format {key_format!r} must name the year once, as %Y")
    for zone in CHECKED_ZONES:
        for slot in CHECKED_SLOTS:
            try:
                key = partition_key(slot, zone, key_format)
                again = partition_key(slot_of_key(key, zone, key_format), zone, key_format)
            except (TypeError, ValueError, re.error) as exc:  # re.error: a field twice (%m%m), strptime's regex
                raise ConfigurationError(
                    f"{owner}: key_format {key_format!r} cannot write and read a key: {exc}"
                ) from exc
            if again != key:
                raise ConfigurationError(f"{owner}: key_format {key_format!r} reads its key {key!r} back as {again!r}")
    return key_format


def sample_key(key_format: str = DEFAULT_KEY_FORMAT) -> str:
    """A key in ``key_format``, for checking at DAG parse time that a consumer's mapper reads such keys."""
    return partition_key(SAMPLE_SLOT, "UTC", key_format)
