"""``airflow-leastaction queue``: every request ends in a clear, recorded outcome; drain, status, history."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.cli import main
from tests.helpers.dbt_queue import DBT_ENV, SELECTOR_A, names

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
        deadline = time.monotonic() + 90
        while not any(r["status"] == "running" for r in queue.active_rows("ops")):
            assert time.monotonic() < deadline, "the batch never started"
            time.sleep(0.05)
        code, _ = cli("queue", "enqueue", SELECTOR_A, "--project-dir", cli.project, "--environment", "ops")
        drain.join()
        assert code == 0 and result == [3]
        failed = [r["unique_id"] for r in queue.history("ops") if r["status"] == "failed"]
        assert names(failed) == ["agg_labor_history", "fact_project_labor"]
