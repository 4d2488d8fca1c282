"""Expected times in the UI, on SQLite and PostgreSQL: ``/api/eta``, the catalog page's next slot, the card of
a waiting gate (its run read from Airflow's own database), and what a reader of some DAGs only is shown."""

from __future__ import annotations

import datetime as dt
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.catalog.store import TaskMeta, utcnow
from airflow_leastaction.expectations.reads import expectations_with_dags, node_key
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_dag
from airflow_leastaction.www import airflow_state
from airflow_leastaction.www.attempts import AttemptView
from airflow_leastaction.www.declared import Gate
from airflow_leastaction.www.expected import WITHHELD, expect_cards, withhold
from airflow_leastaction.www.links import AirflowLinks
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.queries import DagScope
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.verdict_card import verdict_card
from airflow_leastaction.www.verdicts import Verdict
from tests.unit.www.test_verdict_card import request

UTC = dt.UTC
P = "/leastaction"
MIN = dt.timedelta(minutes=1)
DAY = dt.timedelta(days=1)
#: Days in the future, so that "now" (the real clock) is before every expected time: answers are stable.
SLOT = (utcnow() + 30 * DAY).replace(hour=0, minute=0, second=0, microsecond=0)
DAILY = "0 0 * * *"
ORDERS = TaskIdentity("ingest_daily.orders", "airflow")
#: A task of the DAG whose real run the card test reads (the run completes ``publish``, never ``report``).
REPORT = TaskIdentity("asc_prices_producer.report", "airflow")
#: Times of day on another day than today are shown with their month and day.
ON = f"{SLOT:%m-%d} "


def meta(identity: TaskIdentity) -> TaskMeta:
    dag_id, _, task_id = identity.name.partition(".")
    return TaskMeta(cron=DAILY, dag_id=dag_id, task_id=task_id)


@pytest.fixture
def chain(store):
    """Six days of history: orders done at 04:55, the report 20 minutes after it."""
    store.declare_parents(REPORT, meta(REPORT), [ORDERS])
    for d in range(6, 0, -1):
        slot = SLOT - d * DAY
        for identity, start, end in ((ORDERS, 285, 295), (REPORT, 300, 315)):
            store.record_running(identity, slot, meta=meta(identity), run_id=f"r{d}", at=slot + start * MIN)
            store.record_success(identity, slot, meta=meta(identity), run_id=f"r{d}", at=slot + end * MIN)
    return store


def test_the_api_answers_when_a_slot_is_expected_and_what_decides_it(client, chain):
    response = client.get(P + "/api/eta", params={"dag_id": "asc_prices_producer", "task_id": "report",
                                                  "slot": SLOT.isoformat()})  # fmt: skip
    assert response.status_code == 200, response.text
    found = response.json()
    assert (found["task"], found["status"], found["runs"]) == (str(REPORT), "waiting", 6)
    assert dt.datetime.fromisoformat(found["median"]) == SLOT + 315 * MIN
    assert found["line"] == f"expected {ON}05:15, p90 {ON}05:15, usually done {ON}05:15, not started"


def test_the_api_takes_the_next_slot_not_yet_complete_by_default(client, chain):
    found = client.get(P + "/api/eta", params={"dag_id": "asc_prices_producer", "task_id": "report"}).json()
    assert dt.datetime.fromisoformat(found["slot"]) == SLOT  # the first after the watermark (yesterday's slot)


