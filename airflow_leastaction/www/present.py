"""How the pages show things, in one place: times (one format, one zone, always named) and state tones.

Pure: the zone is handed in (Airflow's ``[core] default_timezone``, read by :mod:`airflow_leastaction.www.render`).
Every page, column and reason shows an instant as ``2026-11-25 01:00:00 CET``; a form's datetime field
shows and reads 24-hour local time in that zone, named in its label.

A *tone* is the colour family Airflow's UI gives a task state (``success`` green, ``failed`` red,
``deferred`` purple...); ``style.css`` defines one CSS class per tone for the light and the dark theme.
Every state the pages show (Airflow task states, catalog slot states, decision results, gate outcomes,
dbt queue statuses) maps to one tone here, and nowhere else.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from airflow_leastaction.instants import parse_iso_instant

#: The tones of Airflow's UI (its task-state colour tokens); ``style.css`` has a class for each.
TONES = (
    "success",
    "failed",
    "running",
    "queued",
    "scheduled",
    "skipped",
    "upstream_failed",
    "up_for_retry",
    "up_for_reschedule",
    "deferred",
    "removed",
    "restarting",
    "none",
)

#: Words the pages show, by their tone (Airflow's task states are their own tone).
_TONE_OF = {
    # catalog slot and task states, dbt queue statuses
    "error": "failed",
    "cancelled": "failed",
    "partial": "upstream_failed",
    "pending": "queued",
    "unknown": "none",
    # gate decision results
    "SATISFIED": "success",
    "UNSATISFIED": "upstream_failed",
    "BYPASSED": "up_for_retry",
    "MISSING": "upstream_failed",
    # gate outcomes (see verdicts.py)
    "admitted": "success",
    "bypassed": "up_for_retry",
    "degraded": "upstream_failed",
    "skipped": "skipped",
    "waiting": "deferred",
    "not judged": "none",
    "failed": "failed",
    # re-runs on late arrival (catalog/late_arrivals.py; "waiting" and "failed" are above)
    "requested": "queued",
    "rerun": "success",
    # dbt request outcomes
    "new_pending": "up_for_reschedule",
    "already_pending": "up_for_retry",
    "already_running": "deferred",
    # dbt pass decisions
    "built": "running",
    "reused": "success",
    # early warnings before a deadline (catalog/deadline_warnings.py)
    "warned": "up_for_retry",
    "cleared": "success",
}


def tone(state: str | None) -> str:
    """The tone of ``state`` (``none`` for anything unknown or empty)."""
    if not state:
        return "none"
    if state in TONES:
        return state
    return _TONE_OF.get(state, _TONE_OF.get(str(state).lower(), "none"))


#: An ISO-8601 instant inside a reason (``2026-11-25T00:00:00+00:00``): always with its offset.
_ISO_INSTANT = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})")

#: The format of a time field: 24-hour, whatever the browser's locale (a ``datetime-local`` field shows
#: AM/PM in an en-US browser).
INPUT_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class Clock:
    """Shows instants in one zone, with the zone named.

    :param zone: the display zone (Airflow's default timezone).
    """

    zone: dt.tzinfo = dt.UTC

    @classmethod
    def named(cls, name: str | None) -> Clock:
        """The clock of a zone name (``UTC``, ``Europe/Amsterdam``); an unknown name falls back to UTC."""
        if not name or name.upper() == "UTC":
            return cls(dt.UTC)
        try:
            return cls(ZoneInfo(name))
        except (ValueError, KeyError, OSError):
            return cls(dt.UTC)

    @property
    def name(self) -> str:
        """The zone's name, for labels: ``UTC``, ``Europe/Amsterdam``."""
        return getattr(self.zone, "key", None) or getattr(self.zone, "name", None) or str(self.zone)

    def local(self, value: dt.datetime) -> dt.datetime:
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)  # the catalog keeps UTC
        return value.astimezone(self.zone)

    def when(self, value: dt.datetime | None) -> str:
        """``2026-11-25 01:00:00 CET``; an em dash for None."""
        if value is None:
            return "—"
        local = self.local(value)
        return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or self.name}"

    def short(self, value: dt.datetime | None) -> str:
        """``11-25 01:00``: for chips and axis labels, where the zone is named once nearby."""
        return "—" if value is None else f"{self.local(value):%m-%d %H:%M}"

    def hour(self, value: dt.datetime) -> str:
        return f"{self.local(value):%H:00}"

    def input_value(self, value: dt.datetime | None) -> str:
        """The value of a time field: local time in this zone, 24-hour."""
        return "" if value is None else self.local(value).strftime(INPUT_FORMAT)

    def read(self, text: str) -> dt.datetime:
        """An ISO date or datetime; without an offset it is local time in this zone (what forms send).

        Raises ValueError for anything else, or an instant a page cannot show (year 1 or 9999 shifted
        out of range by its offset).
        """
        value = parse_iso_instant(text)
        if value.tzinfo is None:
            value = value.replace(tzinfo=self.zone)
        try:
            return value.astimezone(dt.UTC)
        except OverflowError:
            raise ValueError(f"{text!r} is out of range") from None

    def in_text(self, text: str) -> str:
        """``text`` (a gate's reason) with each ISO instant in it shown as :meth:`when` shows it."""
        return _ISO_INSTANT.sub(lambda m: self._iso(m.group(0)), text)

    def _iso(self, found: str) -> str:
        try:
            return self.when(parse_iso_instant(found))
        except (ValueError, OverflowError):
            return found


def ago(value: dt.datetime | None, now: dt.datetime) -> str:
    """``3 min ago`` / ``in 2 h``: a duration a person reads at a glance (None: empty)."""
    if value is None:
        return ""
    seconds = int((now - value).total_seconds())
    span = abs(seconds)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if span >= size:
            amount = f"{span // size} {unit}"
            break
    else:
        amount = f"{span} s"
    return f"{amount} ago" if seconds >= 0 else f"in {amount}"


_WORKER = re.compile(r"^ti-[0-9a-f]+:try(?P<try>\d+):(?P<host>[^:]+):(?P<pid>\d+):")


def worker_name(owner: str | None) -> str:
    """A dbt queue worker's name as a person reads it: ``try 1 on vm (pid 13644)`` for a drain task's
    worker (``ti-<hash>:try<N>:<host>:<pid>:<id>``), else the name as the worker gave it."""
    if not owner:
        return "—"
    found = _WORKER.match(owner)
    if found is None:
        return owner
    return f"try {found['try']} on {found['host']} (pid {found['pid']})"
