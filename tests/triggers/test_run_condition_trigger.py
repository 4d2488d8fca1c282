"""The run-condition triggers: serialization round trips, and a real wait on a catalog."""

from __future__ import annotations

import asyncio
import datetime as dt

from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import Dependency
from airflow_leastaction.run_conditions.wait_rule import WaitClock
from airflow_leastaction.triggers.poller import CatalogPoller
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from airflow_leastaction.triggers.run_outcome import RunOutcomeTrigger
from tests.run_conditions.conftest import day

OTHER = TaskIdentity("rc_trigger_upstream", "other-team")


def gate_trigger(url: str | None = None, **overrides) -> RunConditionTrigger:
    kwargs = dict(
        dag_id="rc_t",
        run_id="r1",
        task_id="child",
        dependencies=[Dependency(OTHER).as_dict()],
        condition="ALL",
        count=None,
        slot_requests={},
        slot=day(2).isoformat(),
        upstream={"child": []},
        waiting=["child__gate"],
        consumed={},
        clock=WaitClock(dt.datetime.now(dt.UTC)).as_dict(),
        max_wait=30.0,
        max_looks=30,
        catalog_conn_id=None,
        poll_interval=0.05,
    )
    kwargs.update(overrides)
    return RunConditionTrigger(**kwargs)


class TestSerialization:
    def test_the_gate_trigger_round_trips_through_its_constructor(self):
        trigger = gate_trigger(condition="N", count=1, consumed={OTHER.key: [day(1).isoformat(), 2]})
        path, kwargs = trigger.serialize()
        assert path == "airflow_leastaction.triggers.run_condition.RunConditionTrigger"
        assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)

    def test_the_gate_trigger_started_in_the_triggerer_round_trips_without_the_run_values(self):
        trigger = gate_trigger(run_id=None, slot=None, upstream=None, waiting=None, active=False, end_from_trigger=True)
        path, kwargs = trigger.serialize()
        assert (kwargs["end_from_trigger"], kwargs["active"], kwargs["run_id"], kwargs["slot"]) == (
            True,
            False,
            None,
            None,
        )
        assert RunConditionTrigger(**kwargs).serialize() == (path, kwargs)

    def test_a_gate_trigger_from_an_earlier_release_reads_as_deferred_by_a_worker(self):
        _, kwargs = gate_trigger().serialize()
        del kwargs["active"], kwargs["end_from_trigger"]
        trigger = RunConditionTrigger(**kwargs)
        assert (trigger.active, trigger.end_from_trigger) == (True, False)

    def test_the_run_outcome_trigger_round_trips_through_its_constructor(self):
        path, kwargs = RunOutcomeTrigger("rc_t", "r1", "leastaction_run_outcome", 0.5).serialize()
        assert RunOutcomeTrigger(**kwargs).serialize() == (path, kwargs)


async def first_event(trigger, timeout: float = 10.0):
    return await asyncio.wait_for(anext(trigger.run()), timeout)


class TestWaiting:
    async def test_the_trigger_admits_once_the_running_upstream_completes(self, store, catalog_url, use_catalog):
        use_catalog(catalog_url)
        meta = TaskMeta(cron="0 0 * * *", source="external")
        store.record_running(OTHER, day(2), meta=meta, run_id="o2")

        async def finish_later():
            # Once the gate has looked at the running upstream: every poll it reads has ticked twice (a
            # fixed delay raced the polls' first catalog connection on a busy machine).
            loop = id(asyncio.get_running_loop())
            while (
                not (polls := [p for key, p in list(CatalogPoller._shared.items()) if key[0] == loop and p.subscribers])
                or min(p.ticks for p in polls) < 2
            ):
                await asyncio.sleep(0.01)
            await asyncio.to_thread(store.record_success, OTHER, day(2), meta=meta, run_id="o2")

        finisher = asyncio.create_task(finish_later())
        event = await first_event(gate_trigger())
        await finisher
        assert event.payload["status"] == "ADMIT"
        assert event.payload["clock"]["looks"] >= 1

    async def test_the_trigger_skips_when_the_latest_finished_run_failed_and_no_wait_is_left(
        self, store, catalog_url, use_catalog
    ):
        use_catalog(catalog_url)
        store.record_finished(OTHER, day(2), "failed", meta=TaskMeta(cron="0 0 * * *"), run_id="o2")
        event = await first_event(gate_trigger(max_wait=0.0))
        assert event.payload["status"] == "SKIP"
        assert "is failed" in event.payload["summary"]
