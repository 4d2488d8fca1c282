"""The queue store on real SQLite and PostgreSQL: merge semantics, claims, leases, recovery, concurrency."""

from __future__ import annotations

import datetime as dt
import random
import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select

from airflow_leastaction.catalog.schema import metadata
from airflow_leastaction.dbt.planner import PlannedModel
from airflow_leastaction.dbt.policy import BatchKey, ModelOutcome
from airflow_leastaction.dbt.request_key import request_key
from airflow_leastaction.dbt.schema import dbt_queue, dbt_request_event
from airflow_leastaction.exceptions import DbtLeaseLostError
from tests.helpers.dbt_queue import NO_WAIT, names, seconds

pytestmark = pytest.mark.no_airflow

KEY = BatchKey("prod")
T0 = dt.datetime(2026, 11, 29, 8, 0, tzinfo=dt.UTC)


def model(name: str, tier: str = "standard") -> PlannedModel:
    return PlannedModel(f"model.field_ops.{name}", name, f"field_ops.marts.{name}", "table", tier)


REQUEST_A = [model("stg_field_ops__work_orders"), model("dim_project"), model("fact_project_labor")]
REQUEST_B = [model("stg_field_ops__time_entries"), model("dim_project"), model("fact_project_labor")]


def succeed(queue, batch, **kwargs):
    return queue.finish(
        batch,
        {r.unique_id: ModelOutcome.SUCCESS for r in batch.rows},
        status="success",
        invocations=1,
        exit_code=0,
        message=None,
        **kwargs,
    )


