"""What a page of gate verdicts asks the databases for: a fixed number of statements whatever the number
of attempts it lists, on one catalog connection and one session of Airflow's database. Counts, not
timings: each statement and each connection is a round trip, and a page that grows one per attempt is
the regression these catch."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.gating.engine import Judgement
from tests.helpers.statement_count import StatementCounter

P = "/leastaction"
AT = dt.datetime(2026, 11, 20, 3, tzinfo=dt.UTC)


def airflow_engine():
    from airflow import settings

    return settings.engine


def gate_attempts(store, count: int) -> None:
    for i in range(count):
        key = AttemptKey("orders", f"t{i}__gate", "scheduled__1", -1, 1)
        judged = [Judgement(f"task:up_{n}", n % 2 == 0, "seeded") for n in range(12)]
        store.audit.record_decisions(key, judged, downstream_slot=AT, at=AT + dt.timedelta(minutes=i))


def requests_of(client, catalog_url, path: str) -> tuple[dict, dict]:
    """The statements (BEGIN left out) and connections of one request, to the catalog and to Airflow."""
    with StatementCounter(get_engine(catalog_url)) as catalog, StatementCounter(airflow_engine()) as airflow:
        response = client.get(P + path)
    assert response.status_code == 200, response.text
    # The login's own checks (a revoked token? the DAG's team?) are Airflow's, the same on every route, each
    # in a session of its own; which of them run depends on the minor (3.1 has no revoked tokens) and on
    # what Airflow has cached.
    login = ("revoked_token", "team")
    return (
        {"statements": [s for s in catalog.statements if s.strip() != "BEGIN"], "checkouts": catalog.checkouts},
        {
            "statements": [s for s in airflow.statements if not any(w in s for w in login)],
            "checkouts": airflow.checkouts,
            "login": sum(1 for s in airflow.statements if any(w in s for w in login)),
        },
    )


@pytest.mark.parametrize("path", ["/decisions", "/api/attempts", "/decisions?dag_id=orders"])
def test_a_page_of_verdicts_reads_each_thing_once_whatever_its_attempts(client, store, catalog_url, path):
    gate_attempts(store, 2)
    few = requests_of(client, catalog_url, path)
    gate_attempts(store, 8)
    many = requests_of(client, catalog_url, path)
    catalog, airflow = many
    assert len(catalog["statements"]) == len(few[0]["statements"])
    assert len(airflow["statements"]) == len(few[1]["statements"])
    # The readable DAGs, the decisions, their attempts' first rows, their summaries and their warnings
    # before a deadline: one connection.
    assert len(catalog["statements"]) == 5, catalog["statements"]
    assert catalog["checkouts"] == 1
    # Airflow's DAGs (the readable ones; the latest serialized versions), the attempts' task instances
    # and, on the HTML page, the gates waiting now; sessions: the login's, the readable DAGs', and one for
    # all of the verdicts' reads.
    assert len(airflow["statements"]) == (4 if path.startswith("/decisions") else 3), airflow["statements"]
    assert airflow["checkouts"] == airflow["login"] + 2


def test_one_task_instances_verdict_reads_its_attempt_once(client, store, catalog_url):
    gate_attempts(store, 3)
    catalog, airflow = requests_of(
        client, catalog_url, "/decisions?tab=task&dag_id=orders&task_id=t1&run_id=scheduled__1&map_index=-1"
    )
    assert len(catalog["statements"]) == 5 and catalog["checkouts"] == 1, catalog["statements"]
    assert len(airflow["statements"]) == 3 and airflow["checkouts"] == airflow["login"] + 2, airflow["statements"]
