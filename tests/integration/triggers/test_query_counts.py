"""What waiting gates cost the catalog per poll tick, counting every statement the catalog engine sends.

K waiting triggers on K distinct parents and intervals share one poll per tick and read kind; a tick
sends at least one statement (the change query) and at most two (and the changed or new tasks' data),
whatever K, on SQLite and PostgreSQL. Both bounds can fail: a poll that read nothing would break the
lower one, a read per trigger or per parent the upper.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import Dependency
from airflow_leastaction.run_conditions.wait_rule import WaitClock
from airflow_leastaction.triggers.parent_interval import ParentIntervalTrigger
from airflow_leastaction.triggers.poller import CatalogPoller
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from tests.helpers.statement_count import StatementCounter

UTC = dt.UTC
DAY = dt.datetime(2026, 1, 1, tzinfo=UTC)
DAILY = TaskMeta(cron="0 0 * * *")
POLL = 0.05
TICKS = 3  # ticks measured with every trigger subscribed


async def wait_for(condition) -> None:
    """Wait until ``condition()`` holds (a condition, not a time, decides)."""
    while not condition():
        await asyncio.sleep(0.005)


def poller(url: str, read: str | None = None) -> CatalogPoller | None:
    key = (id(asyncio.get_running_loop()), url, POLL) + ((read,) if read else ())
    return CatalogPoller._shared.get(key)


async def run_until_ticks(triggers, url: str, reads: dict[str, str | None], k: int) -> dict[str, int]:
    """Run ``triggers`` until each poller in ``reads`` (read kind -> key suffix) ticked ``TICKS`` times with
    all ``k`` subscribed; then stop them and wait for the pollers to end. Ticks per read kind."""

    async def run(trigger):
        async for event in trigger.run():
            return event.payload

    tasks = [asyncio.create_task(run(t)) for t in triggers]
    await wait_for(lambda: all(poller(url, r) is not None and poller(url, r).subscribers == k for r in reads.values()))
    pollers = {kind: poller(url, r) for kind, r in reads.items()}
    start = {kind: p.ticks for kind, p in pollers.items()}
    await wait_for(lambda: all(p.ticks >= start[kind] + TICKS for kind, p in pollers.items()))
    assert not any(t.done() for t in tasks), [t.result() for t in tasks if t.done()][:3]  # all still waiting
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(p._task for p in pollers.values()))  # the pollers end once nobody waits
    return {kind: p.ticks for kind, p in pollers.items()}


def attribute_polls(counter: StatementCounter, monkeypatch) -> None:
    """Every statement of a poller's tick, attributed to its read kind."""
    for method in ("_changes", "_details"):
        counter.attribute(CatalogPoller, method, monkeypatch, label=lambda poller: poller.read)


def assert_one_or_two_per_tick(counter: StatementCounter, ticks: dict[str, int]) -> None:
    assert counter.by_read[None] == 0, counter.statements  # nothing outside the pollers' reads
    for kind, n in ticks.items():
        assert n >= TICKS
        assert n <= counter.by_read[kind] <= 2 * n, (kind, n, counter.by_read)


@pytest.mark.parametrize("k", [1, 40, 500])
async def test_k_waiting_interval_gates_send_one_or_two_statements_per_tick(
    store, catalog_url, use_catalog, monkeypatch, k
):
    use_catalog(catalog_url)
    parents = [TaskIdentity(f"parent_{i}", "other-team") for i in range(k)]
    for p in parents:
        store.register_task(p, DAILY)
    triggers = [
        ParentIntervalTrigger(
            parents=[p.as_dict()], child_interval=(DAY + dt.timedelta(days=i)).isoformat(), poll_interval=POLL
        )
        for i, p in enumerate(parents)
    ]
    counter = StatementCounter(get_engine(catalog_url))
    attribute_polls(counter, monkeypatch)
    with counter:
        ticks = await run_until_ticks(triggers, catalog_url, {"snapshot": None}, k)
    assert_one_or_two_per_tick(counter, ticks)


def gate_trigger(i: int, upstream: TaskIdentity) -> RunConditionTrigger:
    prep = TaskIdentity(f"rc_count.prep_{i}", "rc_count")
    return RunConditionTrigger(
        dag_id="rc_count",
        run_id=f"r{i}",
        task_id="child",
        dependencies=[Dependency(upstream).as_dict()],
        condition="ALL",
        count=None,
        slot_requests={"prep": prep.as_dict()},
        slot=(DAY + dt.timedelta(days=i)).isoformat(),
        upstream={"child": []},
        waiting=["child__gate"],
        consumed={},
        clock=WaitClock(dt.datetime.now(UTC)).as_dict(),
        max_wait=3600.0,
        max_looks=1000,
        poll_interval=POLL,
    )


@pytest.mark.parametrize("k", [1, 40, 500])
async def test_k_waiting_run_condition_gates_send_one_or_two_statements_per_tick_and_read(
    store, catalog_url, use_catalog, monkeypatch, k
):
    use_catalog(catalog_url)
    upstreams = [TaskIdentity(f"rc_count_up_{i}", "other-team") for i in range(k)]
    for i, up in enumerate(upstreams):  # each upstream running: its gate waits for it
        store.record_running(up, DAY + dt.timedelta(days=i), meta=DAILY, run_id=f"u{i}")
    counter = StatementCounter(get_engine(catalog_url))
    attribute_polls(counter, monkeypatch)
    with counter:
        ticks = await run_until_ticks(
            [gate_trigger(i, up) for i, up in enumerate(upstreams)],
            catalog_url,
            {"slot_records": "slot_records", "latest_runs": "latest_runs"},
            k,
        )
    assert_one_or_two_per_tick(counter, ticks)
