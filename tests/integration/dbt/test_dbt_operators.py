"""The example ingest DAGs (Request A, Request B) and the worker DAG in real Airflow runs (``dag.test()``)."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import insert, select, update

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import utcnow
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.policy import TierPolicy
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.operators import DbtDrainOperator, DbtEnqueueOperator, dbt_queue_asset
from airflow_leastaction.operators.dbt_owner import same_task_prefix
from tests.helpers.dbt_queue import DBT_ENV, ROOT, ManualClock, names, request_while_building

pytestmark = pytest.mark.dbt
WHEN = dt.datetime(2026, 11, 29, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def example_dags(airflow_db, dbt_project, sqlite_url, use_catalog, monkeypatch):
    from airflow_leastaction.version_compat import dag_bag_class

    DagBag = dag_bag_class()
    monkeypatch.setenv("FIELD_OPS_DBT_PROJECT_DIR", str(dbt_project))
    for name, value in DBT_ENV.items():
        monkeypatch.setenv(name, value)
    get_engine(sqlite_url, migrate=True)
    use_catalog(sqlite_url)
    bag = DagBag(str(ROOT / "dags_examples"))
    assert not bag.import_errors, bag.import_errors
    return bag


def xcom(dag_id: str, task_id: str):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.scalars(
            select(XComModel)
            .where(XComModel.dag_id == dag_id, XComModel.task_id == task_id, XComModel.key == "return_value")
            .order_by(XComModel.timestamp.desc())
        ).first()
        return XComModel.deserialize_value(row)


def asset_events(uri: str) -> int:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        return len(
            session.scalars(
                select(AssetEvent).join(AssetModel, AssetModel.id == AssetEvent.asset_id).where(AssetModel.uri == uri)
            ).all()
        )


class TestQueueOperatorsInAirflow:
    def test_two_ingests_enqueue_overlapping_models_and_the_worker_builds_them_once(self, example_dags, sqlite_url):
        asset_uri = dbt_queue_asset("field_ops").uri
        before = asset_events(asset_uri)
        for dag_id in ("dbt_ingest_work_orders", "dbt_ingest_time_entries"):
            run = example_dags.get_dag(dag_id).test(logical_date=WHEN)
            assert run.state == "success", dag_id
        assert asset_events(asset_uri) - before == 2  # each enqueue published the queue's Asset

        merged_b = xcom("dbt_ingest_time_entries", "enqueue_dbt_models")["merged"]
        assert names(merged_b["already_pending"]) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
        ]
        assert names(merged_b["new_pending"]) == ["stg_field_ops__time_entries"]

        worker = example_dags.get_dag("dbt_queue_worker")
        assert dbt_queue_asset("field_ops") in worker.timetable.asset_condition.objects  # runs on demand
        run = worker.test(logical_date=WHEN)
        assert run.state == "success"
        report = xcom("dbt_queue_worker", "drain_dbt_queue")
        assert report["owned"] and len(report["batches"]) == 1
        assert names(report["built"]) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__time_entries",
            "stg_field_ops__work_orders",
        ]
        queue = QueueStore(get_engine(sqlite_url))
        assert queue.active_rows("field_ops") == []
        assert {r["requested_by"].split("|")[0] for r in queue.requests("field_ops")} == {
            "dbt_ingest_work_orders",
            "dbt_ingest_time_entries",
        }


def seed_history(url: str, unique_ids, finished_at: dt.datetime) -> None:
    """Record an earlier build of each model (done rows), as a worker leaves them."""
    from airflow_leastaction.dbt.schema import dbt_queue

    rows = [
        {"environment": "field_ops", "unique_id": u, "fqn": u, "materialized": "table", "status": "done",
         "first_requested_at": finished_at, "last_requested_at": finished_at, "finished_at": finished_at,
         "outcome": "success"}
        for u in unique_ids
    ]  # fmt: skip
    with get_engine(url).begin() as conn:
        conn.execute(insert(dbt_queue), rows)


class TestHeldWork:
    def test_held_work_is_drained_by_an_asset_scheduled_worker_without_a_cron(self, example_dags, sqlite_url):
        worker = example_dags.get_dag("dbt_queue_worker")
        # Scheduled on the queue's Asset alone: no cron to pick up what a tier holds back.
        assert type(worker.timetable).__name__ == "AssetTriggeredTimetable"
        assert example_dags.get_dag("dbt_ingest_work_orders").test(logical_date=WHEN).state == "success"
        queue = QueueStore(get_engine(sqlite_url))
        standard = sorted(r["unique_id"] for r in queue.active_rows("field_ops") if r["tier"] == "standard")
        assert standard, "the example project's marts are expected in the standard tier (5 minutes)"
        # Built 3.5 minutes ago on the queue's clock: the default tiers hold them back 90 more seconds of
        # it. The clock stands still while the first round runs, however long its dbt steps take, and moves
        # only while the drain waits: the hold ends in the wait, never during the first round.
        clock = ManualClock(utcnow())
        built_at = clock.now() - dt.timedelta(minutes=3, seconds=30)
        seed_history(sqlite_url, standard, built_at)

        with queue_clock.using(clock):
            run = worker.test(logical_date=WHEN)
        assert run.state == "success"
        report = xcom("dbt_queue_worker", "drain_dbt_queue")
        assert report["rounds"] == 2  # drained, waited deferred, drained again
        assert names(report["built"]) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__work_orders",
        ]
        batches = {b["id"]: b for b in queue.batches("field_ops")}
        rebuilt = [r for r in queue.history("field_ops") if r["unique_id"] in standard and r["batch_id"]]
        assert sorted(r["unique_id"] for r in rebuilt) == standard
        # Held back until the tier's 5 minutes had passed since the earlier build, then built.
        assert all(batches[r["batch_id"]]["claimed_at"] >= built_at + dt.timedelta(minutes=5) for r in rebuilt)
        assert queue.active_rows("field_ops") == []

    def test_a_follow_up_owed_in_the_historical_tier_is_waited_for_past_max_wait_from_the_drains_start(
        self, example_dags, sqlite_url, plans
    ):
        """The historical tier holds a model as long as max_wait (seconds here, as the default tiers' hour
        and the default max_wait): a follow-up owed to a build of the drain is eligible that long after
        the build, so past max_wait from the drain's start, yet within max_wait of the round that found it."""
        from airflow_leastaction.version_compat import dag_bag_class

        cases = dag_bag_class()(str(ROOT / "tests" / "dags" / "dbt_queue_cases.py"))
        assert not cases.import_errors, cases.import_errors
        drain = cases.get_dag("dq_drain_short_historical")
        held = drain.get_task("drain").max_wait
        assert held == drain.get_task("drain").tiers.tier("historical").min_interval
        assert example_dags.get_dag("dbt_ingest_work_orders").test(logical_date=WHEN).state == "success"
        queue = QueueStore(get_engine(sqlite_url))
        history = "model.field_ops.agg_labor_history"
        assert [r["tier"] for r in queue.active_rows("field_ops") if r["unique_id"] == history] == ["historical"]

        with (
            request_while_building(queue, plans["A"]) as during,  # new data lands while the models are built
            queue_clock.using(ManualClock(utcnow())),  # the hold cannot run out during the first round
        ):
            run = drain.test(logical_date=WHEN)
        assert run.state == "success"
        assert during and history in during[0]["already_running"]  # a follow-up owed to the drain's build

        report = xcom("dq_drain_short_historical", "drain")
        assert report["rounds"] == 2  # built, waited deferred for the follow-up, built it
        assert report["built"].count(history) == 2
        assert queue.active_rows("field_ops") == []
        first, rebuild = sorted(
            (b for b in queue.batches("field_ops") if "agg_labor_history" in b["selection"]),
            key=lambda b: b["claimed_at"],
        )
        assert rebuild["claimed_at"] >= first["claimed_at"] + held  # the tier's interval was honoured


