"""ParentIntervalSensor: what a DAG author gets wrong is caught when the DAG is parsed."""

from __future__ import annotations

import pytest

from airflow_leastaction.exceptions import (
    ConfigurationError,
    DuplicateParentError,
    InvalidCoverageError,
    InvalidCronError,
    InvalidTimezoneError,
)
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.sensors import ParentIntervalSensor, airflow_task, external_task
from airflow_leastaction.timetables import IntervalCronTimetable
from airflow_leastaction.version_compat import TRIGGERER_STARTS_TASKS


class TestParentIntervalSensorArguments:
    def test_duplicate_parents_are_rejected_naming_the_parent(self):
        with pytest.raises(DuplicateParentError, match="'wait' names parent sales/orders_raw more than once"):
            ParentIntervalSensor(task_id="wait", parents=[external_task("orders_raw", "sales")] * 2)

    def test_a_parent_that_is_not_an_identity_is_rejected(self):
        with pytest.raises(ConfigurationError, match="parent 'orders_raw' is not a task identity"):
            ParentIntervalSensor(task_id="wait", parents=["orders_raw"])

    def test_parents_given_as_dicts_are_accepted(self):
        sensor = ParentIntervalSensor(task_id="wait", parents=[{"name": "orders_raw", "project": "sales"}])
        assert sensor.parents == [TaskIdentity("orders_raw", "sales")]

    def test_an_unknown_on_parent_failure_is_rejected(self):
        with pytest.raises(ConfigurationError, match="on_parent_failure='explode'"):
            ParentIntervalSensor(task_id="wait", parents=[], on_parent_failure="explode")

    def test_the_sensor_is_deferrable_by_default(self):
        assert ParentIntervalSensor(task_id="wait", parents=[]).deferrable is True

    def test_airflow_task_names_the_task_in_this_deployment(self, monkeypatch):
        monkeypatch.setenv("AIRFLOW__LEASTACTION__PROJECT", "sales-airflow")
        assert airflow_task("orders", "load") == TaskIdentity("orders.load", "sales-airflow")
        assert airflow_task("orders", "load", project="other") == TaskIdentity("orders.load", "other")

    def test_an_unknown_coverage_is_rejected_naming_the_task(self):
        with pytest.raises(InvalidCoverageError, match="task 'wait': coverage='whole'; expected 'slot'"):
            ParentIntervalSensor(task_id="wait", parents=[], coverage="whole")

    def test_an_unknown_parent_coverage_is_rejected_naming_the_parent(self):
        with pytest.raises(InvalidCoverageError, match=r"parent airflow_task\('orders', 'load'\): coverage='all'"):
            airflow_task("orders", "load", coverage="all")
        with pytest.raises(InvalidCoverageError, match=r"parent external_task\('raw', 'sales'\): coverage='day'"):
            external_task("raw", "sales", coverage="day")
        bad = TaskIdentity("raw", "sales", coverage="daily")
        with pytest.raises(InvalidCoverageError, match="task 'wait' parent sales/raw: coverage='daily'"):
            ParentIntervalSensor(task_id="wait", parents=[bad])

    def test_a_parent_says_its_own_coverage_and_the_sensor_gives_the_rest(self):
        hourly = external_task("hourly", "sales", coverage="interval")
        daily = external_task("daily", "sales")
        assert ParentIntervalSensor(task_id="wait", parents=[hourly, daily])._coverages() == ["interval", "slot"]
        sensor = ParentIntervalSensor(task_id="wait", parents=[hourly, daily], coverage="interval")
        assert sensor._coverages() == ["interval", "interval"]


