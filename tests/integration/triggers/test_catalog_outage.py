"""Waiting gates survive a catalog outage.

A PostgreSQL server of the test's own is stopped while sensor and run-condition triggers wait (and
before they start, as for a triggerer starting during the outage), then started again: the triggers
neither admit nor fail while it is down, say so once, keep polling with back-off, honour their
deadline, and are released once the catalog is back and the parent has finished.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from airflow_leastaction.triggers.poller import CatalogPoller
from tests.helpers.own_postgres import OwnPostgres
from tests.helpers.triggers import gate_trigger

pytestmark = pytest.mark.postgres

UTC = dt.UTC
DAY = dt.datetime(2026, 11, 28, tzinfo=UTC)
DAILY = TaskMeta(cron="0 0 * * *")
RAW = TaskIdentity("orders_raw", "sales-platform")
OTHER = TaskIdentity("rc_trigger_upstream", "other-team")


@pytest.fixture(scope="module")
def server():
    pg = OwnPostgres()
    pg.start()
    yield pg
    pg.remove()


@pytest.fixture
def catalog(server, use_catalog, request):
    """A migrated catalog on the test's own server, the default catalog connection of this process."""
    server.start()
    url = server.create_database(f"la_outage_{request.node.name[:40].lower().replace('[', '_').strip(']')}")
    store = CatalogStore(get_engine(url, migrate=True))
    use_catalog(url)
    yield url, store
    server.start()
    dispose_all()


def sensor_trigger(**kwargs) -> ParentIntervalTrigger:
    return ParentIntervalTrigger(parents=[RAW.as_dict()], child_interval=DAY.isoformat(), poll_interval=0.05, **kwargs)


async def first_event(trigger):
    async for event in trigger.run():
        return event.payload


async def polls(poller: CatalogPoller, count: int, *gates: asyncio.Task) -> None:
    """Wait until ``poller`` has polled ``count`` more times; a gate of ``gates`` that ends meanwhile ends
    the wait with its outcome (its error, or what it said), as the poller stops once nobody waits."""
    start = poller.ticks
    while poller.ticks < start + count:
        ended = [gate for gate in gates if gate.done()]
        assert not ended, f"a gate ended while the catalog was down: {ended[0].result()!r}"
        await asyncio.sleep(0.01)


def poller_of(url: str, read: str = "snapshot") -> CatalogPoller:
    key = (id(asyncio.get_running_loop()), url, 0.05) + (() if read == "snapshot" else (read,))
    return CatalogPoller._shared[key]


async def until_subscribed(url: str, read: str = "snapshot") -> CatalogPoller:
    while True:
        try:
            return poller_of(url, read)
        except KeyError:
            await asyncio.sleep(0.01)


async def test_gates_started_during_an_outage_wait_and_are_released_when_the_catalog_returns(
    server, catalog, caplog, capfd
):
    url, store = catalog
    store.record_success(RAW, DAY - dt.timedelta(days=1), meta=DAILY, run_id="yesterday")
    store.record_running(OTHER, DAY, meta=TaskMeta(cron="0 0 * * *", source="external"), run_id="o")
    dispose_all()  # a triggerer starting now has no engine yet: creating it is part of the first poll
    server.stop()
    sensor = asyncio.create_task(first_event(sensor_trigger()))
    gate = asyncio.create_task(first_event(gate_trigger(max_wait=3600.0)))
    await polls(await until_subscribed(url), 4, sensor, gate)
    await polls(await until_subscribed(url, "latest_runs"), 4, sensor, gate)
    assert not sensor.done() and not gate.done()  # no false admit, no false fail

    await asyncio.to_thread(server.start)
    await asyncio.to_thread(CatalogStore(get_engine(url)).record_success, RAW, DAY, run_id="today")
    await asyncio.to_thread(CatalogStore(get_engine(url)).record_success, OTHER, DAY, run_id="o")
    payloads = await asyncio.wait_for(asyncio.gather(sensor, gate), timeout=120)
    assert payloads[0]["status"] == "admitted"
    assert payloads[1]["status"] == "admitted"
    # Said once per change, however many polls failed: by the poll loop (naming its read kinds), and by
    # each trigger.
    polls_said = [r.getMessage() for r in caplog.records if r.name == "airflow_leastaction.triggers.poll_group"]
    assert sum("unreachable (" in m for m in polls_said) == 1
    assert sum("reachable again (" in m for m in polls_said) == 1
    # The first failed poll names the reads subscribed by then (the second gate may subscribe after it);
    # the poll that reaches the catalog again names every read that waited through the outage.
    [unreachable] = [m for m in polls_said if "unreachable (" in m]
    [reachable] = [m for m in polls_said if "reachable again (" in m]
    assert any(read in unreachable for read in ("snapshot", "latest_runs")), unreachable
    assert all(read in reachable for read in ("snapshot", "latest_runs")), reachable
    out = capfd.readouterr().out  # what the triggers log goes through Airflow's own handler
    assert out.count("not admitted yet: catalog unreachable") == 1
    assert out.count("cannot look, waiting for the catalog") == out.count("can look again") == 1