class TestFailure:
    def test_the_drain_that_ran_a_failed_pass_fails_its_task_even_when_the_model_was_requested_during_it(
        self, example_dags, sqlite_url, plans, dbt_project
    ):
        """The follow-up owed to the requests made during the failed pass runs once, in the same drain here
        (its tiers hold nothing back), and the task fails: the failure is never reported green."""
        from airflow_leastaction.version_compat import dag_bag_class

        DagBag = dag_bag_class()

        sql = dbt_project / "models" / "marts" / "fact_project_labor.sql"
        sql.write_text(sql.read_text().replace("sum(t.hours) as hours", "sum(t.no_such_column) as hours"))
        cases = DagBag(str(ROOT / "tests" / "dags" / "dbt_queue_cases.py"))
        assert not cases.import_errors, cases.import_errors
        assert example_dags.get_dag("dbt_ingest_work_orders").test(logical_date=WHEN).state == "success"
        queue = QueueStore(get_engine(sqlite_url))
        with request_while_building(queue, plans["A"]) as during:  # new data lands while the models are built
            run = cases.get_dag("dq_drain_nothing_held").test(logical_date=WHEN)
        fact = "model.field_ops.fact_project_labor"
        assert during and fact in during[0]["already_running"]
        assert run.state == "failed"
        report = xcom("dq_drain_nothing_held", "drain")
        assert fact in report["failed"] and len(report["batches"]) == 2  # the failed pass, then its follow-up
        passes = [r["outcome"] for r in queue.history("field_ops") if r["unique_id"] == fact]
        assert passes == ["error", "error"]  # both passes are history as they ended, the follow-up ran once
        assert queue.active_rows("field_ops") == []


