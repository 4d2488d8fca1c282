"""ParentIntervalTrigger started in the triggerer, against real catalogs: built from the sensor's serialized
``start_trigger_args`` with the task instance the triggerer itself builds (``TriggerRunner.create_runtime_ti``),
its templates rendered as the triggerer renders them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest
from airflow.jobs.triggerer_job_runner import TriggerRunner
from airflow.models.trigger import Trigger
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG
from airflow.triggers.base import TaskFailedEvent, TaskSuccessEvent
from sqlalchemy import select

from airflow_leastaction.airflow_seam.child_interval import DEADLINE_BACKSTOP
from airflow_leastaction.airflow_seam.context import trigger_context
from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.catalog.schema import consumption
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.sensors import ParentIntervalSensor, external_task
from airflow_leastaction.timetables import IntervalCronTimetable
from airflow_leastaction.triggers.parent_interval import NOTHING_READ_YET, ParentIntervalTrigger
from airflow_leastaction.version_compat import TRIGGERER_STARTS_TASKS

pytestmark = pytest.mark.skipif(
    not TRIGGERER_STARTS_TASKS, reason="Airflow before 3.3 never starts a task in the triggerer (start_from_trigger)"
)

UTC = dt.UTC
DAY = dt.datetime(2026, 11, 16, tzinfo=UTC)
DAILY = TaskMeta(cron="0 0 * * *")
PARENT = external_task("orders_raw", "sales")
ATTEMPT = AttemptKey("child", "wait", "r1", -1, 1)


def started_in_the_triggerer(*, downstream: bool = True, **sensor_kwargs) -> ParentIntervalTrigger:
    """The trigger as the triggerer starts it for the run of ``DAY``."""
    # Airflow 3.3's: the module is skipped on the minors without them.
    from airflow.executors.workloads.task import TaskInstanceDTO
    from airflow.serialization.decoders import smart_decode_trigger_kwargs
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG("child", schedule=IntervalCronTimetable("0 0 * * *"), start_date=DAY - dt.timedelta(days=30)) as dag:
        wait = ParentIntervalSensor(task_id="wait", parents=[PARENT], poll_interval=0.05, **sensor_kwargs)
        if downstream:
            wait >> EmptyOperator(task_id="work")
    data = DagSerialization.to_dict(dag)
    args = DagSerialization.from_dict(data).get_task("wait").start_trigger_args
    # The trigger row the scheduler writes, and the kwargs the triggerer reads back from it.
    row = Trigger(classpath=args.trigger_cls, kwargs=args.trigger_kwargs)
    stored = Trigger._decrypt_kwargs(row.encrypted_kwargs)
    trigger = ParentIntervalTrigger(**{k: smart_decode_trigger_kwargs(v) for k, v in stored.items()})
    ti = TaskInstanceDTO(
        id=uuid.uuid4(),
        task_id="wait",
        dag_id="child",
        run_id="r1",
        try_number=1,
        dag_version_id=uuid.uuid4(),
        pool_slots=1,
        priority_weight=1,
    )
    run = {
        "dag_id": "child",
        "run_id": "r1",
        "logical_date": DAY,
        "data_interval_start": DAY,
        "data_interval_end": DAY + dt.timedelta(days=1),
        "run_after": DAY,
        "start_date": DAY,
        "end_date": None,
        "run_type": "manual",
        "state": "running",
        "conf": {},
        "consumed_asset_events": [],
        "partition_key": None,
    }
    trigger.task_instance = TriggerRunner.create_runtime_ti(ti, data, run)
    trigger.render_template_fields(trigger_context(trigger))
    trigger.timeout_after = dt.datetime.now(UTC) + dt.timedelta(seconds=args.timeout.total_seconds())
    return trigger


async def first(trigger):
    async for event in trigger.run():
        return event


class TestAdmission:
    async def test_the_admission_is_recorded_from_the_triggerer_and_the_task_succeeds(
        self, store, catalog_url, use_catalog
    ):
        use_catalog(catalog_url)
        store.record_success(PARENT, DAY, meta=DAILY, run_id="parent")
        trigger = started_in_the_triggerer(child_interval="{{ data_interval_start }}")
        assert trigger.child_interval == "2026-11-16 00:00:00+00:00"  # rendered
        event = await asyncio.wait_for(first(trigger), timeout=30)
        assert isinstance(event, TaskSuccessEvent)
        [decision] = store.audit.decisions_for(ATTEMPT)
        assert (decision["result"], decision["upstream_slot"]) == ("SATISFIED", DAY)
        assert "the child_interval argument" in decision["reason"]
        declared = store.get_task(airflow_task("child", "work"))
        assert "orders_raw" in declared["parents"]
        with store.engine.connect() as conn:  # the downstream task consumes, when it succeeds
            assert conn.execute(select(consumption)).all() == []

    async def test_a_sensor_that_gates_nothing_consumes_its_own_admission_with_its_success(
        self, store, catalog_url, use_catalog
    ):
        use_catalog(catalog_url)
        store.record_success(PARENT, DAY, meta=DAILY, run_id="parent")
        event = await asyncio.wait_for(first(started_in_the_triggerer(downstream=False)), timeout=30)
        assert isinstance(event, TaskSuccessEvent)
        [decision] = store.audit.decisions_for(ATTEMPT)
        with store.engine.connect() as conn:
            [consumed] = conn.execute(select(consumption)).mappings().all()
        assert (consumed["task_id"], consumed["attempt"], consumed["decision_id"]) == ("wait", 1, decision["id"])


class TestEndings:
    async def test_a_failed_parent_fails_the_task_in_the_triggerer(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        store.record_running(PARENT, DAY, meta=DAILY, run_id="parent")
        store.record_finished(PARENT, DAY, "failed", run_id="parent")
        event = await asyncio.wait_for(first(started_in_the_triggerer(on_parent_failure="fail")), timeout=30)
        assert isinstance(event, TaskFailedEvent)
        assert store.audit.decisions_for(ATTEMPT) == []

    @pytest.mark.parametrize(("retries", "ended_there"), [(0, True), (2, False)])
    async def test_the_deadline_fails_the_task_there_unless_a_retry_could_follow(
        self, store, catalog_url, use_catalog, retries, ended_there
    ):
        use_catalog(catalog_url)
        store.register_task(PARENT, DAILY)
        # The reasons a worker reports come from the first read: its deadline leaves that read half a minute
        # (seen taking over 4 s with both cores busy). Failing there says no reason, so it needs no such wait.
        trigger = started_in_the_triggerer(timeout=4 if ended_there else 30, retries=retries)
        assert trigger.timeout_after - dt.datetime.now(UTC) > DEADLINE_BACKSTOP
        event = await asyncio.wait_for(first(trigger), timeout=120)
        if ended_there:
            assert isinstance(event, TaskFailedEvent)
        else:  # a worker fails it with AirflowSensorTimeout, which is never retried
            assert event.payload["status"] == "timeout"
            assert "orders_raw" in event.payload["reasons"][0]

    async def test_a_deadline_passed_before_the_first_read_says_so(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        store.register_task(PARENT, DAILY)
        trigger = started_in_the_triggerer(timeout=0.001, retries=2)
        event = await asyncio.wait_for(first(trigger), timeout=30)
        assert (event.payload["status"], event.payload["reasons"]) == ("timeout", [NOTHING_READ_YET])

    async def test_relaxed_gates_hand_the_wait_to_a_worker(self, store, catalog_url, use_catalog, monkeypatch):
        use_catalog(catalog_url)
        store.register_task(PARENT, DAILY)
        monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", "warn")
        event = await asyncio.wait_for(first(started_in_the_triggerer()), timeout=30)
        assert (event.payload["status"], event.payload["mode"]) == ("relaxed", "warn")
        assert store.audit.decisions_for(ATTEMPT) == []  # the worker records the BYPASSED decisions
