"""Cron and timezone the listener records come from the DAG's timetable, whichever kind it is."""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.sdk import DAG

try:
    from airflow.sdk import CronDataIntervalTimetable, CronTriggerTimetable
except ImportError:  # Airflow 3.1: DAG authors import Airflow core's timetables
    from airflow.timetables.interval import CronDataIntervalTimetable
    from airflow.timetables.trigger import CronTriggerTimetable

from airflow_leastaction.airflow_seam.schedule import schedule_meta
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    "schedule, cron, timezone",
    [
        ("@daily", "0 0 * * *", "UTC"),
        ("30 4 * * *", "30 4 * * *", "UTC"),
        (CronTriggerTimetable("0 3 * * *", timezone="Europe/Paris"), "0 3 * * *", "Europe/Paris"),
        (CronDataIntervalTimetable("*/15 * * * *", timezone="America/New_York"), "*/15 * * * *", "America/New_York"),
        (IntervalCronTimetable("0 2 * * 1", "Asia/Tokyo"), "0 2 * * 1", "Asia/Tokyo"),
        (None, None, "UTC"),  # no schedule: ad hoc
        (dt.timedelta(hours=1), None, "UTC"),  # not a cron: ad hoc
        ("0 0 * * * *", None, "UTC"),  # six fields: the interval check reads five, so ad hoc
    ],
)
def test_schedule_meta_reads_cron_and_timezone_from_any_cron_timetable(schedule, cron, timezone):
    meta = schedule_meta(DAG("d", schedule=schedule, start_date=START), "t")
    assert (meta.cron, meta.timezone, meta.dag_id, meta.task_id) == (cron, timezone, "d", "t")


class _CronThatFailsWhenRead(str):
    """A schedule source with a bug: its cron expression raises when the interval check reads it."""

    def split(self, *args, **kwargs):
        raise KeyError("timetable lost its expression")


def test_a_schedule_that_fails_to_read_raises_instead_of_being_recorded_ad_hoc():
    class Timetable:
        _expression = _CronThatFailsWhenRead("0 0 * * *")
        _timezone = "UTC"

    class Dag:
        dag_id = "d"
        timetable = Timetable()

    with pytest.raises(KeyError, match="lost its expression"):
        schedule_meta(Dag(), "t")


def test_a_tasks_timezone_is_its_dags_and_utc_before_it_is_in_a_dag():
    import pendulum
    from airflow.sdk import DAG
    from airflow.sdk.bases.operator import BaseOperator

    from airflow_leastaction.airflow_seam.schedule import task_timezone

    with DAG("tz_dag", schedule="0 6 * * *", start_date=pendulum.datetime(2026, 1, 1, tz="Europe/Paris")):
        in_dag = BaseOperator(task_id="t")
    assert task_timezone(in_dag) == "Europe/Paris"
    assert task_timezone(BaseOperator(task_id="alone")) == "UTC"
