"""DAGs for the run-end reconciliation tests (ids start with ``re_``): states Airflow sets without a worker,
and a mapped parent named without a map index."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task

from airflow_leastaction.refs import airflow_task
from airflow_leastaction.sensors import ParentIntervalSensor
from airflow_leastaction.timetables import IntervalCronTimetable
from airflow_leastaction.version_compat import AirflowSkipException

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAILY = IntervalCronTimetable("0 0 * * *")

with DAG("re_outcomes", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):

    @task
    def boom():
        raise RuntimeError("this task fails on purpose")

    @task
    def after_boom():
        return "never runs: upstream_failed"

    @task.short_circuit
    def gate_closed():
        return False

    @task
    def cut():
        return "never runs: skipped by the short circuit"

    @task
    def double(x):
        return 2 * x

    @task
    def half(x):
        if x == 3:
            raise RuntimeError("map index 2 fails on purpose")
        return x / 2

    @task
    def sees_double_done(doubled):
        # Runs while the run goes on: the last map index of `double` recorded the task as a whole.
        from airflow_leastaction.catalog.store import CatalogStore

        row = CatalogStore().get_task(airflow_task("re_outcomes", "double"))
        if row is None or row["state"] != "success":
            raise RuntimeError(f"double as a whole is {row and row['state']}, not success, before the run ends")
        return list(doubled)

    boom() >> after_boom()
    gate_closed() >> cut()
    sees_double_done(double.expand(x=[1, 2, 3]))
    half.expand(x=[1, 2, 3])


with DAG("re_mapped_child", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):
    wait = ParentIntervalSensor(
        task_id="wait", parents=[airflow_task("re_outcomes", "double")], poke_interval=0.2, timeout=60
    )

    @task
    def use():
        return "admitted"

    wait >> use()


with DAG("re_mapped_whole", schedule=DAILY, start_date=START, catchup=False, tags=["test"]):

    @task(retries=0)
    def fail_all(x):
        raise RuntimeError(f"map index of {x} fails on purpose")

    @task
    def skip_all(x):
        raise AirflowSkipException(f"map index of {x} skips itself")

    @task(trigger_rule="all_done")
    def sees_wholes():
        # Runs while the run goes on: the last map index of each recorded its task as a whole.
        from airflow_leastaction.catalog.store import CatalogStore

        store = CatalogStore()
        found = {t: store.get_task(airflow_task("re_mapped_whole", t)) for t in ("fail_all", "skip_all")}
        states = {t: row and row["state"] for t, row in found.items()}
        if states != {"fail_all": "failed", "skip_all": "skipped"}:
            raise RuntimeError(f"mapped tasks as a whole are {states} before the run ends")
        return states

    [fail_all.expand(x=[1, 2]), skip_all.expand(x=[1, 2])] >> sees_wholes()
