"""``plan --apply`` keeps the waves' order: a DAG downstream of a task outside Airflow waits for that task's
new revision, a wave whose backfill finished with failed runs stops the plan, and DAGs that consume from
each other both ways are refused (exit 1) before anything starts. Real catalogs on both backends; Airflow's
backfill API answered from memory (``tests/helpers/backfill_api.py``)."""

from __future__ import annotations

import datetime as dt
import json
import shlex

import pytest

from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.cli import main as cli
from airflow_leastaction.exceptions import PlanApplyError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.reruns.apply import apply_plan
from airflow_leastaction.reruns.plan_reads import make_plan, published_revisions
from tests.helpers.backfill_api import BackfillApiStandIn
from tests.helpers.cli_output import own_lines
from tests.helpers.consuming_runs import run

UTC = dt.UTC
DAYS = [dt.datetime(2026, 11, d, tzinfo=UTC) for d in (16, 17)]
DAILY = "0 0 * * *"
LOAD, BUILD = airflow_task("apply_load", "load"), airflow_task("apply_build", "build")
OUTSIDE = TaskIdentity("warehouse_merge", "dwh")


@pytest.fixture
def through_outside(store, catalog_url, use_catalog):
    """load (a DAG) -> warehouse_merge (outside Airflow) -> build (a DAG)."""
    use_catalog(catalog_url)
    for slot in DAYS:
        run(store, LOAD, slot)
        report_completion(OUTSIDE.name, OUTSIDE.project, slot, cron=DAILY, store=store, parents=[LOAD])
        run(store, BUILD, slot, [OUTSIDE])
    return store


def revisions_of(store, plan):
    return lambda t: published_revisions(store, t.pk, plan.runs[t.pk])


def test_a_dag_downstream_of_an_outside_task_is_backfilled_after_its_owner_published_again(through_outside):
    store = through_outside
    plan = make_plan(store, LOAD, DAYS[0], DAYS[1])
    events: list[str] = []
    api = BackfillApiStandIn(on_backfill=lambda dag_id: events.append(f"backfill {dag_id}"))

    def say(line: str) -> None:
        if line.lstrip().startswith("airflow-leastaction catalog report"):  # the owner runs what is printed
            events.append(f"owner {line.split('--slot ')[1].split()[0]}")
            assert cli(shlex.split(line)[1:]) == 0

    apply_plan(plan, api, say, revisions_of(store, plan), poll=0)
    assert events == [
        "backfill apply_load",
        f"owner {DAYS[0].isoformat()}",
        f"owner {DAYS[1].isoformat()}",
        "backfill apply_build",
    ]


class OwnerAway(Exception):
    pass


def test_a_dag_downstream_of_an_outside_task_is_not_backfilled_while_its_owner_has_not_published(through_outside):
    store = through_outside
    plan = make_plan(store, LOAD, DAYS[0], DAYS[1])
    api, looks = BackfillApiStandIn(), []

    def revisions(t):
        looks.append(t.identity)
        if len(looks) > 5:
            raise OwnerAway
        return published_revisions(store, t.pk, plan.runs[t.pk])

    with pytest.raises(OwnerAway):
        apply_plan(plan, api, lambda line: None, revisions, poll=0)
    assert [dag_id for dag_id, _, _ in api.started] == ["apply_load"]


def test_a_wave_whose_backfill_finished_with_failed_runs_stops_the_plan(store, catalog_url, use_catalog):
    use_catalog(catalog_url)
    for slot in DAYS:
        run(store, LOAD, slot)
        run(store, BUILD, slot, [LOAD])
    plan = make_plan(store, LOAD, DAYS[0], DAYS[1])
    api = BackfillApiStandIn(failing={"apply_load": {DAYS[1]}})
    with pytest.raises(PlanApplyError, match="wave 1 finished with failed runs .apply_load backfill__2026-11-17"):
        apply_plan(plan, api, lambda line: None, revisions_of(store, plan), poll=0)
    assert [dag_id for dag_id, _, _ in api.started] == ["apply_load"]
    assert PlanApplyError.exit_status == 1


def test_dags_that_consume_from_each_other_are_refused_with_exit_1_before_anything_starts(
    store, catalog_url, use_catalog, capsys, monkeypatch
):
    use_catalog(catalog_url)
    first, mid, second = (
        airflow_task("apply_ca", "first"),
        airflow_task("apply_cb", "mid"),
        airflow_task("apply_ca", "second"),
    )
    for slot in DAYS:
        run(store, first, slot)
        run(store, mid, slot, [first])
        run(store, second, slot, [mid])
    monkeypatch.setenv(
        "AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT",
        json.dumps({"conn_type": "http", "host": "http://127.0.0.1:9", "login": "admin", "password": "admin"}),
    )
    args = ["plan", "--task", str(first), "--from", DAYS[0].isoformat(), "--to", DAYS[1].isoformat(), "--apply"]
    assert cli(args) == 1
    (line,) = own_lines(capsys.readouterr().err)
    assert line.startswith("error: the plan's DAGs cannot be backfilled one after another")


def test_each_wave_says_what_it_backfills_and_what_it_waits_for(through_outside):
    store = through_outside
    plan = make_plan(store, LOAD, DAYS[0], DAYS[1])
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if line.lstrip().startswith("airflow-leastaction catalog report"):
            assert cli(shlex.split(line)[1:]) == 0

    apply_plan(plan, BackfillApiStandIn(), say, revisions_of(store, plan), poll=0)
    assert [line for line in said if line.startswith("wave ")] == [
        "wave 1: backfilling apply_load",
        f"wave 2: waiting for {OUTSIDE}",
        "wave 3: backfilling apply_build",
    ]
