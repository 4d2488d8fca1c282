"""``airflow-leastaction queue``: every request ends in a clear, recorded outcome; drain, status, history."""

from __future__ import annotations

import json
import re
import threading

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.cli import main
from tests.helpers.dbt_queue import DBT_ENV, SELECTOR_A, names, wait_for

pytestmark = pytest.mark.dbt


@pytest.fixture
def cli(sqlite_url, use_catalog, dbt_project, monkeypatch, capsys):
    for name, value in DBT_ENV.items():
        monkeypatch.setenv(name, value)
    get_engine(sqlite_url, migrate=True)
    use_catalog(sqlite_url)

    def run(*argv: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        run.err = captured.err
        return code, captured.out

    run.project = str(dbt_project)
    return run


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def printed_json(out: str):
    """The JSON document a command printed (log lines may precede it on stdout)."""
    start = re.search(r"^[{\[]$", out, re.MULTILINE)
    assert start, out
    return json.loads(out[start.start() :])


class TestQueueCommand:
    def test_queued_no_op_and_planning_failure_are_each_recorded_and_drain_builds_the_queued_models(self, cli):
        code, out = cli("queue", "enqueue", SELECTOR_A, "--project-dir", cli.project, "--environment", "ops")
        assert code == 0
        assert printed_json(out)["status"] == "queued"

        code, out = cli(
            "queue",
            "enqueue",
            "source:field_ops.crews+",
            "--project-dir",
            cli.project,
            "--environment",
            "ops",
        )
        assert code == 0
        assert printed_json(out)["status"] == "noop"  # only views: a successful no-op

        code, out = cli(
            "queue",
            "enqueue",
            "source:field_ops.invoices+",
            "--project-dir",
            cli.project,
            "--environment",
            "ops",
        )
        assert code == 2
        assert "matches no enabled dbt node (recorded as planning_failed)" in cli.err

        code, out = cli("queue", "status", "--environment", "ops")
        assert code == 0 and "4 pending, 0 running" in out

        code, out = cli("queue", "drain", "--project-dir", cli.project, "--environment", "ops", "--heartbeat", "1")
        assert code == 0
        assert names(printed_json(out)["built"]) == [
            "agg_labor_history",
            "dim_project",
            "fact_project_labor",
            "stg_field_ops__work_orders",
        ]

        code, out = cli("queue", "history", "--environment", "ops", "--json")
        history = printed_json(out)
        assert sorted(r["status"] for r in history["requests"]) == ["noop", "planning_failed", "queued"]
        failure = next(r for r in history["requests"] if r["status"] == "planning_failed")
        assert "source:field_ops.invoices+" in failure["message"]
        assert {r["outcome"] for r in history["finished"]} == {"success"}
        assert history["outcomes"]["new_pending"] == 4

    def test_an_empty_selector_is_refused_and_says_nothing_was_recorded(self, cli):
        code, out = cli("queue", "enqueue", "  ", "--project-dir", cli.project, "--environment", "ops")
        assert code == 2
        assert out == "" and cli.err.startswith("error: argument selector: '  ': expected a dbt selector")
        code, out = cli("queue", "history", "--environment", "ops", "--json")
        assert printed_json(out)["requests"] == []

    def test_a_drain_whose_model_failed_exits_3_even_when_the_model_was_requested_again_during_its_build(
        self, cli, sqlite_url
    ):
        from airflow_leastaction.dbt.queue_store import QueueStore

        sql = cli.project + "/models/marts/fact_project_labor.sql"
        with open(sql) as f:
            good = f.read()
        with open(sql, "w") as f:
            f.write(good.replace("sum(t.hours) as hours", "sum(t.no_such_column) as hours"))
        assert cli("queue", "enqueue", SELECTOR_A, "--project-dir", cli.project, "--environment", "ops")[0] == 0
        queue = QueueStore(get_engine(sqlite_url))
        result = []
        drain = threading.Thread(
            target=lambda: result.append(
                main(["queue", "drain", "--project-dir", cli.project, "--environment", "ops", "--heartbeat", "1",
                      "--max-batches", "1"])
            )
        )  # fmt: skip
        drain.start()
        wait_for(lambda: any(r["status"] == "running" for r in queue.active_rows("ops")), what="the batch to start")
        code, _ = cli("queue", "enqueue", SELECTOR_A, "--project-dir", cli.project, "--environment", "ops")
        drain.join()
        assert code == 0 and result == [3]
        failed = [r["unique_id"] for r in queue.history("ops") if r["status"] == "failed"]
        assert names(failed) == ["agg_labor_history", "fact_project_labor"]


class TestStateAwareOptions:
    @pytest.mark.parametrize(
        ("flags", "message"),
        [
            (["--command", "test", "--full-refresh"], "--full-refresh does not apply to dbt test"),
            (["--vars", "[1]"], "--vars must be a JSON object"),
            (["--slot", "2026-11-29T10:00"], "argument --slot: '2026-11-29T10:00' has no timezone offset"),
        ],
    )
    def test_a_request_dbt_would_refuse_is_refused_in_one_line_and_records_nothing(self, cli, flags, message):
        code, out = cli("queue", "enqueue", SELECTOR_A, "--project-dir", cli.project, "--environment", "ops", *flags)
        assert code == 2 and out == ""
        (line,) = error_lines(cli.err)
        assert message in line and "Traceback" not in cli.err
        code, out = cli("queue", "history", "--environment", "ops", "--json")
        assert printed_json(out)["requests"] == []

    def test_history_says_what_was_built_and_what_reused_and_the_builds_saved_today(self, cli):
        built = 0
        for _ in range(2):
            assert cli("queue", "enqueue", SELECTOR_A, "--project-dir", cli.project, "--environment", "ops")[0] == 0
            code, out = cli("queue", "drain", "--project-dir", cli.project, "--environment", "ops", "--heartbeat", "1")
            assert code == 0
            built += len(printed_json(out)["built"])
        code, out = cli("queue", "history", "--environment", "ops", "--json")
        # The sources' loaders never reported: nothing is known about them, so nothing is reused (the second
        # drain builds the models its tiers do not hold back).
        assert printed_json(out)["today"] == {"built": built, "reused": 0} and built > 4
        code, out = cli("queue", "history", "--environment", "ops")
        assert f"today (UTC): {built} model build(s), 0 reused" in out
        assert "inputs unknown: source.field_ops.field_ops.work_orders (mapped task airflow/" in out


class TestDbtCheck:
    def test_check_names_every_source_the_queue_cannot_follow_until_its_task_is_in_the_catalog(self, cli, sqlite_url):
        from airflow_leastaction.catalog.store import CatalogStore
        from tests.helpers.dbt_queue import LOADERS, land

        code, out = cli("dbt", "check", "--project-dir", cli.project)
        assert code == 3
        assert error_lines(cli.err) == [
            "error: 4 source(s) the dbt queue cannot follow; mapped to tasks not in the catalog: field_ops.crews, "
            "field_ops.projects, field_ops.time_entries, field_ops.work_orders"
        ]
        assert (
            "FAIL field_ops.work_orders: catalog task airflow/dbt_ingest_work_orders.ingest_work_orders (meta)" in out
        )
        for loader in LOADERS:
            land(CatalogStore(get_engine(sqlite_url)), loader, 0)
        code, out = cli("dbt", "check", "--project-dir", cli.project)
        assert code == 0 and out.count("ok ") == 4

        sources = f"{cli.project}/models/staging/sources.yml"
        with open(sources) as f:
            text = f.read()
        with open(sources, "w") as f:  # projects loses its mapping
            f.write(text.replace("          leastaction: {task: reference_data, project: field_ops}\n", "", 1))
        code, out = cli("dbt", "check", "--project-dir", cli.project)
        assert code == 3 and "unmapped: field_ops.projects" in error_lines(cli.err)[0]
        code, out = cli("dbt", "check", "--project-dir", cli.project, "--source-task",
                        "field_ops.projects=field_ops/reference_data")  # fmt: skip
        assert code == 0
