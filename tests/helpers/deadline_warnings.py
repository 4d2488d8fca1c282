"""What the early-warning tests share: a feed and the report that waits on it, with a history of runs
written through the store at chosen instants, and deadline callbacks that say they were called.

The callbacks append one JSON line per call to ``$RC_MARKERS/deadline_calls`` (the marker folder of the
run-condition tests), whichever process calls them: a test reads back who was told what, and how often.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path

from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
DAY = dt.timedelta(days=1)
#: Tasks without a schedule (as a DAG with ``schedule=None``, whose tests pick each run's slot).
ADHOC = TaskMeta()
#: The feed's schedule: every minute, so that a child's slot on a whole minute is a slot of the feed
#: too (its parent slot, by the interval rule), whatever the time of day the test runs at.
FEED_META = TaskMeta(cron="* * * * *")


def whole_minute(instant: dt.datetime) -> dt.datetime:
    return instant.replace(second=0, microsecond=0)


#: Six runs of history: enough for an estimate (five), a p90 that is the slowest of them.
DAYS = 6


def calls_file() -> Path:
    return Path(os.environ.get("RC_MARKERS", "/tmp/rc-markers")) / "deadline_calls"


def calls() -> list[dict]:
    path = calls_file()
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _write(kind: str, context: dict | None, kwargs: dict) -> None:
    path = calls_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"kind": kind, "pid": os.getpid(), "kwargs": kwargs, "warning": (context or {}).get("deadline_warning")}
    with path.open("a") as out:
        out.write(json.dumps(line, default=str) + "\n")


async def tell(context=None, **kwargs):
    """An ``AsyncCallback``: awaited in the process that warns."""
    _write("async", context, kwargs)


def tell_now(context=None, **kwargs):
    """A ``SyncCallback``: called in a thread of the process that warns."""
    _write("sync", context, kwargs)


async def explode(context=None, **kwargs):
    """A callback whose pager is down."""
    _write("async", context, kwargs)
    raise ConnectionError("pager unreachable")


def run(store, identity: TaskIdentity, slot: dt.datetime, started: dt.datetime, finished: dt.datetime, meta=ADHOC):
    run_id = f"scheduled__{slot.isoformat()}"
    store.record_running(identity, slot, meta=meta, run_id=run_id, at=started)
    store.record_success(identity, slot, meta=meta, run_id=run_id, at=finished)


def history(
    store,
    feed: TaskIdentity,
    report: TaskIdentity,
    today: dt.datetime,
    *,
    feed_done: dt.timedelta,
    feed_takes: dt.timedelta,
    report_takes: dt.timedelta,
    report_meta: TaskMeta = ADHOC,
) -> None:
    """:data:`DAYS` days before ``today`` (a whole minute): the feed (:data:`FEED_META`) done ``feed_done``
    after its slot (it took ``feed_takes``), the report started as it landed and took ``report_takes``."""
    for d in range(DAYS, 0, -1):
        slot = today - d * DAY
        done = slot + feed_done
        run(store, feed, slot, done - feed_takes, done, meta=FEED_META)
        run(store, report, slot, done, done + report_takes, meta=report_meta)


#: Set by a coroutine of the event loop while :func:`hold_the_thread` waits: a callback that blocked the
#: loop would never see it.
CALLBACK_STARTED = threading.Event()
LOOP_RAN = threading.Event()


def hold_the_thread(context=None, **kwargs):
    """A ``SyncCallback`` that waits, in its thread, for the event loop to run something meanwhile."""
    CALLBACK_STARTED.set()
    ran = LOOP_RAN.wait(timeout=120)  # only ever reached by a loop that blocked: then the test fails
    _write("sync", context, {**kwargs, "loop_ran_meanwhile": ran})