class TestRetry:
    def test_a_retry_of_the_drain_takes_its_earlier_trys_lease_and_batch_back_at_once(self, example_dags, sqlite_url):
        from airflow.utils.types import DagRunType

        when = dt.datetime(2026, 11, 28, 9, 0, tzinfo=dt.UTC)
        assert example_dags.get_dag("dbt_ingest_work_orders").test(logical_date=when).state == "success"
        run_id = DagRunType.MANUAL.generate_run_id(suffix=when.isoformat())
        ti = f"dbt_queue_worker|{run_id}|drain_dbt_queue|-1"
        # What an earlier try that died mid-batch leaves: its lease and its running batch, both fresh.
        earlier = f"{same_task_prefix(ti)}try1:elsewhere:1"
        queue = QueueStore(get_engine(sqlite_url))
        assert queue.acquire_lease("field_ops", earlier, dt.timedelta(minutes=5))
        batch = queue.claim("field_ops", earlier, TierPolicy(), airflow_ti=ti)
        assert batch is not None

        run = example_dags.get_dag("dbt_queue_worker").test(run_after=when, logical_date=when)
        assert run.state == "success" and run.run_id == run_id
        report = xcom("dbt_queue_worker", "drain_dbt_queue")
        claimed = names(r.unique_id for r in batch.rows)
        assert report["owned"]  # not after the 5-minute grace: at once
        assert names(report["requeued"]) == claimed and names(report["built"]) == claimed
        earlier_batch = next(b for b in queue.batches("field_ops") if b["id"] == batch.id)
        assert earlier_batch["status"] == "abandoned" and "earlier try" in earlier_batch["message"]
        assert queue.active_rows("field_ops") == []


class TestTakeover:
    @pytest.mark.parametrize(("owner_state", "taken_over"), [("running", False), ("success", True)])
    def test_a_silent_owner_is_taken_over_only_when_airflow_says_its_task_instance_has_ended(
        self, example_dags, sqlite_url, owner_state, taken_over
    ):
        """The drain asks Airflow (through the task runner's supervisor, as in any worker) for the state
        of the task instance that claimed the silent owner's batch: its heartbeat alone says it is dead."""
        from airflow.models.taskinstance import TaskInstance
        from airflow.utils.session import create_session

        worker = example_dags.get_dag("dbt_queue_worker")
        earlier, when = dt.datetime(2026, 11, 26, 9, 0, tzinfo=dt.UTC), dt.datetime(2026, 11, 27, 9, 0, tzinfo=dt.UTC)
        owner_run = worker.test(logical_date=earlier)  # a real drain task instance, the silent owner's
        assert owner_run.state == "success"
        owner_ti = f"dbt_queue_worker|{owner_run.run_id}|drain_dbt_queue|-1"
        with create_session() as session:  # Airflow's view of it: still running, or ended
            session.execute(
                update(TaskInstance)
                .where(TaskInstance.dag_id == "dbt_queue_worker", TaskInstance.run_id == owner_run.run_id)
                .values(state=owner_state)
            )
        assert example_dags.get_dag("dbt_ingest_work_orders").test(logical_date=when).state == "success"
        # The owner's lease and batch, silent for twice the worker DAG's 5-minute grace.
        silent_since = utcnow() - dt.timedelta(minutes=10)
        queue = QueueStore(get_engine(sqlite_url))
        assert queue.acquire_lease("field_ops", "elsewhere:1", dt.timedelta(minutes=5), now=silent_since)
        batch = queue.claim("field_ops", "elsewhere:1", TierPolicy(), airflow_ti=owner_ti, now=silent_since)
        assert batch is not None
        claimed = names(r.unique_id for r in batch.rows)

        assert worker.test(logical_date=when).state == "success"
        report = xcom("dbt_queue_worker", "drain_dbt_queue")
        silent_batch = next(b for b in queue.batches("field_ops") if b["id"] == batch.id)
        if taken_over:
            assert report["owned"]
            assert names(report["requeued"]) == claimed and names(report["built"]) == claimed
            assert silent_batch["status"] == "abandoned"
            assert queue.active_rows("field_ops") == []
        else:  # Airflow says the owner's task is running: only slow to heartbeat, so left alone
            assert not report["owned"] and report["built"] == []
            assert silent_batch["status"] == "running"
            assert sorted(r["status"] for r in queue.active_rows("field_ops")) == ["running"] * len(claimed)


