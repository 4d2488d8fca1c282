"""A worker killed with SIGKILL mid-build: its rows are requeued after the grace period, nothing is lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dbt_queue_helpers import names, seconds
from test_dbt_worker import KEY, make_worker, running, wait_for

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt.queue_store import QueueStore

pytestmark = [pytest.mark.dbt, pytest.mark.postgres, pytest.mark.slow]
GRACE = 8.0
DOOMED_WORKER = """
import datetime as dt, sys
sys.path.insert(0, sys.argv[4])
from dbt_queue_helpers import DBT_ENV, NO_WAIT
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.dbt.worker import QueueWorker
url, project, grace = sys.argv[1], sys.argv[2], float(sys.argv[3])
QueueWorker(QueueStore(get_engine(url)), DbtRunner(project, env=DBT_ENV), "field_ops", owner="doomed",
            policy=NO_WAIT, heartbeat_interval=0.3, grace=dt.timedelta(seconds=grace)).drain()
"""


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
        here = str(Path(__file__).parent)
        doomed = subprocess.Popen(
            [sys.executable, "-c", DOOMED_WORKER, pg_url, str(dbt_project), str(GRACE), here]
        )
        try:
            wait_for(lambda: running(queue), what="the doomed worker's batch")
            dbt = wait_for(lambda: children(doomed.pid), what="the doomed worker's dbt process")
            time.sleep(1.0)  # let dbt get going
            os.kill(doomed.pid, signal.SIGKILL)
            doomed.wait()
        finally:
            if doomed.poll() is None:
                doomed.kill()
        killed_at = time.monotonic()
        # dbt dies with its worker: it must not keep holding the warehouse's write lock.
        wait_for(lambda: not any(alive(p) for p in dbt), timeout=10, what="dbt to die with its worker")
        assert names(running(queue)) == names(m.unique_id for m in plans["A"].models)

        rescuer = make_worker(queue, runner, owner="rescuer", grace=seconds(GRACE))
        early = rescuer.drain()
        assert not early.owned and early.batches == []  # within grace: the dead worker still owns it

        time.sleep(max(0.0, GRACE + 0.5 - (time.monotonic() - killed_at)))
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
