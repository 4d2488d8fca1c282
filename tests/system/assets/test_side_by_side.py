"""Airflow's partitions and the catalog side by side on a real deployment (scheduler, dag-processor,
API server, triggerer), fed by the same producer runs.

An hourly asset and a daily consumer each way: ``RollupMapper(DayWindow)`` with ``WaitForAll``, and a
sensor with ``coverage="interval"`` on the asset's catalog identity. With all 24 hours of one day and 23
of the next, both admit the first day only; once the missing hour lands, both admit the second.

``MinimumCount(2)`` over three region partitions, and the catalog's N of M (two of the three region
tasks): a round where two regions loaded admits both ways, a round where one did admits neither.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database

pytestmark = pytest.mark.postgres

DAGS = Path(__file__).resolve().parent / "side_by_side_dags"
DAY = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
NEXT = DAY + dt.timedelta(days=1)
TIMEOUT = 300


@pytest.fixture(scope="module")
def deployment(pg_admin_url, tmp_path_factory):
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_sbs")
    catalog_url, drop_catalog = fresh_pg_database(pg_admin_url, "la_e2e_sbs_catalog")
    cluster = AirflowCluster(
        DAGS, sql_alchemy_conn=airflow_url, catalog_url=catalog_url, home=tmp_path_factory.mktemp("sbs") / "home"
    )
    try:
        with cluster:
            for dag_id in (
                "sbs_hourly",
                "sbs_airflow_day",
                "sbs_catalog_day",
                "sbs_regions",
                "sbs_airflow_regions",
                "sbs_catalog_regions",
            ):
                cluster.unpause(dag_id)
            yield cluster
    finally:
        drop_airflow()
        drop_catalog()


def hours(day: dt.datetime, numbers) -> list[str]:
    return [(day + dt.timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M:%S") for h in numbers]


def produce(cluster: AirflowCluster, dag_id: str, conf: dict) -> None:
    run = cluster.trigger(dag_id, None, conf)
    cluster.wait_for_run(dag_id, run["dag_run_id"], TIMEOUT)


def airflow_days(cluster: AirflowCluster, dag_id: str) -> set[str]:
    """The partitions Airflow's consumer ran for (and finished)."""
    return {r["partition_key"] for r in cluster.runs(dag_id) if r["state"] == "success"}


def sensor_state(cluster: AirflowCluster, run_id: str) -> str:
    ti = cluster.api("GET", f"/api/v2/dags/sbs_catalog_day/dagRuns/{run_id}/taskInstances/wait")
    return ti["state"]


def test_whole_days_are_admitted_on_the_same_days_by_a_rollup_and_by_interval_coverage(deployment):
    cluster = deployment
    produce(cluster, "sbs_hourly", {"hours": hours(DAY, range(24)) + hours(NEXT, range(23))})
    catalog_runs = {day: cluster.trigger("sbs_catalog_day", day.isoformat())["dag_run_id"] for day in (DAY, NEXT)}
    cluster.wait_for_run("sbs_catalog_day", catalog_runs[DAY], TIMEOUT)
    cluster.wait_until(
        lambda: airflow_days(cluster, "sbs_airflow_day") == {"2026-11-16"}, TIMEOUT, "the rollup of day 1"
    )
    # The catalog's consumer of the second day is still waiting, for the hour Airflow's rollup waits for too.
    assert sensor_state(cluster, catalog_runs[NEXT]) == "deferred"
    assert airflow_days(cluster, "sbs_airflow_day") == {"2026-11-16"}
    produce(cluster, "sbs_hourly", {"hours": hours(NEXT, [23])})
    assert cluster.wait_for_run("sbs_catalog_day", catalog_runs[NEXT], TIMEOUT)["state"] == "success"
    cluster.wait_until(
        lambda: airflow_days(cluster, "sbs_airflow_day") == {"2026-11-16", "2026-11-17"}, TIMEOUT, "the rollup of day 2"
    )


def test_minimum_count_and_n_of_m_admit_the_same_rounds(deployment):
    cluster = deployment
    admitted: dict[str, list[bool]] = {"airflow": [], "catalog": []}
    for day, failing in ((DAY, ["apac"]), (NEXT, ["eu", "apac"])):
        before = len([r for r in cluster.runs("sbs_airflow_regions") if r["state"] == "success"])
        produce(cluster, "sbs_regions", {"fail": failing})
        run = cluster.trigger("sbs_catalog_regions", day.isoformat())["dag_run_id"]
        cluster.wait_for_run("sbs_catalog_regions", run, TIMEOUT)
        report = cluster.api("GET", f"/api/v2/dags/sbs_catalog_regions/dagRuns/{run}/taskInstances/report")
        admitted["catalog"].append(report["state"] == "success")
        if not failing[1:]:  # two regions loaded: Airflow's run comes
            cluster.wait_until(
                lambda b=before: len([r for r in cluster.runs("sbs_airflow_regions") if r["state"] == "success"]) > b,
                TIMEOUT,
                "MinimumCount(2) to run",
            )
        admitted["airflow"].append(
            len([r for r in cluster.runs("sbs_airflow_regions") if r["state"] == "success"]) > before
        )
    assert admitted["catalog"] == admitted["airflow"] == [True, False]
