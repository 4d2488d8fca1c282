"""Asset events recorded in the catalog, on real DAG runs (``dag.test()``, whose asset events reach the
provider's listener as in a deployment): a partitioned event is a slot record of ``airflow_asset(name)``
at its partition's instant with the rows of its extra, an unpartitioned one at the slot of the run that
produced it; a second event for a slot is a repair. A sensor, a run condition and a whole-DAG condition
then wait for the asset with the usual reasons."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select

from airflow_leastaction.catalog.schema import identity_clause, task, task_run
from airflow_leastaction.refs import airflow_asset
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER, RUNTIME_PARTITIONS
from tests.helpers.airflow_minors import needs
from tests.helpers.run_conditions import states

#: Events reach the catalog through Airflow's on_asset_event_emitted hook.
RECORDED = needs(ASSET_EVENT_LISTENER, "the on_asset_event_emitted listener hook (Airflow 3.2)")
#: asc_hourly_producer names the hours it lands when it runs.
PARTITIONS_AT_RUNTIME = needs(
    RUNTIME_PARTITIONS, "runtime partitions (PartitionedAtRuntime, add_partitions: Airflow 3.3)"
)

DAY = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)


def hours(*numbers: int) -> list[str]:
    return [(DAY + dt.timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M:%S") for h in numbers]


def records(store, asset_name: str) -> dict[dt.datetime, tuple]:
    identity = airflow_asset(asset_name)
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(task_run.c.slot, task_run.c.state, task_run.c.output_revision, task_run.c.rows_written)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(*identity_clause(identity))
        )
        return {r.slot: (r.state, r.output_revision, r.rows_written) for r in rows}


def asset_task(store, asset_name: str):
    with store.engine.connect() as conn:
        return conn.execute(select(task).where(*identity_clause(airflow_asset(asset_name)))).first()


def produce(run_dag, *numbers: int, rows: int = 10):
    """The hours ``numbers`` of DAY landed: one partitioned event where Airflow has runtime partitions, else
    one unpartitioned event per hourly run (at the run's slot)."""
    if RUNTIME_PARTITIONS:
        runs = [run_dag("asc_hourly_producer", None, run_conf={"keys": hours(*numbers), "rows": rows})]
    else:
        runs = [run_dag("asc_hourly_runs", DAY + dt.timedelta(hours=h), run_conf={"rows": rows}) for h in numbers]
    assert {run.state for run in runs} == {"success"}


@PARTITIONS_AT_RUNTIME
def test_each_partition_of_an_event_is_a_slot_record_of_the_asset_with_the_rows_of_its_extra(catalog, run_dag):
    produce(run_dag, 0, 1, rows=12)
    assert records(catalog, "asc_hourly_orders") == {
        DAY: ("success", 1, 12),
        DAY + dt.timedelta(hours=1): ("success", 1, 12),
    }
    row = asset_task(catalog, "asc_hourly_orders")
    assert (row.cron, row.timezone, row.source) == ("0 * * * *", "UTC", "asset")  # as the asset declares


@RECORDED
def test_a_second_event_for_a_recorded_partition_is_a_repair(catalog, run_dag):
    produce(run_dag, 3)
    produce(run_dag, 3, rows=0)
    assert records(catalog, "asc_hourly_orders") == {DAY + dt.timedelta(hours=3): ("success", 2, 0)}


@RECORDED
def test_an_unpartitioned_event_takes_the_slot_and_schedule_of_the_run_that_produced_it(catalog, run_dag):
    assert run_dag("asc_prices_producer", DAY).state == "success"
    assert records(catalog, "asc_daily_prices") == {DAY: ("success", 1, None)}
    row = asset_task(catalog, "asc_daily_prices")
    assert (row.cron, row.source) == ("0 0 * * *", "asset")


@RECORDED
def test_a_sensor_waits_for_every_hourly_partition_of_its_day(catalog, run_dag):
    produce(run_dag, *range(23))
    failed = run_dag("asc_whole_day", DAY)
    assert failed.state == "failed"  # the sensor's timeout: hour 23 has not landed
    produce(run_dag, 23)
    assert run_dag("asc_whole_day", DAY).state == "success"


@RECORDED
def test_a_run_condition_on_has_data_reads_the_rows_of_the_latest_partition(catalog, run_dag):
    produce(run_dag, 4, rows=0)
    assert states(run_dag("asc_has_data", DAY))["report"] == "skipped"
    produce(run_dag, 5, rows=3)
    assert states(run_dag("asc_has_data", DAY + dt.timedelta(days=1)))["report"] == "success"


@RECORDED
def test_a_whole_dag_condition_waits_for_the_asset(catalog, run_dag):
    first = states(run_dag("asc_on_prices", DAY))
    assert first["price_report"] == "skipped", first
    assert run_dag("asc_prices_producer", DAY).state == "success"
    assert states(run_dag("asc_on_prices", DAY + dt.timedelta(days=1)))["price_report"] == "success"


@PARTITIONS_AT_RUNTIME
def test_an_event_whose_key_is_no_time_is_left_out_and_rows_of_another_kind_are_unknown(catalog, run_dag):
    """Bad input from a producer is the producer's: its run still succeeds, the catalog records what it can."""
    produce(run_dag, 6, rows="many")
    run = run_dag("asc_hourly_producer", None, run_conf={"keys": ["yesterday", hours(7)[0]], "rows": -3})
    assert run.state == "success"
    assert records(catalog, "asc_hourly_orders") == {
        DAY + dt.timedelta(hours=6): ("success", 1, None),
        DAY + dt.timedelta(hours=7): ("success", 1, None),
    }
