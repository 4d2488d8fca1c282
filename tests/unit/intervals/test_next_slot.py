"""The slot a task runs next after a watermark: the first cron slot strictly after it. Pure logic."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.intervals.interval_slots import next_slot

UTC = dt.UTC


def utc(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("cron", "zone", "after", "expected"),
    [
        ("0 5 * * *", "UTC", utc(2024, 3, 4, 5), utc(2024, 3, 5, 5)),  # strictly after: not the slot itself
        ("0 5 * * *", "UTC", utc(2024, 3, 4, 4, 59), utc(2024, 3, 4, 5)),
        ("*/15 * * * *", "UTC", utc(2024, 3, 4, 4, 59, 59), utc(2024, 3, 4, 5)),
        ("0 0 * * MON", "UTC", utc(2024, 3, 4), utc(2024, 3, 11)),
        ("0 0 1 * *", "UTC", utc(2024, 1, 31), utc(2024, 2, 1)),
        ("0 0 29 2 *", "UTC", utc(2024, 3, 1), utc(2028, 2, 29)),  # four years on: the last span finds it
        # 02:00 New York does not exist on 2024-03-10: that slot runs when the clock reaches 03:00 EDT.
        ("0 2 * * *", "America/New_York", utc(2024, 3, 9, 7), utc(2024, 3, 10, 7)),
        ("0 5 * * *", "Europe/Amsterdam", utc(2024, 3, 4, 4), utc(2024, 3, 5, 4)),  # 05:00 CET is 04:00 UTC
    ],
)
def test_the_next_slot_is_the_first_cron_slot_strictly_after(cron, zone, after, expected):
    assert next_slot(cron, after, timezone=zone) == expected
