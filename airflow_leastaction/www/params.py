"""Query parameters as HTML forms send them: empty fields mean "no filter"; anything else is checked here,
so bad input is a 422 naming the parameter, never a database error or an overflow.

Integers are bounded to what the catalog's columns hold; instants to years 1000 to 8999 (any instant a
schedule means, with room for the date arithmetic of a year-long slot either side). A datetime without an
offset is read in the zone the page names (Airflow's default timezone, see :class:`~.present.Clock`).
"""

from __future__ import annotations

import datetime as dt

from fastapi import HTTPException, Request, status

from airflow_leastaction.www.present import Clock

#: The largest catalog id (a 64-bit signed key) and the largest map index / attempt (32-bit columns).
MAX_ID = 2**63 - 1
MAX_INT32 = 2**31 - 1
#: Instants a filter may name (UTC).
EARLIEST = dt.datetime(1000, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(8999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)


#: The longest query value a page takes (a name is at most 250 characters; a cursor a little more).
MAX_VALUE = 1000


def plain_query(request: Request) -> None:
    """Every query value is text a catalog column can be compared with: no NUL character (PostgreSQL
    refuses them in text), and no longer than :data:`MAX_VALUE`; 422 naming the parameter otherwise."""
    for name, value in request.query_params.multi_items():
        if "\x00" in value:
            raise unprocessable(f"{name} must not contain a NUL character")
        if len(value) > MAX_VALUE:
            raise unprocessable(f"{name} is longer than {MAX_VALUE} characters")


def unprocessable(message: str) -> HTTPException:
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, message)


def blank(value: str | None) -> str | None:
    """An empty or whitespace-only form field is no filter at all."""
    if value is None:
        return None
    value = value.strip()
    return value or None


def parse_time(value: str | None, name: str, clock: Clock | None = None) -> dt.datetime | None:
    """An ISO date or datetime, as UTC; a naive value (what ``datetime-local`` inputs send) is read in
    ``clock``'s zone (UTC by default)."""
    value = blank(value)
    if value is None:
        return None
    try:
        when = (clock or Clock()).read(value)
    except (ValueError, OverflowError):
        raise unprocessable(f"{name} must be an ISO date or datetime, got {value!r}") from None
    if not EARLIEST <= when <= LATEST:
        raise unprocessable(f"{name} must be between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}, got {value!r}")
    return when


def in_time_range(when: dt.datetime) -> bool:
    return EARLIEST <= when <= LATEST


def one_of(value: str | None, allowed: tuple[str, ...], name: str) -> str | None:
    value = blank(value)
    if value is not None and value not in allowed:
        raise unprocessable(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def bounded_int(value: str | None, name: str, *, low: int = 0, high: int = MAX_ID) -> int | None:
    """An integer in ``[low, high]`` (None when empty); 422 naming ``name`` otherwise."""
    value = blank(value)
    if value is None:
        return None
    if len(value) > 24:  # longer than any integer the bounds allow: refused before int() reads it
        raise unprocessable(f"{name} must be an integer from {low} to {high}, got {value[:24]!r}…")
    try:
        number = int(value)
    except ValueError:
        raise unprocessable(f"{name} must be an integer, got {value!r}") from None
    if not low <= number <= high:
        raise unprocessable(f"{name} must be an integer from {low} to {high}, got {number}")
    return number


def optional_int(value: str | None, name: str) -> int | None:
    """A catalog id (``0`` to the largest 64-bit key)."""
    return bounded_int(value, name)