@pytest.mark.parametrize(
    ("query", "status", "named"),
    [
        ({"dag_id": "asc_prices_producer", "task_id": "nothing"}, 404, "'nothing'"),
        ({"dag_id": "a b", "task_id": "report"}, 422, "dag_id"),
        ({"dag_id": "asc_prices_producer", "task_id": ""}, 422, "task_id"),
        ({"dag_id": "asc_prices_producer", "task_id": "report", "slot": "9999-12-31T23:59:59-14:00"}, 422, "slot"),
        ({"dag_id": "asc_prices_producer", "task_id": "report", "slot": "yesterday"}, 422, "slot"),
        ({"task_id": "report"}, 422, "dag_id"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field(client, chain, query, status, named):
    response = client.get(P + "/api/eta", params=query)
    assert response.status_code == status, response.text
    assert named in str(response.json()["detail"])


IDS = st.one_of(
    st.sampled_from(["asc_prices_producer", "report", "ingest_daily", "orders", "", " ", "%", "a" * 251, "é", "\x00"]),
    st.text(alphabet=string.ascii_letters + "._-/ <>", max_size=30),
)
SLOTS = st.one_of(
    st.none(),
    st.sampled_from(["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59", "2024-02-30", "{MAP_INDEX}", "", "x"]),
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)).map(dt.datetime.isoformat),
)


def test_no_generated_query_of_the_api_answers_5xx(client, chain):
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(dag_id=IDS, task_id=IDS, slot=SLOTS)
    def check(dag_id, task_id, slot):
        query = {"dag_id": dag_id, "task_id": task_id, **({"slot": slot} if slot is not None else {})}
        response = client.get(P + "/api/eta", params=query)
        assert response.status_code in (200, 403, 404, 422), (query, response.status_code, response.text[:300])

    check()


def test_the_catalog_page_shows_each_tasks_next_slot_and_when_it_is_expected(client, chain):
    html = client.get(P + "/catalog").text
    assert f"expected {ON}05:15, p90 {ON}05:15, usually done {ON}05:15, not started" in html
    assert f"next {SLOT:%m-%d} 00:00" in html


def test_a_reader_of_some_dags_is_not_told_the_names_of_the_others_tasks(chain):
    chain.record_running(ORDERS, SLOT, meta=meta(ORDERS), run_id="late", at=SLOT - DAY)  # orders runs late
    now = SLOT + 330 * MIN
    found, dags = expectations_with_dags(chain, [(REPORT, SLOT)], now)
    everything = found[(str(REPORT), SLOT)]
    assert everything.critical_path == (node_key(ORDERS, SLOT),)
    assert everything.reason.startswith(f"waiting on {ORDERS} (")
    mine = withhold(everything, dags, DagScope(frozenset({"asc_prices_producer"})))
    assert mine.reason.startswith(f"waiting on {WITHHELD} (") and str(ORDERS) not in mine.reason
    assert mine.critical_path == (f"{WITHHELD}@{SLOT.isoformat()}",)
    assert withhold(everything, dags, DagScope(None)) == everything


def test_a_waiting_gates_card_says_when_the_task_it_admits_is_expected(chain, catalog_url, use_catalog, run_dag):
    use_catalog(catalog_url)
    run = run_dag("asc_prices_producer", SLOT)  # a real run in Airflow's database: its slot is SLOT
    assert airflow_state.run_slots([("asc_prices_producer", run.run_id)]) == {("asc_prices_producer", run.run_id): SLOT}
    key = AttemptKey("asc_prices_producer", "report__gate", run.run_id, -1, 1)
    gate = Gate("gate", "report__gate", ("report",))
    view = AttemptView(key, [], Verdict("waiting", 0, 1, "ALL of 1"), gate)
    decided = AttemptView(key, [], Verdict("admitted", 1, 1, "ALL of 1"), gate)
    now = SLOT - DAY
    expect_cards(CatalogReads(chain.engine), [view, decided], Clock(), now, DagScope(None))
    assert view.expected.startswith(f"expected {ON}05:15, p90 {ON}05:15") and decided.expected == ""
    card = verdict_card(view, AirflowLinks(), Clock(), now, request(), lambda task_id: None)
    assert '<div class="expected">expected ' in card


def test_a_waiting_run_gates_card_says_when_the_run_it_admits_is_expected(chain, catalog_url, use_catalog, run_dag):
    """A DAG's run gate (``dag_run_condition``) admits the whole run: its card's line is the run's, the DAG's
    catalog identity, read from the runs the listener recorded."""
    use_catalog(catalog_url)
    whole_run = airflow_dag("asc_prices_producer")
    dag_meta = TaskMeta(cron=DAILY, dag_id="asc_prices_producer")
    for d in range(6, 0, -1):
        slot = SLOT - d * DAY
        chain.record_running(whole_run, slot, meta=dag_meta, run_id=f"r{d}", at=slot + 240 * MIN)
        chain.record_success(whole_run, slot, meta=dag_meta, run_id=f"r{d}", at=slot + 330 * MIN)
    run = run_dag("asc_prices_producer", SLOT)  # the listener records the run done; it is run again:
    chain.record_running(whole_run, SLOT, meta=dag_meta, run_id=run.run_id, at=SLOT + 240 * MIN)
    key = AttemptKey("asc_prices_producer", "leastaction_run_gate", run.run_id, -1, 1)
    view = AttemptView(key, [], Verdict("waiting", 0, 1, "ALL of 1"), Gate("run gate", "leastaction_run_gate", ()))
    now = SLOT - DAY
    expect_cards(CatalogReads(chain.engine), [view], Clock(), now, DagScope(None))
    assert view.expected.startswith(f"expected {ON}05:30, p90 {ON}05:30"), view.expected  # 04:00 + 90 min
    card = verdict_card(view, AirflowLinks(), Clock(), now, request(), lambda task_id: None)
    assert '<div class="expected">expected ' in card
