"""Slots near either end of the calendar: refused where they enter (``catalog report``, ``plan``), with one
``error:`` line and exit 2, so the planner never meets one; on both catalogs, through the real CLI."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.cli import main as cli
from airflow_leastaction.exceptions import InvalidReportError
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.cli_output import own_lines

UTC = dt.UTC

#: A UTC offset as people write them: whole minutes within a day.
offsets = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
instants = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59), timezones=offsets)


def in_range(slot: dt.datetime) -> bool:
    """The oracle, as docs/operations.md states the range: the slot's UTC instant is from year 1000 to 8999
    (a year, read without converting, so the calendar's ends cannot overflow it)."""
    naive_utc = slot.replace(tzinfo=None) - slot.utcoffset()
    return dt.datetime(1000, 1, 1) <= naive_utc < dt.datetime(9000, 1, 1)


@pytest.mark.parametrize("slot", ["9999-12-31T00:00:00+00:00", "8999-12-31T23:00:00-01:00", "0999-12-31T00:00:00Z"])
def test_a_report_of_a_slot_at_the_calendars_end_is_refused_with_exit_2(catalog_url, use_catalog, capsys, slot):
    use_catalog(catalog_url)
    assert cli(["catalog", "report", "edge", "--project", "p", "--slot", slot, "--cron", "@daily"]) == 2
    captured = capsys.readouterr()
    (line,) = own_lines(captured.err)
    assert line.startswith("error: argument --slot: ") and "is out of range: a slot is from 1000-01-01" in line
    assert captured.out == ""


def test_report_completion_refuses_a_slot_out_of_range_naming_the_task(store):
    with pytest.raises(InvalidReportError, match=r"p/edge: slot 9999-12-31T00:00:00\+00:00 is out of range"):
        report_completion("edge", "p", "9999-12-31T00:00:00+00:00", cron="@daily", store=store)
    assert store.get_task(TaskIdentity("edge", "p")) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(slot=instants)
def test_any_instant_is_either_refused_at_the_report_or_planned(catalog_url, use_catalog, capsys, slot):
    use_catalog(catalog_url)
    typed = slot.isoformat()
    report = ["catalog", "report", "probe", "--project", "p", "--slot", typed, "--cron", "@daily"]
    status = cli(report)
    child = cli(["catalog", "report", "probe_child", "--project", "p", "--slot", typed, "--parent", "p/probe"])
    refused = own_lines(capsys.readouterr().err)
    if not in_range(slot):
        assert (status, child) == (2, 2) and all("out of range" in line for line in refused), refused
        return
    assert (status, child, refused) == (0, 0, [])
    assert cli(["plan", "--task", "p/probe", "--from", typed, "--to", typed, "--json"]) == 0
    captured = capsys.readouterr()
    assert own_lines(captured.err) == [] and '"task": "p/probe"' in captured.out
