"""The expected-times pass timed on 10,000 waiting tasks: pure ``expect()`` on the Nodes of a generated
history (``tests/helpers/expected_times.py``), and ``expectations_for`` on a real SQLite catalog holding that
history (written by ``tests/helpers/expectation_catalog.py``)."""

from __future__ import annotations

import datetime as dt
import gc
import time

from tests.helpers.expectation_catalog import PROJECT
from tests.helpers.expectation_replay import Morning
from tests.helpers.expected_times import DAY, HOUR, History


def waiting_instant(history: History, day: int) -> dt.datetime:
    """An hour before the first interval of slot day ``day`` ends: every slot of that day is waiting."""
    return min(history.daily_slot(t, day) for t in history.daily_tasks()) + DAY - HOUR


def time_pure(morning: Morning, now: dt.datetime, repeats: int) -> dict:
    """``expect()`` on the morning's nodes, their histories' quantiles already worked out (as the catalog's
    history reader keeps them, once per catalog change); and, apart, working those quantiles out."""
    from airflow_leastaction.expectations.estimate import expect, usual_of

    nodes = morning.nodes_at(now)
    found = expect(nodes, now)  # warm-up, and the figures the catalog's answer is compared with
    histories = list({id(n.offsets): (n.offsets, n.durations) for n in nodes.values()}.values())
    settle_heap()
    samples, digests = [], []
    for _ in range(repeats):
        began = time.perf_counter()
        expect(nodes, now)
        samples.append(time.perf_counter() - began)
        began = time.perf_counter()
        for offsets, durations in histories:
            usual_of(offsets, durations)
        digests.append(time.perf_counter() - began)
    statuses: dict[str, int] = {}
    for e in found.values():
        statuses[e.status] = statuses.get(e.status, 0) + 1
    return {"nodes": len(nodes), "statuses": statuses, "seconds": samples, "histories": len(histories),
            "quantiles_s": digests}, found  # fmt: skip


def settle_heap() -> None:
    """Leave the benchmark's own objects (the generated history, the Nodes) out of the garbage collector's
    passes, so that the pass timed pays for collecting what it allocates, not for walking the harness."""
    gc.collect()
    gc.freeze()


def time_reads(url: str, history: History, day: int, now: dt.datetime, repeats: int, pure: dict) -> dict:
    """``expectations_for`` every daily task's slot of ``day``: cold (the history cache emptied first) and
    cached (asked again, nothing written in between); and how many answers equal the pure pass's."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.expectations.reads import HISTORIES, expectations_for
    from airflow_leastaction.identity import TaskIdentity

    store = CatalogStore(get_engine(url))
    targets = [(TaskIdentity(t, PROJECT), history.daily_slot(t, day)) for t in history.daily_tasks()]
    settle_heap()
    cold, cached = [], []
    for _ in range(repeats):
        HISTORIES.clear()
        began = time.perf_counter()
        found = expectations_for(store, targets, now)
        cold.append(time.perf_counter() - began)
        began = time.perf_counter()
        expectations_for(store, targets, now)
        cached.append(time.perf_counter() - began)
    same = 0
    for identity, slot in targets:
        mine = pure[f"{identity.name}@{slot.isoformat()}"]
        theirs = found[(str(identity), slot)]
        same += (mine.status, mine.median, mine.p90) == (theirs.status, theirs.median, theirs.p90)
    return {"targets": len(targets), "cold_s": cold, "cached_s": cached, "equal_to_pure": same}
