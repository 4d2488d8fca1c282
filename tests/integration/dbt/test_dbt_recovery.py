"""Real worker processes: one killed with SIGKILL mid-build (its rows are requeued after the grace period,
nothing is lost), one paused with SIGSTOP past the grace period (the new owner builds; the resumed
worker builds nothing more), and one stopped inside a queue transaction (the server ends it, the takeover
does not wait on its lock for ever)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.queue_transactions import FROZEN_AFTER_MS
from airflow_leastaction.dbt.schema import dbt_worker_lease
from tests.helpers.dbt_queue import KEY, ManualClock, make_worker, names, running, seconds, wait_for
from tests.helpers.paths import ROOT

pytestmark = [pytest.mark.dbt, pytest.mark.postgres]
GRACE = 8.0
DOOMED_WORKER = """
import datetime as dt, sys
sys.path.insert(0, sys.argv[4])
from tests.helpers.dbt_queue import DBT_ENV, NO_WAIT
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.dbt.worker import QueueWorker
url, project, grace = sys.argv[1], sys.argv[2], float(sys.argv[3])
QueueWorker(QueueStore(get_engine(url)), DbtRunner(project, env=DBT_ENV), "field_ops", owner="doomed",
            policy=NO_WAIT, heartbeat_interval=0.3, grace=dt.timedelta(seconds=grace)).drain()
"""

PAUSED_WORKER = """
import datetime as dt, json, pathlib, sys, time
from contextlib import contextmanager
sys.path.insert(0, sys.argv[4])
from tests.helpers.dbt_queue import DBT_ENV, NO_WAIT
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.dbt.worker import QueueWorker
url, project, grace, markers = sys.argv[1], sys.argv[2], float(sys.argv[3]), pathlib.Path(sys.argv[5])

class HoldingRunner(DbtRunner):
    # Holds the claimed batch just before dbt starts until the test says go: the test pauses the process
    # there, the worst moment (the batch is claimed, dbt is about to write). The drain's first session
    # reads the manifest, before it claims anything.
    sessions = 0

    @contextmanager
    def session(self, target=None):
        HoldingRunner.sessions += 1
        if HoldingRunner.sessions > 1:
            (markers / "claimed").touch()
            while not (markers / "go").exists():
                time.sleep(0.02)
        with super().session(target) as session:
            yield session

worker = QueueWorker(QueueStore(get_engine(url)), HoldingRunner(project, env=DBT_ENV), "field_ops",
                     owner="paused", policy=NO_WAIT, heartbeat_interval=0.3, grace=dt.timedelta(seconds=grace))
print(json.dumps(worker.drain().as_dict()))
"""

FROZEN_WRITER = """
import datetime as dt, pathlib, sys
sys.path.insert(0, sys.argv[3])
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.queue_recovery import hold_lease
from airflow_leastaction.dbt.queue_store import QueueStore
url, grace, markers = sys.argv[1], float(sys.argv[2]), pathlib.Path(sys.argv[4])
queue = QueueStore(get_engine(url))
silent_since = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=2 * grace)
assert queue.acquire_lease("field_ops", "frozen", dt.timedelta(seconds=grace), now=silent_since)
try:
    with queue.transactions.write() as conn:
        hold_lease(conn, "field_ops", "frozen", silent_since)  # the lease row stays locked until the end
        (markers / "holding").touch()
        sys.stdin.readline()  # the test stops the process here, inside the transaction
        hold_lease(conn, "field_ops", "frozen", silent_since)
    print("committed")
except Exception as exc:
    print("ended:", str(exc).splitlines()[0])