async def test_a_waiting_sensor_keeps_waiting_when_the_catalog_stops_under_it(server, catalog):
    url, store = catalog
    store.record_success(RAW, DAY - dt.timedelta(days=1), meta=DAILY, run_id="yesterday")
    sensor = asyncio.create_task(first_event(sensor_trigger()))
    poller = await until_subscribed(url)
    await polls(poller, 2, sensor)  # waiting on a reachable catalog first
    await asyncio.to_thread(server.stop)
    await polls(poller, 4, sensor)
    assert not sensor.done()
    await asyncio.to_thread(server.start)
    await asyncio.to_thread(CatalogStore(get_engine(url)).record_success, RAW, DAY, run_id="today")
    assert (await asyncio.wait_for(sensor, timeout=120))["status"] == "admitted"


async def test_gates_survive_a_catalog_engine_that_cannot_be_created_when_the_poller_starts(tmp_path, use_catalog):
    blocker = tmp_path / "catalog"
    blocker.write_text("")  # a file where the catalog's directory belongs: creating the engine fails
    url = use_catalog(f"sqlite:///{blocker}/catalog.db")
    sensor = asyncio.create_task(first_event(sensor_trigger()))
    await polls(await until_subscribed(url), 3, sensor)
    assert not sensor.done()
    blocker.unlink()
    store = CatalogStore(await asyncio.to_thread(get_engine, url, migrate=True))
    await asyncio.to_thread(store.record_success, RAW, DAY, meta=DAILY, run_id="today")
    assert (await asyncio.wait_for(sensor, timeout=60))["status"] == "admitted"


async def test_the_deadline_fires_while_the_catalog_is_down(server, catalog):
    url, _store = catalog
    dispose_all()
    server.stop()
    deadline = (dt.datetime.now(UTC) + dt.timedelta(seconds=1)).isoformat()
    payload = await asyncio.wait_for(first_event(sensor_trigger(deadline=deadline)), timeout=30)
    assert payload["status"] == "timeout"
    assert payload["reasons"][0].startswith("catalog unreachable: ")


async def test_relaxing_the_gates_releases_waits_already_in_the_triggerer(server, catalog, monkeypatch):
    url, store = catalog
    store.record_success(RAW, DAY - dt.timedelta(days=1), meta=DAILY, run_id="yesterday")
    store.record_running(OTHER, DAY, meta=TaskMeta(cron="0 0 * * *", source="external"), run_id="o")
    sensor = asyncio.create_task(first_event(sensor_trigger()))
    gate = asyncio.create_task(first_event(gate_trigger(max_wait=3600.0)))
    await polls(await until_subscribed(url), 2, sensor, gate)  # "failed" or not: two polls judged WAIT
    assert not sensor.done() and not gate.done()
    monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", "warn")
    payloads = await asyncio.wait_for(asyncio.gather(sensor, gate), timeout=30)
    assert [p["status"] for p in payloads] == ["relaxed", "relaxed"]
    assert [p["mode"] for p in payloads] == ["warn", "warn"]


def test_the_poller_backs_off_while_the_catalog_is_down_up_to_a_minute_or_twelve_intervals():
    assert [CatalogPoller("sqlite://", 5.0)._delay(n) for n in range(6)] == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0]
    assert [CatalogPoller("sqlite://", 0.25)._delay(n) for n in range(6)] == [0.25, 0.5, 1.0, 2.0, 3.0, 3.0]
    assert CatalogPoller("sqlite://", 90.0)._delay(3) == 90.0
