"""Partition keys of catalog slots: written as Airflow's ``CronPartitionTimetable`` writes keys, read by
Airflow's temporal mappers, and read back as the slot they were written from."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.assets.keys import (
    DEFAULT_KEY_FORMAT,
    check_key_format,
    partition_key,
    slot_of_key,
)
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.version_compat import PARTITIONED_ASSETS, WALL_CLOCK_PARTITION_KEYS
from tests.helpers.airflow_minors import needs

#: Airflow's own writers and readers of partition keys.
UTC_KEYS_BEFORE_3_3 = needs(
    WALL_CLOCK_PARTITION_KEYS,
    "partition keys in the timetable's timezone (CronPartitionTimetable writes the run's UTC time before 3.3)",
)
AIRFLOWS_PARTITIONS = needs(
    PARTITIONED_ASSETS, "CronPartitionTimetable and the temporal partition mappers (Airflow 3.2)"
)

ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
INSTANTS = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1), timezones=st.just(dt.UTC))


@given(instant=INSTANTS, zone=st.sampled_from(ZONES))
def test_a_key_read_back_writes_the_same_key_in_any_zone(instant, zone):
    key = partition_key(instant, zone)
    assert partition_key(slot_of_key(key, zone), zone) == key


@given(instant=INSTANTS)
def test_a_key_read_back_in_utc_is_the_slot_it_was_written_from_to_the_second(instant):
    assert slot_of_key(partition_key(instant)) == instant.replace(microsecond=0)


@AIRFLOWS_PARTITIONS
@pytest.mark.parametrize(
    "zone",
    [
        "UTC",
        *(pytest.param(zone, marks=UTC_KEYS_BEFORE_3_3) for zone in ("Europe/Paris", "Asia/Taipei")),
    ],
)
def test_keys_are_those_cron_partition_timetable_writes_for_the_same_schedule(zone):
    from airflow.timetables.base import TimeRestriction
    from airflow.timetables.trigger import CronPartitionTimetable
    from pendulum import instance

    timetable = CronPartitionTimetable("0 0 * * *", timezone=zone)
    noon = instance(dt.datetime(2026, 3, 28, 12, tzinfo=dt.UTC))  # the next midnight is a DST change in Paris
    run = timetable.next_dagrun_info_v2(
        last_dagrun_info=None, restriction=TimeRestriction(earliest=noon, latest=None, catchup=True)
    )
    assert partition_key(run.run_after, zone) == run.partition_key == "2026-03-29T00:00:00"


@AIRFLOWS_PARTITIONS
@pytest.mark.parametrize(
    ("mapper", "expected"),
    [("StartOfHourMapper", "2026-11-16T05"), ("StartOfDayMapper", "2026-11-16"), ("StartOfMonthMapper", "2026-11")],
)
def test_airflows_temporal_mappers_read_the_keys_with_their_default_input_format(mapper, expected):
    import airflow.partition_mappers.temporal as temporal

    slot = dt.datetime(2026, 11, 16, 4, 0, tzinfo=dt.UTC)  # 05:00 in Paris
    key = partition_key(slot, "Europe/Paris")
    assert getattr(temporal, mapper)(timezone="Europe/Paris").to_downstream(key) == expected


def test_a_key_with_an_offset_carries_its_own_zone():
    fmt = DEFAULT_KEY_FORMAT + "%z"
    slot = dt.datetime(2026, 11, 16, 4, tzinfo=dt.UTC)
    key = partition_key(slot, "Europe/Paris", fmt)
    assert key == "2026-11-16T05:00:00+0100"
    assert slot_of_key(key, "UTC", fmt) == slot


@pytest.mark.parametrize(
    ("fmt", "why"),
    [
        ("%m-%d", "must name the year"),
        ("%Y-%Y", "must name the year"),
        ("%Y-W%U", "reads its key"),
        ("%Y%m%m", "cannot write and read a key"),  # strptime's regex names the month twice
        ("%Y%z%j", "reads its key"),  # an offset's optional seconds swallow the day's first digits
        ("%z%Y%j", "cannot write and read a key"),  # ... or the year's, leaving year 0
    ],
)
def test_a_key_format_that_cannot_write_and_read_its_keys_is_refused_naming_its_owner(fmt, why):
    with pytest.raises(ConfigurationError, match=rf"catalog_asset\(x\): key_format .* {why}"):
        check_key_format(fmt, "catalog_asset(x)")


def test_coarser_key_formats_are_accepted_for_coarse_slots():
    assert check_key_format("%Y-%m-%d", "x") == "%Y-%m-%d"
    assert partition_key(dt.datetime(2026, 11, 16, tzinfo=dt.UTC), "UTC", "%Y-%m-%d") == "2026-11-16"


#: Pieces of key formats a DAG author may write: strftime directives (some that strptime cannot read back,
#: some it ignores), literal text, and a stray percent sign.
FORMAT_PIECES = st.sampled_from(
    ["%Y", "%m", "%d", "%H", "%M", "%S", "%j", "%y", "%I", "%p", "%a", "%U", "%z", "%%", "%", "-", "T", ":", " ", "W"]
)


@settings(max_examples=300)
@given(fmt=st.lists(FORMAT_PIECES, max_size=8).map("".join) | st.text(max_size=12), instant=INSTANTS)
@example(fmt="%Y%y", instant=dt.datetime(2069, 1, 1, tzinfo=dt.UTC))  # %y read 69 back as 1969
@example(fmt="%Y%z%j", instant=dt.datetime(2000, 2, 1, tzinfo=dt.UTC))  # %z took "03" as seconds: day 032 -> 001
@example(fmt="%z%Y%j", instant=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))  # %z took "20" of the year: year 0
def test_a_key_format_is_refused_naming_its_owner_or_every_key_it_writes_reads_back_as_itself(fmt, instant):
    try:
        check_key_format(fmt, "catalog_asset(x)")
    except ConfigurationError as exc:
        assert str(exc).startswith(f"catalog_asset(x): key_format {fmt!r} "), exc
        return
    assert fmt.replace("%%", "").count("%Y") == 1  # "%%Y" is a literal "%Y", not the year
    key = partition_key(instant, "UTC", fmt)
    assert partition_key(slot_of_key(key, "UTC", fmt), "UTC", fmt) == key


@pytest.mark.parametrize("fmt", [None, 5, b"%Y"])
def test_a_key_format_that_is_not_text_is_refused_naming_its_owner(fmt):
    with pytest.raises(ConfigurationError, match=rf"^asset_schedule\(x\): key_format {fmt!r} is not text"):
        check_key_format(fmt, "asset_schedule(x)")
