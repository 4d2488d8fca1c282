"""Instants written as text: how every layer reads an ISO-8601 time. Pure, no Airflow import."""

from __future__ import annotations

import datetime as dt


def parse_iso_instant(text: str) -> dt.datetime:
    """``text``, an ISO-8601 date or time, as a datetime; ``Z`` reads as UTC (``+00:00``) and blanks around
    the text are ignored. Without an offset the datetime is naive: each caller says what that means (an
    error, or local time). Raises ``ValueError`` for any other text."""
    return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
