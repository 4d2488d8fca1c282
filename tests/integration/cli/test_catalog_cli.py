"""``airflow-leastaction`` catalog commands as an operator or another team's system runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from airflow_leastaction.catalog.migrate import head_revisions
from airflow_leastaction.cli import main as cli
from airflow_leastaction.identity import TaskIdentity


class TestCatalogReport:
    def test_an_external_system_reports_a_completed_interval(self, store, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        args = [
            "catalog",
            "report",
            "orders_raw",
            "--project",
            "sales-platform",
            "--slot",
            "2026-11-28T00:00:00+00:00",
            "--cron",
            "0 0 * * *",
            "--rows-written",
            "1200",
            "--run-id",
            "ext-1",
        ]
        assert cli(args) == 0
        assert "published revision 1" in capsys.readouterr().out
        assert cli(args) == 0
        assert "already recorded at revision 1" in capsys.readouterr().out
        row = store.get_task(TaskIdentity("orders_raw", "sales-platform"))
        assert (row["source"], row["cron"]) == ("external", "0 0 * * *")
        _, slots = store.snapshot([(TaskIdentity("orders_raw", "sales-platform"), row["prev_interval_start"])])
        assert [s.rows_written for s in slots] == [1200]

    def test_a_slot_without_offset_is_refused(self, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        assert cli(["catalog", "report", "orders_raw", "--project", "p", "--slot", "2026-11-28T00:00:00"]) == 2
        assert "has no timezone offset" in capsys.readouterr().err

    def test_show_prints_the_task_with_its_granularity(self, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        cli(
            [
                "catalog",
                "report",
                "rates",
                "--project",
                "fx",
                "--slot",
                "2026-11-23T00:00:00+00:00",
                "--cron",
                "0 0 * * 1",
            ]
        )
        capsys.readouterr()
        assert cli(["catalog", "show", "rates", "--project", "fx"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert (shown["granularity"], shown["prev_interval_start"]) == ("week", "2026-11-23T00:00:00+00:00")

    def test_an_invalid_cron_is_an_error_naming_it(self, catalog_url, use_catalog, capsys):
        use_catalog(catalog_url)
        status = cli(
            ["catalog", "report", "x", "--project", "p", "--slot", "2026-11-28T00:00:00+00:00", "--cron", "every day"]
        )
        assert status != 0 and "'every day'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        ["catalog", "report", "orders_raw", "--project", "p", "--slot", "2026-11-28T00:00:00+00:00"],
        ["catalog", "show", "orders_raw", "--project", "p"],
        ["stale"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_an_unknown_catalog_connection_exits_1_naming_it(command, catalog_url, use_catalog, capsys):
    use_catalog(catalog_url)
    assert cli(["--conn-id", "nope", *command]) == 1
    assert "catalog connection 'nope' is not defined" in capsys.readouterr().err


@pytest.mark.postgres
class TestDbUpgrade:
    def test_db_upgrade_migrates_a_postgresql_catalog_from_the_command_line(self, pg_url, tmp_path):
        env_conn = json.dumps({"conn_type": "leastaction_catalog", "extra": {"url": pg_url}})
        import os

        env = {**os.environ, "AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT": env_conn}
        out = subprocess.run(
            [sys.executable, "-m", "airflow_leastaction.cli", "db", "upgrade"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        (head,) = head_revisions()
        assert f"is at {head}" in out.stdout
        current = subprocess.run(
            [sys.executable, "-m", "airflow_leastaction.cli", "db", "current"], env=env, capture_output=True, text=True
        )
        assert current.returncode == 0, current.stdout + current.stderr
