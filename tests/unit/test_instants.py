"""How an ISO-8601 time written as text is read: ``Z`` is UTC, an offset is kept, no offset is naive."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.instants import parse_iso_instant

AWARE = st.datetimes(
    min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=st.just(dt.UTC)
).map(lambda t: t.replace(microsecond=0))
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))


@given(AWARE)
def test_a_utc_time_written_with_z_reads_as_the_same_utc_instant(instant):
    text = instant.isoformat().replace("+00:00", "Z")
    read = parse_iso_instant(text)
    assert read == instant
    assert read.utcoffset() == dt.timedelta(0)


@given(AWARE, OFFSETS, st.sampled_from(["", " ", "\n"]))
def test_a_time_with_an_offset_reads_back_as_written_whatever_blanks_surround_it(instant, zone, blank):
    local = instant.astimezone(zone)  # a day inside the range: any offset keeps it a valid datetime
    read = parse_iso_instant(f"{blank}{local.isoformat()}{blank}")
    assert read == local
    assert read.utcoffset() == local.utcoffset()


def test_a_time_without_an_offset_is_naive_for_its_caller_to_judge():
    assert parse_iso_instant("2026-11-28T00:00:00") == dt.datetime(2026, 11, 28)
    assert parse_iso_instant("2026-11-28").tzinfo is None


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01T00:00:00Z", "2026-11-28T25:00Z"])
def test_text_that_is_no_iso_time_is_refused(text):
    with pytest.raises(ValueError):
        parse_iso_instant(text)


def test_a_year_before_1000_written_with_z_reads_back():
    assert parse_iso_instant("0999-01-01T00:00:00Z") == dt.datetime(999, 1, 1, tzinfo=dt.UTC)