"""


@contextmanager
def stopped_at(marker: Path, script: str, *args: str, **popen) -> Iterator[subprocess.Popen]:
    """Run ``script`` and stop it with SIGSTOP once it has written ``marker``; yields the stopped process,
    which is resumed and killed on the way out if it still runs."""
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True, **popen)
    try:
        wait_for(lambda: marker.exists(), what=f"the process to write {marker.name}")
        os.kill(proc.pid, signal.SIGSTOP)
        wait_for(lambda: stopped(proc.pid), what="the process to stop")
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()


def last_heartbeat(queue: QueueStore):
    with queue.engine.connect() as conn:
        lease = dbt_worker_lease.c
        return conn.execute(select(lease.heartbeat_at).where(lease.environment == "field_ops")).scalar_one()


def stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class TestRecovery:
    def test_a_worker_killed_mid_build_is_requeued_after_grace_and_nothing_is_lost(
        self, pg_url, dbt_project, runner, plans
    ):
        queue = QueueStore(get_engine(pg_url, migrate=True))
        queue.enqueue(KEY, plans["A"].models, plans["A"].selector)
        here = str(ROOT)
        doomed = subprocess.Popen([sys.executable, "-c", DOOMED_WORKER, pg_url, str(dbt_project), str(GRACE), here])
        try:
            wait_for(lambda: running(queue), what="the doomed worker's batch")
            dbt = wait_for(lambda: children(doomed.pid), what="the doomed worker's dbt process")
            time.sleep(1.0)  # let dbt get going
            os.kill(doomed.pid, signal.SIGKILL)
            doomed.wait()
        finally:
            if doomed.poll() is None:
                doomed.kill()
        # dbt dies with its worker: it must not keep holding the warehouse's write lock.
        wait_for(lambda: not any(alive(p) for p in dbt), timeout=10, what="dbt to die with its worker")
        assert names(running(queue)) == names(m.unique_id for m in plans["A"].models)

        # The rescuer's clock starts at the dead worker's last heartbeat, whenever the test gets there.
        clock = ManualClock(last_heartbeat(queue))
        rescuer = make_worker(queue, runner, owner="rescuer", grace=seconds(GRACE))
        with queue_clock.using(clock):
            early = rescuer.drain()
            assert not early.owned and early.batches == []  # within grace: the dead worker still owns it
            asyncio.run(clock.sleep(GRACE + 0.5))
            report = rescuer.drain()
        assert report.owned
        assert names(report.requeued) == names(m.unique_id for m in plans["A"].models)
        assert names(report.batches[0].built) == names(m.unique_id for m in plans["A"].models)
        abandoned, rebuilt = sorted(queue.batches("field_ops"), key=lambda b: b["claimed_at"])
        assert (abandoned["owner"], abandoned["status"]) == ("doomed", "abandoned")
        assert (rebuilt["owner"], rebuilt["status"]) == ("rescuer", "success")
        assert rebuilt["claimed_at"] >= abandoned["heartbeat_at"] + seconds(GRACE)  # never two at once
        assert len(queue.events("field_ops")) == len(plans["A"].models)
        assert queue.active_rows("field_ops") == []


class TestLeaseSafety:
    def test_a_worker_paused_past_the_grace_builds_nothing_more_after_a_takeover(
        self, pg_url, dbt_project, runner, plans, tmp_path
    ):
        queue = QueueStore(get_engine(pg_url, migrate=True))
        queue.enqueue(KEY, plans["A"].models, plans["A"].selector)
        wanted = names(m.unique_id for m in plans["A"].models)
        args = (pg_url, str(dbt_project), str(GRACE), str(ROOT), str(tmp_path))
        with stopped_at(tmp_path / "claimed", PAUSED_WORKER, *args) as paused:
            (tmp_path / "go").touch()  # it sees this only once it is resumed
            rescuer = make_worker(queue, runner, owner="rescuer", grace=seconds(GRACE))
            reports = []
            wait_for(
                lambda: reports.append(rescuer.drain()) or reports[-1].owned,
                what="the takeover after grace",
            )
            os.kill(paused.pid, signal.SIGCONT)
            out, _ = paused.communicate(timeout=120)
        took_over = reports[-1].as_dict()
        assert names(took_over["requeued"]) == wanted and names(took_over["built"]) == wanted
        resumed = json.loads(out.strip().splitlines()[-1])
        assert resumed["lease_lost"] and resumed["built"] == []
        assert [b["invocations"] for b in resumed["batches"]] == [[]]  # no dbt command after resuming
        assert [b["settled"] for b in resumed["batches"]] == [{}]  # its rows were no longer its to settle
        abandoned, rebuilt = sorted(queue.batches("field_ops"), key=lambda b: b["claimed_at"])
        assert (abandoned["owner"], abandoned["status"], abandoned["invocations"]) == (
            "paused",
            "abandoned",
            0,
        )
        assert (rebuilt["owner"], rebuilt["status"]) == ("rescuer", "success")
        history = queue.history("field_ops", limit=100)
        assert sorted(names(r["unique_id"] for r in history)) == wanted  # each model built once
        assert queue.active_rows("field_ops") == []

    def test_a_worker_stopped_inside_a_queue_transaction_does_not_hold_the_takeover(self, pg_url, tmp_path):
        # The lease's owner has been silent past the grace period, but its process was stopped in the middle
        # of a heartbeat: its transaction holds the lease row's lock. The server ends that transaction once
        # it has waited on its client for FROZEN_AFTER_MS, so the takeover goes on instead of waiting.
        engine = get_engine(pg_url, migrate=True)
        queue = QueueStore(engine)
        args = (pg_url, str(GRACE), str(ROOT), str(tmp_path))
        with stopped_at(tmp_path / "holding", FROZEN_WRITER, *args, stdin=subprocess.PIPE) as frozen:
            taken: list[bool] = []
            started = time.monotonic()
            takeover = threading.Thread(
                target=lambda: taken.append(queue.acquire_lease("field_ops", "rescuer", seconds(GRACE))),
                daemon=True,
            )
            takeover.start()
            # A bound far past the server's FROZEN_AFTER_MS: only a takeover that waits for ever fails.
            takeover.join(timeout=120 + FROZEN_AFTER_MS / 1000)
            waited = time.monotonic() - started
            assert taken == [True], f"the takeover still waits on the stopped writer's lock after {waited:.0f}s"
            os.kill(frozen.pid, signal.SIGCONT)
            out, _ = frozen.communicate("\n", timeout=60)
        assert out.startswith("ended:"), out  # the server closed its session: its heartbeat never lands
        with engine.connect() as conn:
            owner = conn.execute(select(dbt_worker_lease.c.owner).where(dbt_worker_lease.c.environment == "field_ops"))
            assert owner.scalar_one() == "rescuer"
