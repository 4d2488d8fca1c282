"""The queue worker with real dbt-duckdb builds, on real PostgreSQL and SQLite catalogs."""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import threading

import duckdb
import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.policy import TierPolicy
from airflow_leastaction.dbt.queue_store import QueueStore
from tests.helpers.dbt_queue import KEY, ManualClock, make_worker, names, running, seconds, wait_for

pytestmark = [pytest.mark.dbt, pytest.mark.no_airflow]


@pytest.fixture
def pg_queue(pg_url):
    return QueueStore(get_engine(pg_url, migrate=True))


@pytest.fixture
def sqlite_queue(sqlite_url):
    return QueueStore(get_engine(sqlite_url, migrate=True))


def enqueue(queue, plan):
    return queue.enqueue(KEY, plan.models, plan.selector)


def table_rows(project, table: str) -> int:
    with duckdb.connect(str(project / "field_ops.duckdb"), read_only=True) as con:
        return con.execute(f"select count(*) from main.{table}").fetchone()[0]


def done_rows(queue, unique_id: str) -> list[dict]:
    return [r for r in queue.history("field_ops", limit=1000) if r["unique_id"] == unique_id]


@pytest.mark.postgres
class TestOverlap:
    def test_the_ab_overlap_ends_in_one_build_of_the_shared_models_with_two_recorded_requests(
        self, pg_queue, runner, plans, dbt_project
    ):
        enqueue(pg_queue, plans["A"])
        enqueue(pg_queue, plans["B"])
        report = make_worker(pg_queue, runner).drain()
        assert report.owned and len(report.batches) == 1
        batch = report.batches[0]
        assert batch.invocations == ["build"]
        assert names(batch.built) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__time_entries",
            "stg_field_ops__work_orders",
        ]
        dim = "model.field_ops.dim_project"
        assert [e["outcome"] for e in pg_queue.events("field_ops") if e["unique_id"] == dim] == [
            "new_pending",
            "already_pending",
        ]
        assert [(r["status"], r["request_count"]) for r in done_rows(pg_queue, dim)] == [("done", 2)]
        assert pg_queue.active_rows("field_ops") == []
        assert table_rows(dbt_project, "fact_project_labor") > 0


class TestFollowUp:
    def test_a_request_that_arrives_during_a_build_yields_exactly_one_follow_up(self, sqlite_queue, runner, plans):
        enqueue(sqlite_queue, plans["A"])
        enqueue(sqlite_queue, plans["B"])
        reports = []
        thread = threading.Thread(target=lambda: reports.append(make_worker(sqlite_queue, runner).drain()))
        thread.start()
        wait_for(lambda: running(sqlite_queue), what="the first batch to start")
        during = [enqueue(sqlite_queue, plans["A"]).by_outcome() for _ in range(2)]
        thread.join()
        assert all(names(d["already_running"]) == names(m.unique_id for m in plans["A"].models) for d in during)
        batches = reports[0].batches
        assert len(batches) == 2  # the build, and exactly one follow-up pass
        assert names(batches[1].outcomes) == names(m.unique_id for m in plans["A"].models)
        built = [u for b in batches for u in b.built]
        assert (
            built.count("model.field_ops.dim_project"),
            built.count("model.field_ops.stg_field_ops__time_entries"),
        ) == (2, 1)
        # Each pass is history of its own: the build, then the follow-up that held the requests made during it.
        passes = done_rows(sqlite_queue, "model.field_ops.dim_project")
        assert [(r["status"], r["request_count"]) for r in passes] == [("done", 2), ("done", 2)]
        assert sqlite_queue.active_rows("field_ops") == []

    def test_with_the_default_tiers_a_follow_up_owed_waits_out_the_tier_and_is_reported(
        self, sqlite_queue, runner, plans
    ):
        enqueue(sqlite_queue, plans["A"])
        reports = []
        drain = make_worker(sqlite_queue, runner, policy=TierPolicy())
        thread = threading.Thread(target=lambda: reports.append(drain.drain()))
        with queue_clock.using(ManualClock(utcnow())):  # no tier's hold runs out during a slow build
            thread.start()
            wait_for(lambda: running(sqlite_queue), what="the first batch to start")
            enqueue(sqlite_queue, plans["A"])  # new data lands while the models are being built
            thread.join()
        (report,) = reports
        fast = names(m.unique_id for m in plans["A"].models if m.tier == "fast")
        held = names(m.unique_id for m in plans["A"].models if m.tier != "fast")
        assert fast and held, "the example project is expected to have fast and slower tiers"
        # The fast tier has no minimum interval: its follow-up pass runs in the same drain.
        assert len(report.batches) == 2 and names(report.batches[1].outcomes) == fast
        # The others wait their tier's minimum interval from the build they just had (standard 5 minutes,
        # historical 1 hour); the drain says until when.
        owed = sqlite_queue.active_rows("field_ops")
        assert names(r["unique_id"] for r in owed) == held
        assert {r["status"] for r in owed} == {"pending"}
        tiers = TierPolicy()
        built = {r["unique_id"]: r["finished_at"] for r in sqlite_queue.history("field_ops")}
        eligible = min(built[r["unique_id"]] + tiers.tier(r["tier"]).min_interval for r in owed)
        assert report.next_eligible_at == eligible.isoformat()


