"""The start-latency part of :mod:`bench.bench_gate`: the deployment of ``tests/helpers/gate_latency.py``
running the ANY shapes and the sensor shape in turns."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.helpers.gate_latency import (
    LATENCY_POLL,
    LATENCY_SHAPES,
    SENSOR_DAGS,
    latency_cluster,
    sensor_latency,
    start_latency,
)

__all__ = ["LATENCY_POLL", "latency"]


def latency(runs: int) -> dict[str, list]:
    """Per DAG of :data:`LATENCY_SHAPES`, ``runs`` (latency or None, details) pairs, the DAGs taking
    turns run by run so a change in the machine's load reaches every shape alike."""
    from bench.common import fresh_database

    # PostgreSQL for Airflow and the catalog: the durable benchmark server.
    (airflow_url, drop_airflow), (catalog_url, drop_catalog) = fresh_database("postgres"), fresh_database("postgres")
    try:
        with latency_cluster(Path(tempfile.mkdtemp(prefix="la-bench-cluster-")), airflow_url, catalog_url) as cluster:
            for dag_id in LATENCY_SHAPES + SENSOR_DAGS:
                cluster.wait_for_dag(dag_id)
                cluster.unpause(dag_id)
            out: dict[str, list] = {dag_id: [] for dag_id in (*LATENCY_SHAPES, "bench_sensor_child")}
            for n in range(runs):
                for dag_id in LATENCY_SHAPES:
                    out[dag_id].append(start_latency(cluster, dag_id))
                out["bench_sensor_child"].append(sensor_latency(cluster, n))
    finally:
        drop_airflow()
        drop_catalog()
    return out
