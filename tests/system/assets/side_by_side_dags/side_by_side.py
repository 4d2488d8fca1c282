"""Airflow's partitions and the catalog, fed by the same producers, each with its daily consumer.

Whole days: ``sbs_hourly`` emits hourly partitions of ``sbs_hourly_orders`` (the hours its run's conf
names); ``sbs_airflow_day`` rolls them up with ``RollupMapper(DayWindow)`` and ``WaitForAll``,
``sbs_catalog_day`` waits for every hour of its day with ``coverage="interval"`` on the same asset's
catalog identity.

N of M: ``sbs_regions`` loads three regions, each task updating ``sbs_region_sales`` with its region as
the partition key (a region the run's conf names fails); ``sbs_airflow_regions`` runs on two of the three
with ``MinimumCount(2)``, ``sbs_catalog_regions`` gates its report on two of the three region tasks.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import (
    DAG,
    Asset,
    DayWindow,
    FixedKeyMapper,
    MinimumCount,
    PartitionedAssetTimetable,
    PartitionedAtRuntime,
    RollupMapper,
    SegmentWindow,
    StartOfDayMapper,
    WaitForAll,
    task,
)

from airflow_leastaction.assets import airflow_asset, asset_schedule
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.run_conditions import run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor
from airflow_leastaction.timetables import IntervalCronTimetable

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAILY = IntervalCronTimetable("0 0 * * *")
HOURLY = Asset("sbs_hourly_orders", uri="file:///data/sbs/hourly_orders", extra=asset_schedule("0 * * * *"))
REGION_SALES = Asset("sbs_region_sales", uri="file:///data/sbs/region_sales")
REGIONS = ["us", "eu", "apac"]

with DAG("sbs_hourly", schedule=PartitionedAtRuntime(), start_date=START, catchup=False):

    @task(outlets=[HOURLY])
    def land(outlet_events=None, dag_run=None):
        outlet_events[HOURLY].add_partitions(dag_run.conf["hours"])

    land()

with DAG(
    "sbs_airflow_day",
    schedule=PartitionedAssetTimetable(
        assets=HOURLY,
        default_partition_mapper=RollupMapper(
            upstream_mapper=StartOfDayMapper(), window=DayWindow(), wait_policy=WaitForAll()
        ),
    ),
    start_date=START,
    catchup=False,
):

    @task
    def aggregate(dag_run=None):
        return dag_run.partition_key

    aggregate()

with DAG("sbs_catalog_day", schedule=DAILY, start_date=START, catchup=False):
    whole_day = ParentIntervalSensor(
        task_id="wait", parents=[airflow_asset(HOURLY, coverage="interval")], poll_interval=1
    )

    @task
    def aggregate_day():
        return "aggregated"

    whole_day >> aggregate_day()

with DAG("sbs_regions", schedule=None, start_date=START, catchup=False):
    for region in REGIONS:

        @task(task_id=f"load_{region}", outlets=[REGION_SALES], retries=0)
        def load(region=region, outlet_events=None, dag_run=None):
            if region in dag_run.conf.get("fail", []):
                raise RuntimeError(f"the {region} load fails")
            outlet_events[REGION_SALES].add_partitions(region)

        load()

with DAG(
    "sbs_airflow_regions",
    schedule=PartitionedAssetTimetable(
        assets=REGION_SALES,
        default_partition_mapper=RollupMapper(
            upstream_mapper=FixedKeyMapper("all_regions"), window=SegmentWindow(REGIONS), wait_policy=MinimumCount(2)
        ),
    ),
    start_date=START,
    catchup=False,
):

    @task
    def report_regions(dag_run=None):
        return dag_run.partition_key

    report_regions()

with DAG("sbs_catalog_regions", schedule=DAILY, start_date=START, catchup=False):

    @task
    def report():
        return "reported"

    regions = [success(airflow_task("sbs_regions", f"load_{r}")) for r in REGIONS]
    run_condition(report(), *regions, when="N", count=2, max_wait=0, poll_interval=1)