def build_naively(runner, plan, results: list) -> None:
    with runner.session() as session:
        results.append(session.build([m.fqn for m in plan.models]))


class TestCollisions:
    def test_two_naive_concurrent_dbt_builds_collide_while_the_queue_path_never_does(
        self, sqlite_queue, runner, plans, dbt_project
    ):
        collided = False
        for _ in range(3):  # two processes racing for one file: the loser fails at its first write
            results: list = []
            threads = [threading.Thread(target=build_naively, args=(runner, plans[k], results)) for k in "AB"]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if any("Could not set lock" in r.output for r in results):
                collided = True
                break
        assert collided, "two naive dbt builds on one DuckDB file never collided"

        def request_and_drain(plan, owner):
            enqueue(sqlite_queue, plan)
            make_worker(sqlite_queue, runner, owner=owner).drain()

        threads = [threading.Thread(target=request_and_drain, args=(plans[k], f"worker-{k}")) for k in "AB"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        batches = sqlite_queue.batches("field_ops")
        assert batches and all(b["status"] == "success" and b["invocations"] == 1 for b in batches)
        assert not any("lock" in (b["message"] or "") for b in batches)
        spans = sorted((b["claimed_at"], b["finished_at"]) for b in batches)
        assert all(prev[1] <= nxt[0] for prev, nxt in itertools.pairwise(spans))  # never two builds at once
        assert sqlite_queue.active_rows("field_ops") == []

    def test_a_write_lock_conflict_reruns_the_selection(self, sqlite_queue, runner, plans, dbt_project):
        holder = duckdb.connect(str(dbt_project / "field_ops.duckdb"))  # another writer holds the file

        class ReleaseOnConflict(logging.Handler):
            def emit(self, record):
                if "write conflict" in record.getMessage():
                    holder.close()

        handler = ReleaseOnConflict()
        logging.getLogger("airflow_leastaction.dbt.worker").addHandler(handler)
        try:
            enqueue(sqlite_queue, plans["A"])
            report = make_worker(sqlite_queue, runner, conflict_backoff=0.5).drain()
        finally:
            logging.getLogger("airflow_leastaction.dbt.worker").removeHandler(handler)
            holder.close()
        batch = report.batches[0]
        assert batch.invocations == ["build", "rerun (conflict)"]
        assert batch.status == "success" and batch.failed == []

    def test_a_worker_whose_lease_is_taken_mid_batch_runs_no_further_dbt_command_and_ends_it_not_run(
        self, sqlite_queue, runner, plans, dbt_project
    ):
        holder = duckdb.connect(str(dbt_project / "field_ops.duckdb"))  # the first build hits a conflict

        class TakeTheLease(logging.Handler):
            def emit(self, record):
                if "write conflict" in record.getMessage():
                    later = utcnow() + dt.timedelta(hours=1)  # the worker looks silent for an hour
                    assert sqlite_queue.acquire_lease("field_ops", "new-owner", seconds(30), now=later)

        handler = TakeTheLease()
        logging.getLogger("airflow_leastaction.dbt.worker").addHandler(handler)
        try:
            enqueue(sqlite_queue, plans["A"])
            enqueue(sqlite_queue, plans["B"])
            report = make_worker(sqlite_queue, runner, conflict_backoff=0.1, max_batch_size=3).drain()
        finally:
            logging.getLogger("airflow_leastaction.dbt.worker").removeHandler(handler)
            holder.close()
        assert report.lease_lost and report.next_eligible_at is None
        assert len(report.batches) == 1  # it claimed nothing more
        batch = report.batches[0]
        assert batch.invocations == ["build"]  # no rerun after the lease was lost
        assert batch.status == "abandoned" and set(batch.outcomes.values()) == {"not_run"}
        assert set(batch.settled.values()) == {"pending"}
        assert sqlite_queue.batches("field_ops")[0]["status"] == "abandoned"


class TestFailures:
    def test_a_failing_model_is_retried_once_then_recorded_with_its_error(
        self, sqlite_queue, runner, plans, dbt_project
    ):
        sql = dbt_project / "models" / "marts" / "fact_project_labor.sql"
        sql.write_text(sql.read_text().replace("sum(t.hours) as hours", "sum(t.no_such_column) as hours"))
        enqueue(sqlite_queue, plans["A"])
        batch = make_worker(sqlite_queue, runner).drain().batches[0]
        assert batch.invocations == ["build", "retry"]  # not a conflict: dbt retry of the failed nodes
        assert batch.status == "partial"
        assert batch.outcomes["model.field_ops.fact_project_labor"] == "error"
        assert batch.outcomes["model.field_ops.agg_labor_history"] == "upstream_failed"
        assert names(batch.built) == ["dim_project", "stg_field_ops__work_orders"]
        failed = {r["unique_id"]: r for r in sqlite_queue.history("field_ops") if r["status"] == "failed"}
        assert names(failed) == ["agg_labor_history", "fact_project_labor"]
        assert "no_such_column" in failed["model.field_ops.fact_project_labor"]["message"]
        assert sqlite_queue.active_rows("field_ops") == []

    def test_a_model_whose_own_test_failed_counts_as_test_failed_and_is_not_retried(
        self, sqlite_queue, runner, plans, dbt_project
    ):
        projects = dbt_project / "data" / "projects.csv"
        projects.write_text(projects.read_text() + "1,North Substation (copy),north\n")  # breaks `unique`
        enqueue(sqlite_queue, plans["A"])
        batch = make_worker(sqlite_queue, runner).drain().batches[0]
        assert batch.invocations == ["build"]
        assert batch.outcomes["model.field_ops.dim_project"] == "test_failed"
        assert batch.outcomes["model.field_ops.fact_project_labor"] == "upstream_failed"
        assert batch.settled["model.field_ops.dim_project"] == "failed"
        assert batch.outcomes["model.field_ops.stg_field_ops__work_orders"] == "success"

    def test_a_model_that_fails_while_requested_again_fails_the_drain_that_ran_it_and_is_built_once_more(
        self, sqlite_queue, runner, plans, dbt_project
    ):
        sql = dbt_project / "models" / "marts" / "fact_project_labor.sql"
        good = sql.read_text()
        sql.write_text(good.replace("sum(t.hours) as hours", "sum(t.no_such_column) as hours"))
        enqueue(sqlite_queue, plans["A"])
        reports = []
        drain = make_worker(sqlite_queue, runner)
        thread = threading.Thread(target=lambda: reports.append(drain.drain(max_batches=1)))
        thread.start()
        wait_for(lambda: running(sqlite_queue), what="the batch to start")
        enqueue(sqlite_queue, plans["A"])  # new data lands while the broken model is being built
        thread.join()
        (report,) = reports
        fact, agg = "model.field_ops.fact_project_labor", "model.field_ops.agg_labor_history"
        assert report.as_dict()["failed"] == sorted([agg, fact])  # the drain that ran it counts the failure
        history = {r["unique_id"]: r for r in sqlite_queue.history("field_ops") if r["status"] == "failed"}
        assert names(history) == ["agg_labor_history", "fact_project_labor"]
        assert history[fact]["outcome"] == "error" and "no_such_column" in history[fact]["message"]
        assert "no_such_column" in sqlite_queue.batches("field_ops")[0]["message"]
        owed = sqlite_queue.active_rows("field_ops")
        assert names(r["unique_id"] for r in owed) == names(m.unique_id for m in plans["A"].models)
        assert {r["status"] for r in owed} == {"pending"}

        sql.write_text(good)  # the fix lands; the follow-up owed runs once
        follow_up = make_worker(sqlite_queue, runner).drain()
        assert len(follow_up.batches) == 1
        assert names(follow_up.batches[0].built) == names(m.unique_id for m in plans["A"].models)
        assert sqlite_queue.active_rows("field_ops") == []
        assert [r["outcome"] for r in sqlite_queue.history("field_ops") if r["unique_id"] == fact] == [
            "success",
            "error",
        ]