@pytest.mark.skipif(
    not TRIGGERER_STARTS_TASKS, reason="Airflow before 3.3 never starts a task in the triggerer (start_from_trigger)"
)
class TestStartInTheTriggerer:
    """What the scheduler reads from the serialized DAG to start the sensor in the triggerer."""

    def sensor_in_a_dag(self, **kwargs):
        import datetime as dt

        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG
        from airflow.serialization.serialized_objects import DagSerialization

        daily = IntervalCronTimetable("0 0 * * *", timezone="Europe/Paris")
        with DAG("child", schedule=daily, start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC)) as dag:
            wait = ParentIntervalSensor(task_id="wait", parents=[external_task("raw", "sales")], **kwargs)
            wait >> EmptyOperator(task_id="work")
        self.dag = dag
        return DagSerialization.from_dict(DagSerialization.to_dict(dag)).get_task("wait")

    def test_the_sensor_starts_and_ends_in_the_triggerer_by_default(self):
        import datetime as dt

        from airflow.serialization.serialized_objects import BaseSerialization

        task = self.sensor_in_a_dag(child_interval="{{ data_interval_start }}", timeout=600)
        args = task.start_trigger_args
        assert task.start_from_trigger is True
        assert args.trigger_cls == "airflow_leastaction.triggers.parent_interval.ParentIntervalTrigger"
        assert args.next_method == "execute_complete"
        assert args.timeout == dt.timedelta(seconds=600) + dt.timedelta(minutes=5)
        kwargs = BaseSerialization.deserialize(args.trigger_kwargs)
        assert kwargs["end_from_trigger"] is True and kwargs["consumers"] == ["work"]
        # Same names as the sensor's template fields: the triggerer renders them.
        assert kwargs["child_interval"] == "{{ data_interval_start }}" and kwargs["child_interval_end"] is None
        assert kwargs["timeout"] == 600.0 and kwargs["parents"][0]["coverage"] == "slot"

    def test_the_triggerer_declares_the_parents_with_the_schedule_a_worker_reads(self):
        from airflow_leastaction.airflow_seam.schedule import schedule_meta

        task = self.sensor_in_a_dag()
        assert schedule_meta(task.dag, "work") == schedule_meta(self.dag, "work")
        assert schedule_meta(task.dag, "work").timezone == "Europe/Paris"

    @pytest.mark.parametrize("kwargs", [{"start_from_trigger": False}, {"deferrable": False}])
    def test_the_worker_path_is_kept_as_an_option(self, kwargs):
        task = self.sensor_in_a_dag(**kwargs)
        assert task.start_from_trigger is False and task.start_trigger_args is None


class TestIntervalCronTimetable:
    def test_summary_carries_the_granularity_children_are_judged_at(self):
        assert IntervalCronTimetable("0 2 * * *", "Europe/Paris").summary == "0 2 * * * (day, Europe/Paris)"
        assert IntervalCronTimetable("@weekly").summary == "0 0 * * 0 (week, UTC)"

    def test_an_invalid_cron_fails_at_parse_time(self):
        with pytest.raises(InvalidCronError, match="'0 25 \\* \\* \\*'"):
            IntervalCronTimetable("0 25 * * *")

    def test_an_unknown_timezone_fails_at_parse_time(self):
        with pytest.raises(InvalidTimezoneError, match="Europe/Atlantis"):
            IntervalCronTimetable("0 0 * * *", "Europe/Atlantis")

    def test_serialization_round_trips(self):
        timetable = IntervalCronTimetable("0 6 * * 1", "America/New_York")
        again = IntervalCronTimetable.deserialize(timetable.serialize())
        assert again.serialize() == timetable.serialize() and again.summary == timetable.summary

    def test_a_manual_run_on_a_slot_covers_the_interval_starting_there(self):
        import pendulum

        timetable = IntervalCronTimetable("0 0 * * *")
        on_slot = timetable.infer_manual_data_interval(run_after=pendulum.datetime(2026, 11, 5))
        assert (on_slot.start, on_slot.end) == (pendulum.datetime(2026, 11, 5), pendulum.datetime(2026, 11, 6))
        between = timetable.infer_manual_data_interval(run_after=pendulum.datetime(2026, 11, 5, 13))
        assert (between.start, between.end) == (pendulum.datetime(2026, 11, 4), pendulum.datetime(2026, 11, 5))

    def test_the_logical_date_of_a_scheduled_run_is_the_interval_start(self):
        import pendulum
        from airflow.timetables.base import DataInterval, TimeRestriction

        timetable = IntervalCronTimetable("0 0 * * *")
        info = timetable.next_dagrun_info(
            last_automated_data_interval=DataInterval(pendulum.datetime(2026, 11, 4), pendulum.datetime(2026, 11, 5)),
            restriction=TimeRestriction(earliest=pendulum.datetime(2026, 11, 1), latest=None, catchup=True),
        )
        assert info.logical_date == info.data_interval.start == pendulum.datetime(2026, 11, 5)
