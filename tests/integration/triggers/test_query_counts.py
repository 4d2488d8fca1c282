"""What waiting gates cost the catalog per poll tick, counting every statement the catalog engine sends.

K waiting triggers on K distinct parents and intervals share one poll per tick, whatever their read kinds:
a tick sends exactly one change query, and at most one more statement per read kind (the changed or new
tasks' data), whatever K, on SQLite and PostgreSQL. The bounds can fail: a poll that read nothing would
break the lower one, a change query per read kind, a read per trigger or per parent the upper.
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
from airflow_leastaction.triggers.poll_group import PollGroup
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
    """Every statement of a tick: the change query, and each read kind's data."""
    counter.attribute(PollGroup, "_changes", monkeypatch)
    counter.attribute(CatalogPoller, "_details", monkeypatch, label=lambda poller: poller.read)


def assert_one_or_two_per_tick(counter: StatementCounter, ticks: dict[str, int]) -> None:
    assert counter.by_read[None] == 0, counter.statements  # nothing outside the pollers' reads
    [n] = set(ticks.values())  # the read kinds tick together
    assert n >= TICKS
    assert counter.by_read["_changes"] == n, (n, counter.by_read)  # one change query per tick, for all kinds
    for kind in ticks:  # none when no task the kind reads is in the catalog
        assert 0 <= counter.by_read[kind] <= n, (kind, n, counter.by_read)


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


async def test_waiting_gates_and_asset_watchers_share_one_statement_per_idle_tick(store, catalog_url, use_catalog):
    """Interval gates (snapshot read), run-condition gates (slot records, latest runs) and asset watchers
    (completions) of one triggerer: while nothing changes, each tick sends one statement for all of them."""
    from airflow_leastaction.triggers.catalog_asset import CatalogAssetTrigger

    use_catalog(catalog_url)
    k = 20
    parents = [TaskIdentity(f"shared_{i}", "other-team") for i in range(k)]
    for i, p in enumerate(parents):
        store.record_running(p, DAY + dt.timedelta(days=i), meta=DAILY, run_id=f"r{i}")
    triggers = [
        *(
            ParentIntervalTrigger(
                parents=[p.as_dict()], child_interval=(DAY + dt.timedelta(days=i)).isoformat(), poll_interval=POLL
            )
            for i, p in enumerate(parents)
        ),
        *(gate_trigger(i, p) for i, p in enumerate(parents)),
        *(
            CatalogAssetTrigger(identity=p.as_dict(), asset_name=f"a{i}", asset_uri=f"s3://a/{i}", poll_interval=POLL)
            for i, p in enumerate(parents)
        ),
    ]

    async def run(trigger):
        async for event in trigger.run():
            return event.payload

    tasks = [asyncio.create_task(run(t)) for t in triggers]
    kinds = ("snapshot", "slot_records", "latest_runs", "completions")
    await wait_for(lambda: all(poller(catalog_url, r if r != "snapshot" else None) is not None for r in kinds))
    pollers = [poller(catalog_url, r if r != "snapshot" else None) for r in kinds]
    await wait_for(lambda: all(p.subscribers == k and not p._new for p in pollers))  # every full read done
    group = pollers[0]._group
    assert all(p._group is group for p in pollers)
    with StatementCounter(get_engine(catalog_url)) as counter:
        start = group.ticks
        await wait_for(lambda: group.ticks >= start + TICKS + 1)
        ticked = group.ticks - start
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert not any(t.done() and not t.cancelled() for t in tasks)  # all were still waiting
    # Ticks that began inside the window each sent one statement; one more may have begun before it.
    assert ticked - 1 <= counter.total <= ticked + 1, counter.statements
    assert all("la_change_counter" in s for s in counter.statements)
