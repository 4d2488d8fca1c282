"""``airflow-leastaction plan`` against real catalogs: a diamond of Airflow tasks under a root, and a
task outside Airflow that declared the bottom of the diamond its parent.

The catalog is written as the provider writes it: each consumer run records its gate decisions and, with
its success, what it consumed (``record_decisions``, ``record_success`` with the consumer's attempt); the
external task reports its completions with the parent it reads.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex

import pytest

from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.cli import main as cli
from airflow_leastaction.refs import airflow_task
from tests.helpers.cli_output import own_lines
from tests.helpers.consuming_runs import run

UTC = dt.UTC
DAYS = [dt.datetime(2026, 11, d, tzinfo=UTC) for d in (16, 17, 18)]
DAILY = "0 0 * * *"
ROOT = airflow_task("plan_raw", "load")
LEFT, RIGHT = airflow_task("plan_left", "enrich"), airflow_task("plan_right", "score")
BOTTOM = airflow_task("plan_report", "build")
OUTSIDE = ("finance_export", "finance")


@pytest.fixture
def diamond(store, catalog_url, use_catalog):
    use_catalog(catalog_url)
    for slot in DAYS:
        run(store, ROOT, slot)
        run(store, LEFT, slot, [ROOT])
        run(store, RIGHT, slot, [ROOT])
        run(store, BOTTOM, slot, [LEFT, RIGHT])
        report_completion(*OUTSIDE, slot, cron=DAILY, store=store, parents=[BOTTOM])
    return store


def plan(*extra: str) -> list[str]:
    return ["plan", "--task", str(ROOT), "--from", DAYS[0].isoformat(), "--to", DAYS[1].isoformat(), *extra]


def test_the_plan_lists_every_consumer_run_in_waves_parents_first(diamond, capsys):
    assert cli(plan("--json")) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["task_runs"], found["stale_runs"]) == (10, 8)
    assert [[t["task"] for t in wave] for wave in found["waves"]] == [
        [str(ROOT)],
        [str(LEFT), str(RIGHT)],
        [str(BOTTOM)],
        ["finance/finance_export"],
    ]
    for wave in found["waves"]:
        for t in wave:
            assert t["slots"] == [d.isoformat() for d in DAYS[:2]], t
    (outside,) = found["waves"][3]
    assert (outside["external"], outside["consumes"]) == (True, [str(BOTTOM)])
    assert outside["owner_runs"] == [
        f"airflow-leastaction catalog report finance_export --project finance --slot {d.isoformat()} --repair"
        for d in DAYS[:2]
    ]
    bottom = found["waves"][2][0]
    assert (bottom["dag_id"], bottom["task_id"], bottom["consumes"]) == (
        "plan_report",
        "build",
        [str(LEFT), str(RIGHT)],
    )


def test_the_plan_reads_as_text(diamond, capsys):
    assert cli(plan()) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"re-running {ROOT} from {DAYS[0].isoformat()} to {DAYS[1].isoformat()}: 10 task runs in 4 waves "
        f"(2 of {ROOT}, 8 stale consumer runs)"
    )
    assert f"  {LEFT} (DAG plan_left): 2 run(s), {DAYS[0].isoformat()} .. {DAYS[1].isoformat()}" in out
    assert out[-1] == (
        f"  airflow-leastaction catalog report finance_export --project finance --slot {DAYS[1].isoformat()} --repair"
    )


def test_the_owners_command_pasted_publishes_the_repair_and_keeps_the_schedule(diamond, capsys):
    report_completion("finance_export", "finance", DAYS[0], cron="0 6 * * 1", timezone="Europe/Paris", store=diamond)
    assert cli(plan("--json")) == 0
    (outside,) = json.loads(capsys.readouterr().out)["waves"][3]
    assert cli(shlex.split(outside["owner_runs"][0])[1:]) == 0
    assert capsys.readouterr().out.strip().endswith("published revision 2")
    shown = cli(["catalog", "show", "finance_export", "--project", "finance"])
    task = json.loads(capsys.readouterr().out)
    assert (shown, task["cron"], task["timezone"]) == (0, "0 6 * * 1", "Europe/Paris")


def test_a_repeated_report_without_a_schedule_keeps_the_tasks_schedule(diamond, capsys):
    report = ["catalog", "report", "finance_export", "--project", "finance", "--slot", DAYS[0].isoformat()]
    assert cli(report) == 0
    assert "already recorded at revision 1" in capsys.readouterr().out
    assert cli(["catalog", "show", "finance_export", "--project", "finance"]) == 0
    assert json.loads(capsys.readouterr().out)["cron"] == DAILY


def test_a_repair_with_its_own_run_id_is_refused(diamond, capsys):
    report = ["catalog", "report", "finance_export", "--project", "finance", "--slot", DAYS[0].isoformat()]
    assert cli([*report, "--repair", "--run-id", "r2"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_plan_from_the_middle_touches_only_what_is_below(diamond, capsys):
    assert cli(["plan", "--task", str(LEFT), "--from", DAYS[2].isoformat(), "--to", DAYS[2].isoformat(), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [[t["task"] for t in wave] for wave in found["waves"]] == [
        [str(LEFT)],
        [str(BOTTOM)],
        ["finance/finance_export"],
    ]
    assert found["task_runs"] == 3


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--task", "airflow/nope.task", "--from", "2026-11-16T00:00:00+00:00", "--to", "2026-11-17T00:00:00+00:00"],
            "no task airflow/nope.task in the catalog",
        ),
        (
            ["--task", str(ROOT), "--from", "2026-11-17T00:00:00+00:00", "--to", "2026-11-16T00:00:00+00:00"],
            "empty range: --from 2026-11-17T00:00:00+00:00 is after --to 2026-11-16T00:00:00+00:00",
        ),
        (
            ["--task", str(ROOT), "--from", "2026-12-01T00:00:00+00:00", "--to", "2026-12-02T00:00:00+00:00"],
            "empty range: airflow/plan_raw.load has no slot",
        ),
        (
            ["--task", "plan_raw.load", "--from", "2026-11-16T00:00:00+00:00", "--to", "2026-11-17T00:00:00+00:00"],
            "argument --task: 'plan_raw.load': expected a catalog task written project/name",
        ),
        (
            ["--task", str(ROOT), "--from", "2026-11-16", "--to", "2026-11-17T00:00:00+00:00"],
            "argument --from: '2026-11-16' has no timezone offset",
        ),
        (
            ["--task", str(ROOT), "--from", "0001-01-01T00:00:00+14:00", "--to", "2026-11-17T00:00:00+00:00"],
            "argument --from: '0001-01-01T00:00:00+14:00' is out of range",
        ),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(diamond, capsys, args, words):
    assert cli(["plan", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = own_lines(captured.err)
    assert line.startswith("error: ") and words in line


def test_apply_against_an_api_it_cannot_reach_starts_nothing_and_exits_1(diamond, capsys, monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT",
        json.dumps({"conn_type": "http", "host": "http://127.0.0.1:9", "login": "admin", "password": "admin"}),
    )
    assert cli(plan("--apply")) == 1
    captured = capsys.readouterr()
    assert "wave 1: backfilling" not in captured.out
    (line,) = own_lines(captured.err)
    assert line.startswith("error: Airflow's API at http://127.0.0.1:9 cannot be reached")
