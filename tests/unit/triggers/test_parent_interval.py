"""The interval trigger's serialization round trips and its deadline."""

from __future__ import annotations

import datetime as dt
import importlib

from airflow_leastaction.airflow_seam.child_interval import DEADLINE_BACKSTOP, triggerer_deadline
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger

UTC = dt.UTC


DAY = dt.datetime(2026, 11, 28, tzinfo=UTC)


def make_trigger(parents, **kwargs) -> ParentIntervalTrigger:
    return ParentIntervalTrigger(
        parents=[p.as_dict() for p in parents], child_interval=DAY.isoformat(), poll_interval=0.05, **kwargs
    )


class TestSerialization:
    def test_serialize_round_trips_through_init(self):
        trigger = make_trigger(
            [TaskIdentity("orders_raw", "sales")],
            consumed={"catalog:sales/orders_raw": {DAY.isoformat(): 1}},
            catalog_conn_id="my_catalog",
            deadline=DAY.isoformat(),
            on_parent_failure="fail",
        )
        classpath, kwargs = trigger.serialize()
        module, name = classpath.rsplit(".", 1)
        rebuilt = getattr(importlib.import_module(module), name)(**kwargs)
        assert rebuilt.serialize() == (classpath, kwargs)

    def test_whole_interval_parents_round_trip_with_the_interval_end(self):
        parent = {**TaskIdentity("hourly", "sales").as_dict(), "coverage": "interval"}
        trigger = ParentIntervalTrigger(
            parents=[parent], child_interval=DAY.isoformat(), interval_end=(DAY + dt.timedelta(days=1)).isoformat()
        )
        classpath, kwargs = trigger.serialize()
        rebuilt = ParentIntervalTrigger(**kwargs)
        assert rebuilt.serialize() == (classpath, kwargs)
        assert TaskIdentity.from_dict(kwargs["parents"][0]).coverage == "interval"

    def test_a_trigger_that_starts_in_the_triggerer_round_trips_through_init(self):
        trigger = make_trigger(
            [TaskIdentity("orders_raw", "sales")],
            end_from_trigger=True,
            child_interval_end="{{ data_interval_end }}",
            consumers=["work"],
            wait_for_new_output=True,
            timeout=600.0,
            execution_timeout=3600.0,
        )
        classpath, kwargs = trigger.serialize()
        rebuilt = ParentIntervalTrigger(**kwargs)
        assert rebuilt.serialize() == (classpath, kwargs)
        assert rebuilt.end_from_trigger and rebuilt.consumers == ["work"] and rebuilt.timeout == 600.0

    def test_a_worker_deferral_carries_only_the_kwargs_a_worker_gives(self):
        _, kwargs = make_trigger([TaskIdentity("orders_raw", "sales")], deadline=DAY.isoformat()).serialize()
        assert set(kwargs) == {
            "parents",
            "child_interval",
            "consumed",
            "catalog_conn_id",
            "poll_interval",
            "deadline",
            "on_parent_failure",
            "interval_end",
        }


class TestTriggererDeadline:
    """Airflow tells a trigger only its timeout; the sensor's deadline is worked back from it."""

    START = dt.datetime(2026, 11, 28, 6, tzinfo=UTC)

    def test_the_deadline_is_the_sensor_timeout_after_the_start(self):
        timeout_after = self.START + dt.timedelta(seconds=600) + DEADLINE_BACKSTOP
        assert triggerer_deadline(timeout_after, 600, None) == self.START + dt.timedelta(seconds=600)

    def test_the_deadline_is_counted_from_the_start_when_an_execution_timeout_is_shorter(self):
        timeout_after = self.START + dt.timedelta(seconds=300)  # Airflow takes the shorter of the two
        assert triggerer_deadline(timeout_after, 600, 300.0) == self.START + dt.timedelta(seconds=600)

    def test_no_trigger_timeout_means_no_deadline(self):
        assert triggerer_deadline(None, 600, None) is None
