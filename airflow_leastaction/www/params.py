"""Query parameters as HTML forms send them: empty fields mean "no filter"; times default to UTC."""

from __future__ import annotations

import datetime as dt

from fastapi import HTTPException, status


def blank(value: str | None) -> str | None:
    """An empty or whitespace-only form field is no filter at all."""
    if value is None:
        return None
    value = value.strip()
    return value or None


def parse_time(value: str | None, name: str) -> dt.datetime | None:
    """An ISO date or datetime; a naive value (what ``datetime-local`` inputs send) is read as UTC."""
    value = blank(value)
    if value is None:
        return None
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"{name} must be an ISO date or datetime, got {value!r}"
        ) from None
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when


def one_of(value: str | None, allowed: tuple[str, ...], name: str) -> str | None:
    value = blank(value)
    if value is not None and value not in allowed:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"{name} must be one of {', '.join(allowed)}, got {value!r}"
        )
    return value


def optional_int(value: str | None, name: str) -> int | None:
    value = blank(value)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"{name} must be an integer, got {value!r}"
        ) from None