class TestOperatorArguments:
    @pytest.mark.parametrize("selector", ["", "  "])
    def test_an_empty_selector_fails_at_dag_parse_time(self, deployed_project, selector):
        with pytest.raises(ConfigurationError, match="'enqueue'.*non-empty string"):
            DbtEnqueueOperator(task_id="enqueue", selector=selector, project_dir=str(deployed_project))

    def test_a_project_dir_without_dbt_project_yml_fails_at_dag_parse_time(self, tmp_path):
        with pytest.raises(ConfigurationError, match="'drain'.*holds no dbt_project.yml"):
            DbtDrainOperator(task_id="drain", project_dir=str(tmp_path))

    def test_profiles_come_from_a_directory_or_a_connection_not_both(self, deployed_project):
        with pytest.raises(ConfigurationError, match="profiles_dir or dbt_conn_id, not both"):
            DbtDrainOperator(task_id="drain", project_dir=str(deployed_project), profiles_dir="/p", dbt_conn_id="c")

    def test_the_heartbeat_must_be_shorter_than_the_grace_period(self, deployed_project):
        with pytest.raises(ConfigurationError, match="shorter than grace"):
            DbtDrainOperator(task_id="drain", project_dir=str(deployed_project), grace=5, heartbeat_interval=10)

    @pytest.mark.parametrize(
        ("flags", "message"),
        [
            ({"command": "test", "full_refresh": True}, "--full-refresh does not apply to dbt test"),
            ({"command": "compile"}, "'compile' cannot be queued"),
            ({"dbt_vars": ["day"]}, "--vars must be a JSON object"),
        ],
    )
    def test_a_request_dbt_would_refuse_fails_at_dag_parse_time(self, deployed_project, flags, message):
        with pytest.raises(ConfigurationError, match=f"'enqueue'.*{message}"):
            DbtEnqueueOperator(task_id="enqueue", selector="a+", project_dir=str(deployed_project), **flags)

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"model_cron": "61 * * * *"}, "61"),
            ({"model_timezone": "Mars/Olympus"}, "Mars/Olympus"),
            ({"source_tasks": {"field_ops.work_orders": "team_a/load"}}, r"source_tasks\['field_ops.work_orders'\]"),
        ],
    )
    def test_a_drain_whose_catalog_options_cannot_work_fails_at_dag_parse_time(
        self, deployed_project, options, message
    ):
        with pytest.raises(ConfigurationError, match=f"'drain'.*{message}"):
            DbtDrainOperator(task_id="drain", project_dir=str(deployed_project), **options)

    def test_a_negative_max_wait_fails_at_dag_parse_time(self, deployed_project):
        with pytest.raises(ConfigurationError, match="'drain'.*max_wait must not be negative"):
            DbtDrainOperator(task_id="drain", project_dir=str(deployed_project), max_wait=-1)

    @pytest.mark.parametrize(
        ("report", "max_wait", "wakes"),
        [
            (
                {"owned": True, "lease_lost": False, "next_eligible_at": "2026-11-29T09:30:00+00:00"},
                3600,
                True,
            ),
            (
                {"owned": True, "lease_lost": False, "next_eligible_at": "2026-11-29T11:00:00+00:00"},
                3600,
                False,
            ),
            ({"owned": True, "lease_lost": False, "next_eligible_at": "2026-11-29T09:30:00+00:00"}, 0, False),
            ({"owned": True, "lease_lost": False, "next_eligible_at": None}, 3600, False),
            (
                {"owned": False, "lease_lost": False, "next_eligible_at": "2026-11-29T09:30:00+00:00"},
                3600,
                False,
            ),
            (
                {"owned": True, "lease_lost": True, "next_eligible_at": "2026-11-29T09:30:00+00:00"},
                3600,
                False,
            ),
        ],
    )
    def test_the_drain_waits_for_held_work_only_as_owner_and_within_max_wait(
        self, deployed_project, report, max_wait, wakes
    ):
        op = DbtDrainOperator(task_id="drain", project_dir=str(deployed_project), max_wait=max_wait)
        wake = op._wake_at(report, found=WHEN)
        assert (wake is not None) == wakes
        if wakes:
            assert wake.isoformat() == report["next_eligible_at"]

    def test_the_enqueue_publishes_the_environments_asset(self, deployed_project):
        op = DbtEnqueueOperator(
            task_id="enqueue",
            selector="source:field_ops.crews+",
            project_dir=str(deployed_project),
            environment="analytics",
        )
        assert op.outlets == [dbt_queue_asset("analytics")]
