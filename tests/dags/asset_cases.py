"""DAGs for the tests of assets as catalog parents (ids start with ``asc_``).

``asc_hourly_producer`` emits the hourly partitions its run's conf names, with the rows written in the
events' extra; ``asc_prices_producer`` is a daily DAG whose task updates an unpartitioned asset. The other
DAGs depend on those assets through the catalog: a sensor on every hour of its day, a run condition on
HAS_DATA, a whole-DAG condition.

``asc_hourly_producer`` names its partitions when it runs (``PartitionedAtRuntime``): Airflow 3.3 only.
``asc_hourly_runs`` lands the same asset unpartitioned, one run per hour, on every minor: its events take
the slots of their runs.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Asset, task

from airflow_leastaction.assets import airflow_asset, asset_schedule
from airflow_leastaction.run_conditions import dag_run_condition, has_data, run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor
from airflow_leastaction.timetables import IntervalCronTimetable
from airflow_leastaction.version_compat import RUNTIME_PARTITIONS

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAILY = IntervalCronTimetable("0 0 * * *")
HOURLY = Asset("asc_hourly_orders", uri="file:///data/asc/hourly_orders", extra=asset_schedule("0 * * * *"))
PRICES = Asset("asc_daily_prices", uri="file:///data/asc/daily_prices")
FAST = dict(poll_interval=0.2)

if RUNTIME_PARTITIONS:
    from airflow.sdk import PartitionedAtRuntime

    with DAG("asc_hourly_producer", schedule=PartitionedAtRuntime(), start_date=START, catchup=False, tags=["test"]):

        @task(outlets=[HOURLY])
        def land(outlet_events=None, dag_run=None):
            outlet_events[HOURLY].extra = {"rows_written": dag_run.conf.get("rows", 10)}
            outlet_events[HOURLY].add_partitions(dag_run.conf["keys"])

        land()

with DAG(
    "asc_hourly_runs", schedule=IntervalCronTimetable("0 * * * *"), start_date=START, catchup=False, tags=["test"]
):

    @task(outlets=[HOURLY])
    def land_hour(outlet_events=None, dag_run=None):
        outlet_events[HOURLY].extra = {"rows_written": dag_run.conf.get("rows", 10)}

    land_hour()

with DAG("asc_prices_producer", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):

    @task(outlets=[PRICES])
    def publish():
        return "published"

    publish()


def step(task_id: str):
    @task(task_id=task_id)
    def run():
        return task_id

    return run()


with DAG("asc_whole_day", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):
    wait = ParentIntervalSensor(
        task_id="wait", parents=[airflow_asset(HOURLY, coverage="interval")], poke_interval=0.2, timeout=3
    )
    wait >> step("aggregate")

with DAG("asc_has_data", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):
    run_condition(step("report"), has_data(airflow_asset(HOURLY)), max_wait=0, **FAST)

with DAG("asc_on_prices", schedule=DAILY, start_date=START, catchup=False, tags=["test"]) as on_prices:
    step("price_report")
    dag_run_condition(on_prices, success(airflow_asset(PRICES)), max_wait=0, **FAST)