class TestEnqueue:
    def test_shared_models_become_one_piece_of_active_work_with_two_recorded_requests(self, queue):
        first = queue.enqueue(KEY, REQUEST_A, "source:field_ops.work_orders+")
        second = queue.enqueue(KEY, REQUEST_B, "source:field_ops.time_entries+")
        assert names(first.by_outcome()["new_pending"]) == [
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__work_orders",
        ]
        assert names(second.by_outcome()["new_pending"]) == ["stg_field_ops__time_entries"]
        assert names(second.by_outcome()["already_pending"]) == ["dim_project", "fact_project_labor"]
        active = {r["unique_id"]: r for r in queue.active_rows("prod")}
        assert len(active) == 4
        dim = active["model.field_ops.dim_project"]
        assert dim["request_count"] == 2
        assert dim["selectors"].splitlines() == [
            "source:field_ops.work_orders+",
            "source:field_ops.time_entries+",
        ]
        assert [e["outcome"] for e in queue.events("prod") if e["unique_id"] == dim["unique_id"]] == [
            "new_pending",
            "already_pending",
        ]

    def test_already_pending_updates_the_request_time_and_keeps_one_copy_of_a_selector(self, queue):
        queue.enqueue(KEY, REQUEST_A, "source:field_ops.work_orders+", now=T0)
        queue.enqueue(KEY, REQUEST_A, "source:field_ops.work_orders+", now=T0 + seconds(60))
        row = next(r for r in queue.active_rows("prod") if r["unique_id"].endswith("dim_project"))
        assert (row["first_requested_at"], row["last_requested_at"]) == (T0, T0 + seconds(60))
        assert row["selectors"] == "source:field_ops.work_orders+"

    def test_a_request_that_arrives_during_a_build_yields_exactly_one_follow_up(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a")
        assert queue.acquire_lease("prod", "w1", seconds(30))
        batch = queue.claim("prod", "w1", NO_WAIT)
        during = [queue.enqueue(KEY, REQUEST_B, "b").by_outcome() for _ in range(3)]
        assert names(during[0]["already_running"]) == ["dim_project", "fact_project_labor"]
        assert names(during[0]["new_pending"]) == ["stg_field_ops__time_entries"]
        settled = succeed(queue, batch)
        assert settled == {
            "model.field_ops.stg_field_ops__work_orders": "done",
            "model.field_ops.dim_project": "done",
            "model.field_ops.fact_project_labor": "done",
        }
        # The build is history; the requests that arrived during it wait in one follow-up row per model.
        owed = {r["unique_id"]: r for r in queue.active_rows("prod")}
        assert names(owed) == ["dim_project", "fact_project_labor", "stg_field_ops__time_entries"]
        assert owed["model.field_ops.dim_project"]["request_count"] == 3
        assert owed["model.field_ops.dim_project"]["selectors"] == "b"
        follow_up = queue.claim("prod", "w1", NO_WAIT)
        assert names(r.unique_id for r in follow_up.rows) == [
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__time_entries",
        ]
        succeed(queue, follow_up)
        assert queue.active_rows("prod") == []
        assert queue.claim("prod", "w1", NO_WAIT) is None

    def test_a_model_that_fails_while_requested_again_is_failed_in_history_and_owed_one_follow_up(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a", now=T0)
        assert queue.acquire_lease("prod", "w1", seconds(30), now=T0)
        batch = queue.claim("prod", "w1", NO_WAIT, now=T0)
        for i in (1, 2):  # new data lands twice while dim_project is being built
            queue.enqueue(KEY, [model("dim_project")], "b", now=T0 + seconds(i))
        dim = "model.field_ops.dim_project"
        outcomes = {r.unique_id: ModelOutcome.SUCCESS for r in batch.rows} | {dim: ModelOutcome.ERROR}
        settled = queue.finish(
            batch, outcomes, status="partial", invocations=2, exit_code=1, message="dim_project: boom",
            messages={dim: "boom", "model.field_ops.fact_project_labor": "OK"}, now=T0 + seconds(5),
        )  # fmt: skip
        assert settled[dim] == "failed"  # counted by the drain that ran it
        failed = [r for r in queue.history("prod") if r["unique_id"] == dim]
        assert [(r["status"], r["outcome"], r["message"]) for r in failed] == [("failed", "error", "boom")]
        # The batch keeps its failure summary, not the message of whichever model was settled last.
        assert queue.batches("prod")[0]["message"] == "dim_project: boom"
        (owed,) = queue.active_rows("prod")
        assert (owed["unique_id"], owed["status"], owed["request_count"]) == (dim, "pending", 2)
        assert (owed["first_requested_at"], owed["last_requested_at"]) == (T0 + seconds(1), T0 + seconds(2))
        assert not owed["requested_while_running"]
        follow_up = queue.claim("prod", "w1", NO_WAIT, now=T0 + seconds(6))
        assert [r.unique_id for r in follow_up.rows] == [dim]  # the follow-up runs once
        succeed(queue, follow_up)
        assert queue.claim("prod", "w1", NO_WAIT) is None
        assert [r["status"] for r in queue.history("prod") if r["unique_id"] == dim] == ["done", "failed"]

    def test_every_request_writes_one_event_per_model_and_a_request_row(self, queue):
        result = queue.enqueue(KEY, REQUEST_A, "a", requested_by="ingest/run1/enqueue")
        noop = queue.enqueue(KEY, [], "source:field_ops.crews+", excluded_count=1)
        requests = {r["id"]: r for r in queue.requests("prod")}
        assert requests[result.request_id]["status"] == "queued"
        assert requests[noop.request_id]["status"] == "noop"
        assert "nothing to build" in requests[noop.request_id]["message"]
        assert {e["requested_by"] for e in queue.events("prod")} == {"ingest/run1/enqueue"}
        assert queue.outcome_counts("prod") == {"new_pending": 3, "already_pending": 0, "already_running": 0}


class TestDemandKeys:
    def test_a_model_requested_under_two_keys_is_two_rows_each_claimed_in_its_own_batch(self, queue):
        refresh = request_key("prod", full_refresh=True)
        first = queue.enqueue(KEY, REQUEST_A, "a").by_outcome()
        second = queue.enqueue(refresh, REQUEST_A, "a").by_outcome()
        assert len(first["new_pending"]) == len(second["new_pending"]) == 3  # no merge across keys
        assert len(queue.active_rows("prod")) == 6
        assert queue.acquire_lease("prod", "w1", seconds(30))
        batches = [queue.claim("prod", "w1", NO_WAIT) for _ in range(2)]
        assert {b.key for b in batches} == {KEY, refresh} and all(len(b.rows) == 3 for b in batches)
        assert {b["full_refresh"] for b in queue.batches("prod")} == {True, False}

    def test_merged_requests_keep_the_newest_slot_and_any_force(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a", slot=T0 + seconds(3600))
        queue.enqueue(KEY, REQUEST_A, "a", slot=T0, force=True)  # an older slot, forced
        queue.enqueue(KEY, REQUEST_A, "a")  # no slot, not forced
        rows = queue.active_rows("prod")
        assert {(r["request_slot"], r["force"]) for r in rows} == {(T0 + seconds(3600), True)}
        assert queue.acquire_lease("prod", "w1", seconds(30))
        batch = queue.claim("prod", "w1", NO_WAIT)
        assert {(r.request_slot, r.force) for r in batch.rows} == {(T0 + seconds(3600), True)}
        queue.enqueue(KEY, REQUEST_A[:1], "a", slot=T0 + seconds(7200))  # during the pass
        succeed(queue, batch)
        (owed,) = queue.active_rows("prod")
        assert (owed["request_slot"], owed["force"], owed["request_count"]) == (T0 + seconds(7200), True, 1)


class TestClaim:
    def test_the_worker_claims_only_compatible_rows(self, queue):
        assert queue.acquire_lease("prod", "w1", seconds(30))
        queue.enqueue(KEY, REQUEST_A, "a")
        queue.enqueue(BatchKey("prod", mode="full_refresh"), [model("agg_labor_history")], "agg")
        first = queue.claim("prod", "w1", NO_WAIT)
        second = queue.claim("prod", "w1", NO_WAIT)
        assert {r.unique_id for r in first.rows}.isdisjoint(r.unique_id for r in second.rows)
        assert {first.key.mode, second.key.mode} == {"default", "full_refresh"}
        assert queue.claim("prod", "w1", NO_WAIT) is None

    def test_a_claim_records_batch_owner_claim_time_and_heartbeat(self, queue):
        assert queue.acquire_lease("prod", "w1", seconds(30), now=T0)
        queue.enqueue(KEY, REQUEST_A, "a")
        batch = queue.claim("prod", "w1", NO_WAIT, airflow_ti="worker|run|drain|-1", now=T0)
        row = queue.batches("prod")[0]
        assert (row["id"], row["owner"], row["claimed_at"], row["heartbeat_at"], row["status"]) == (
            batch.id,
            "w1",
            T0,
            T0,
            "running",
        )
        assert row["selection"].split() == batch.selection
        assert queue.heartbeat(batch.id, "w1", now=T0 + seconds(5))
        assert not queue.heartbeat(batch.id, "someone-else")

    def test_a_model_within_its_minimum_interval_waits(self, queue):
        from airflow_leastaction.dbt.policy import TierPolicy

        queue.enqueue(KEY, [model("fact_project_labor")], "a")
        assert queue.acquire_lease("prod", "w1", seconds(30))
        succeed(queue, queue.claim("prod", "w1", NO_WAIT))
        queue.enqueue(KEY, [model("fact_project_labor")], "a")
        assert queue.claim("prod", "w1", TierPolicy()) is None  # standard tier: 5 minutes between builds
        assert queue.next_eligible("prod", TierPolicy()) is not None

    def test_a_follow_up_owed_waits_the_tiers_minimum_interval_from_the_build_it_just_had(self, queue):
        from airflow_leastaction.dbt.policy import TierPolicy

        queue.enqueue(KEY, [model("fact_project_labor")], "a", now=T0)
        assert queue.acquire_lease("prod", "w1", seconds(30), now=T0)
        batch = queue.claim("prod", "w1", TierPolicy(), now=T0)
        queue.enqueue(KEY, [model("fact_project_labor")], "a", now=T0 + seconds(10))  # during the build
        assert succeed(queue, batch, now=T0 + seconds(60)) == {"model.field_ops.fact_project_labor": "done"}
        assert [r["status"] for r in queue.active_rows("prod")] == ["pending"]  # the follow-up owed
        built = T0 + seconds(60)
        assert queue.claim("prod", "w1", TierPolicy(), now=built + seconds(299)) is None
        with queue.engine.connect() as conn:
            assert TierPolicy().next_eligible(queue.candidates(conn, "prod"), built) == built + seconds(300)
        assert queue.claim("prod", "w1", TierPolicy(), now=built + seconds(300)) is not None


class TestLeaseAndRecovery:
    def test_a_second_worker_exits_without_claiming(self, queue):
        assert queue.acquire_lease("prod", "w1", seconds(30))
        assert not queue.acquire_lease("prod", "w2", seconds(30))
        assert queue.acquire_lease("prod", "w1", seconds(30))  # re-entrant for its owner
        queue.release_lease("prod", "w1")
        assert queue.acquire_lease("prod", "w2", seconds(30))

    def test_a_silent_workers_lease_is_taken_after_the_grace_period(self, queue):
        assert queue.acquire_lease("prod", "w1", seconds(30), now=T0)
        assert not queue.acquire_lease("prod", "w2", seconds(30), now=T0 + seconds(29))
        assert queue.acquire_lease("prod", "w2", seconds(30), now=T0 + seconds(31))

    def test_stale_rows_are_requeued_after_grace_unless_their_task_is_alive(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a", now=T0)
        assert queue.acquire_lease("prod", "w1", seconds(60), now=T0)
        batch = queue.claim("prod", "w1", NO_WAIT, now=T0)
        assert queue.requeue_stale("prod", seconds(60), now=T0 + seconds(59)) == []
        assert queue.requeue_stale("prod", seconds(60), is_alive=lambda b: True, now=T0 + seconds(61)) == []
        requeued = queue.requeue_stale("prod", seconds(60), is_alive=lambda b: False, now=T0 + seconds(61))
        assert names(requeued) == ["dim_project", "fact_project_labor", "stg_field_ops__work_orders"]
        assert queue.batches("prod")[0]["status"] == "abandoned"
        # The dead worker's late finish changes nothing: the rows are no longer its.
        assert succeed(queue, batch) == {}
        assert {r["status"] for r in queue.active_rows("prod")} == {"pending"}

    def test_a_claim_by_a_worker_that_lost_its_lease_raises_and_claims_nothing(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a", now=T0)
        assert queue.acquire_lease("prod", "paused", seconds(30), now=T0)
        assert queue.acquire_lease("prod", "new-owner", seconds(30), now=T0 + seconds(31))
        with pytest.raises(DbtLeaseLostError, match="'paused' no longer holds"):
            queue.claim("prod", "paused", NO_WAIT, now=T0 + seconds(32))
        assert {r["status"] for r in queue.active_rows("prod")} == {"pending"}
        assert queue.batches("prod") == []

    def test_renewing_a_lost_lease_or_a_batch_taken_back_reports_false(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a", now=T0)
        assert queue.acquire_lease("prod", "w1", seconds(30), now=T0)
        batch = queue.claim("prod", "w1", NO_WAIT, now=T0)
        assert queue.renew_lease("prod", "w1", batch_id=batch.id, now=T0 + seconds(5))
        assert queue.requeue_stale("prod", seconds(30), now=T0 + seconds(40))  # the batch is taken back
        assert not queue.renew_lease("prod", "w1", batch_id=batch.id, now=T0 + seconds(41))
        assert queue.acquire_lease("prod", "w2", seconds(30), now=T0 + seconds(80))
        assert not queue.renew_lease("prod", "w1", now=T0 + seconds(81))

    def test_a_retry_of_the_same_task_instance_reacquires_its_lease_and_its_earlier_batch_at_once(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a", now=T0)
        ti = "worker|run|drain|-1"
        assert queue.acquire_lease("prod", "ti-abc:try1:host:1", seconds(300), now=T0)
        queue.claim("prod", "ti-abc:try1:host:1", NO_WAIT, airflow_ti=ti, now=T0)
        later = T0 + seconds(10)  # well within the grace period
        assert not queue.acquire_lease("prod", "someone-else", seconds(300), now=later)
        assert queue.acquire_lease("prod", "ti-abc:try2:host:2", seconds(300), same_task="ti-abc:", now=later)
        requeued = queue.requeue_stale("prod", seconds(300), airflow_ti=ti, owner="ti-abc:try2:host:2", now=later)
        assert names(requeued) == ["dim_project", "fact_project_labor", "stg_field_ops__work_orders"]
        assert "earlier try" in queue.batches("prod")[0]["message"]

    def test_a_takeover_after_grace_asks_airflow_about_the_silent_owners_batches(self, queue):
        queue.enqueue(KEY, REQUEST_A, "a", now=T0)
        assert queue.acquire_lease("prod", "w1", seconds(30), now=T0)
        queue.claim("prod", "w1", NO_WAIT, airflow_ti="worker|run|drain|-1", now=T0)
        asked = []

        def alive(batch):
            asked.append(batch["airflow_ti"])
            return True

        late = T0 + seconds(31)
        assert not queue.acquire_lease("prod", "w2", seconds(30), is_alive=alive, now=late)
        assert asked == ["worker|run|drain|-1"]
        assert queue.acquire_lease("prod", "w2", seconds(30), is_alive=lambda b: None, now=late)

    @pytest.mark.parametrize("takeover", ["lease", "requeue"])
    def test_airflow_is_asked_about_a_silent_owner_while_no_queue_row_is_locked(self, queue, takeover):
        # Asking Airflow is a call to another process (its API, with retries): no queue transaction holds the
        # lease or a batch's rows meanwhile. The silent owner's heartbeat lands while Airflow is asked.
        queue.enqueue(KEY, REQUEST_A, "a", now=T0)
        assert queue.acquire_lease("prod", "w1", seconds(30), now=T0)
        claimed = queue.claim("prod", "w1", NO_WAIT, airflow_ti="worker|run|drain|-1", now=T0)
        late = T0 + seconds(31)
        heartbeats: list = []

        def alive(batch):
            beat = threading.Thread(
                target=lambda: heartbeats.append(queue.renew_lease("prod", "w1", batch_id=claimed.id, now=late)),
                daemon=True,
            )
            beat.start()
            beat.join(timeout=20)
            heartbeats.append("landed" if not beat.is_alive() else "waited on the takeover's transaction")
            return False

        if takeover == "lease":
            assert not queue.acquire_lease("prod", "w2", seconds(30), is_alive=alive, now=late)
        else:
            assert queue.requeue_stale("prod", seconds(30), is_alive=alive, now=late) == []
        # The owner is no longer silent once its heartbeat landed: nothing is taken from it.
        assert heartbeats == [True, "landed"]
        assert {r["status"] for r in queue.active_rows("prod")} == {"running"}


MODELS = [model(f"m{i:02d}") for i in range(12)]


def produce(queue, n: int, seed: int, errors: list) -> None:
    rnd = random.Random(seed)
    try:
        for _ in range(n):
            queue.enqueue(KEY, rnd.sample(MODELS, 3), f"source:s{rnd.randrange(4)}+")
    except Exception as exc:  # surfaced by the test: a producer must never fail
        errors.append(exc)


def drain_concurrently(queue, stop: threading.Event, errors: list) -> None:
    try:
        assert queue.acquire_lease("prod", "w1", seconds(30))
        while not stop.is_set():
            batch = queue.claim("prod", "w1", NO_WAIT, max_size=5)
            if batch is not None:
                succeed(queue, batch)
            stop.wait(0.005)
    except Exception as exc:
        errors.append(exc)


class TestConcurrentProducers:
    def test_no_request_is_lost_under_eight_concurrent_producers(self, queue):
        producers, per_producer = 8, 1000
        errors: list = []
        stop = threading.Event()
        worker = threading.Thread(target=drain_concurrently, args=(queue, stop, errors))
        threads = [
            threading.Thread(target=produce, args=(queue, per_producer, seed, errors)) for seed in range(producers)
        ]
        worker.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        worker.join()
        assert errors == []
        with queue.engine.connect() as conn:
            events = conn.execute(select(func.count()).select_from(dbt_request_event)).scalar_one()
            merged = conn.execute(select(func.sum(dbt_queue.c.request_count))).scalar_one()
            most_active = conn.execute(
                select(func.count())
                .where(dbt_queue.c.status.in_(["pending", "running"]))
                .group_by(dbt_queue.c.unique_id)
                .order_by(func.count().desc())
                .limit(1)
            ).scalar()
        assert events == producers * per_producer * 3
        assert merged == events  # every event is counted by exactly one queue row: nothing lost
        assert (most_active or 0) <= 1
        counts = queue.outcome_counts("prod")
        assert sum(counts.values()) == events and counts["already_running"] > 0


class TestMigration:
    def test_the_migrations_match_the_queue_tables(self, catalog_url):
        from airflow_leastaction.catalog.engine import get_engine

        with get_engine(catalog_url).connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        assert [d for d in diff if "la_dbt" in repr(d)] == []
