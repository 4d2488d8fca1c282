"""A worker killed (SIGKILL) at each step boundary of a batch, then a drain restarted past the grace period:
no demand is lost, no model is recorded built that dbt did not build, a failed build never reads as a
success, and the history of every pass and batch is kept."""

from __future__ import annotations

import duckdb
import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.dbt.queue_store import QueueStore
from tests.helpers.crash import run_to_end, run_until_crash
from tests.helpers.dbt_queue import LOADERS, hour, land, make_worker, names, request

pytestmark = [pytest.mark.dbt, pytest.mark.postgres, pytest.mark.crash_points]
FACT = "model.field_ops.fact_project_labor"
DRAIN = """
import datetime as dt, json
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.runner import DbtRunner
from tests.helpers.dbt_queue import DBT_ENV, ManualClock, make_worker

# Later on the queue's clock: a worker killed before is silent past the grace period, at once.
with queue_clock.using(ManualClock(utcnow() + dt.timedelta(seconds={later}))):
    report = make_worker(QueueStore(get_engine({url!r})), DbtRunner({project!r}, env=DBT_ENV), owner={owner!r})
    print(json.dumps(report.drain().as_dict()))
"""


def drain_code(url: str, project, owner: str, later: float = 0) -> str:
    return DRAIN.format(url=url, project=str(project), owner=owner, later=later)


def fact_sql(project):
    return project / "models" / "marts" / "fact_project_labor.sql"


@pytest.fixture
def crashed(pg_url, dbt_project, runner, plans):
    """``crashed(point, built_before, broken)``: request A, a worker killed at ``point``, a restart."""
    queue = QueueStore(get_engine(pg_url, migrate=True))

    def crash_and_restart(point: str, *, built_before: bool = False, broken: bool = False) -> QueueStore:
        if built_before:  # every model built once, its sources known: unchanged models are reused
            for loader in LOADERS:
                land(CatalogStore(queue.engine), loader, 0)
            request(queue, plans["A"], 0)
            request(queue, plans["B"], 0)
            assert make_worker(queue, runner).drain().as_dict()["failed"] == []
        sql = fact_sql(dbt_project)
        new = "sum(t.no_such_column) as hours" if broken else "sum(t.hours) as hours, 2 as code_version"
        sql.write_text(sql.read_text().replace("sum(t.hours) as hours", new))
        request(queue, plans["A"], 1)
        # Bounds for a hung child only: a drain runs several dbt commands, minutes each on a loaded machine.
        run_until_crash(drain_code(pg_url, dbt_project, "killed"), point, timeout=1800, warm=True)
        run_to_end(drain_code(pg_url, dbt_project, "restarted", later=3600), timeout=1800, warm=True)
        return queue

    return crash_and_restart


def passes_of(queue: QueueStore, at: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in sorted(queue.history("field_ops", limit=1000), key=lambda r: r["id"]):
        if row["request_slot"] == hour(at):
            out.setdefault(row["unique_id"], []).append(row)
    return out


def check_recorded_builds_ran(queue: QueueStore) -> None:
    """Every pass recorded built and successful belongs to a batch that finished having run dbt."""
    batches = {b["id"]: b for b in queue.batches("field_ops")}
    for row in queue.history("field_ops", limit=1000):
        if row["decision"] == "built" and row["outcome"] == "success":
            batch = batches[row["batch_id"]]
            assert batch["status"] in ("success", "partial") and batch["invocations"] >= 1, (row, batch)


def code_version(project) -> list:
    with duckdb.connect(str(project / "field_ops.duckdb"), read_only=True) as con:
        return con.execute("select distinct code_version from main.fact_project_labor").fetchall()


POINTS = ["dbt_queue.after_claim", "dbt_queue.after_reuse", "dbt_queue.after_dbt", "dbt_queue.after_settle"]


@pytest.mark.parametrize("point", POINTS)
def test_a_worker_killed_at_a_step_boundary_loses_no_demand_and_records_only_real_builds(
    crashed, plans, dbt_project, point
):
    built_before = point == "dbt_queue.after_reuse"
    queue = crashed(point, built_before=built_before)
    assert queue.active_rows("field_ops") == []  # no demand lost
    wanted = sorted(m.unique_id for m in plans["A"].models)
    passes = passes_of(queue, 1)
    assert sorted(passes) == wanted
    assert all(p[-1]["status"] == "done" and p[-1]["outcome"] == "success" for p in passes.values())
    if built_before:  # the reused passes settled before the kill stay as they were
        reused = sorted(u for u, p in passes.items() if p[-1]["decision"] == "reused")
        assert names(reused) == ["dim_project", "stg_field_ops__work_orders"]
    check_recorded_builds_ran(queue)
    assert code_version(dbt_project) == [(2,)]  # what is recorded built is what the warehouse holds
    batches = {b["owner"]: b["status"] for b in queue.batches("field_ops")}
    killed_settled = point == "dbt_queue.after_settle"
    assert batches["killed"] == ("success" if killed_settled else "abandoned")  # its batch stays history
    assert ("restarted" in batches) is not killed_settled
    requested = len(plans["A"].models) + (len(plans["A"].models) + len(plans["B"].models) if built_before else 0)
    assert len(queue.events("field_ops")) == requested  # every request's record is kept


@pytest.mark.parametrize("point", ["dbt_queue.after_dbt", "dbt_queue.after_settle"])
def test_a_failed_build_killed_before_or_after_its_settle_never_reads_as_a_success(crashed, point):
    queue = crashed(point, broken=True)
    fact = passes_of(queue, 1)[FACT]
    assert [p["outcome"] for p in fact if p["outcome"] != "not_run"] == ["error"]  # dbt's verdict, once
    assert fact[-1]["status"] == "failed"
    check_recorded_builds_ran(queue)
    assert all(b["status"] != "success" for b in queue.batches("field_ops"))
