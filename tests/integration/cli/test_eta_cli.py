"""``airflow-leastaction eta`` against real catalogs: an Airflow task and its catalog parent, written with the
store's own operations at chosen instants; the answer in words and as JSON, and the refusals."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest

from airflow_leastaction.catalog.schema import utcnow
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.cli import main as cli
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from tests.helpers.cli_output import own_lines

UTC = dt.UTC
MIN = dt.timedelta(minutes=1)
DAY = dt.timedelta(days=1)
#: Slots of the days before today, and today's: the command's clock is the real one.
TODAY = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
PARIS_ZONE = ZoneInfo("Europe/Paris")


def paris_midnight(days_ago: int) -> dt.datetime:
    """A slot of the report's cron (midnight in Paris), in UTC."""
    day = utcnow().astimezone(PARIS_ZONE).date() - dt.timedelta(days=days_ago)
    return dt.datetime.combine(day, dt.time(0), PARIS_ZONE).astimezone(UTC)


PARIS = TaskMeta(cron="0 0 * * *", timezone="Europe/Paris", dag_id="shop", task_id="report")
ORDERS = TaskIdentity("orders", "ingest")
REPORT = airflow_task("shop", "report")


@pytest.fixture
def catalog(store, catalog_url, use_catalog):
    use_catalog(catalog_url)
    store.declare_parents(REPORT, PARIS, [ORDERS])
    for d in range(6, 0, -1):
        slot = TODAY - d * DAY
        store.record_running(ORDERS, slot, meta=TaskMeta(cron="0 0 * * *"), run_id=f"o{d}", at=slot + 280 * MIN)
        store.record_success(ORDERS, slot, meta=TaskMeta(cron="0 0 * * *"), run_id=f"o{d}", at=slot + 300 * MIN)
        mine = paris_midnight(d)
        store.record_running(REPORT, mine, meta=PARIS, run_id=f"r{d}", at=mine + 302 * MIN)
        store.record_success(REPORT, mine, meta=PARIS, run_id=f"r{d}", at=mine + 312 * MIN)
    return store


def test_the_next_slot_of_an_airflow_task_is_answered_as_json(catalog, capsys):
    assert cli(["eta", "shop.report", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    today = paris_midnight(0)
    assert (found["task"], found["slot"]) == (str(REPORT), today.isoformat())  # the first after the watermark
    assert (found["status"], found["runs"], found["skewed"]) == ("waiting", 6, 0)
    # The report's own usual time decides until its parent is overdue; then the parent does.
    parent = TODAY if today >= TODAY else TODAY - DAY
    assert found["critical_path"] in ([], [{"task": str(ORDERS), "slot": parent.isoformat()}])
    assert found["line"].startswith("expected ")


def test_a_slot_named_is_answered_in_words_in_the_tasks_timezone(catalog, capsys):
    slot = paris_midnight(-1)
    assert cli(["eta", str(REPORT), "--slot", slot.isoformat()]) == 0
    first, *rest = capsys.readouterr().out.splitlines()
    assert first.startswith(f"{REPORT} slot ") and "Europe/Paris" in first
    assert "expected " in first and ", p90 " in first
    assert rest[-1] == "  from 6 successful runs"


def test_a_completed_slot_says_when_it_was_done(catalog, capsys):
    yesterday = paris_midnight(1)
    assert cli(["eta", "shop.report", "--slot", yesterday.isoformat(), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["status"], found["median"]) == ("complete", (yesterday + 312 * MIN).isoformat())


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["eta", "shop.unknown"], "argument TASK: 'shop.unknown' is not in the catalog"),
        (["eta", "ingest/adhoc"], "argument TASK: 'ingest/adhoc' is ad hoc (no schedule): name its slot with --slot"),
    ],
)
def test_a_task_the_command_cannot_answer_for_is_one_error_line_and_status_2(catalog, capsys, argv, named):
    catalog.register_task(TaskIdentity("adhoc", "ingest"), TaskMeta())
    assert cli(argv) == 2
    err = own_lines(capsys.readouterr().err)
    assert err == [f"error: {named}"]


@pytest.mark.parametrize("text", ["report", "shop.", ".report", "shop report.x", "a/"])
def test_a_task_written_neither_way_is_refused_while_parsing(text, capsys):
    assert cli(["eta", text]) == 2
    [line] = own_lines(capsys.readouterr().err)
    assert line.startswith("error: argument task: ") and "DAG.TASK" in line
