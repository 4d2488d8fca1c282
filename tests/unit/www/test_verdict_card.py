"""A verdict card escapes everything it shows: whatever text the catalog holds (task and run ids, reasons,
dependency names, conditions), no tag of it reaches the page."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.run_conditions.model import Dependency
from airflow_leastaction.www.attempts import AttemptView
from airflow_leastaction.www.declared import Gate
from airflow_leastaction.www.links import AirflowLinks
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.routers.decisions import gated_by
from airflow_leastaction.www.verdict_card import verdict_card
from airflow_leastaction.www.verdicts import Verdict

TAG = "<b id=x>"
NOW = dt.datetime(2026, 12, 5, tzinfo=dt.UTC)
HOSTILE = st.sampled_from([TAG, f"a{TAG}", f'"{TAG}', f"task:{TAG}", f"{TAG}__gate"])


def request() -> Request:
    scope = {"type": "http", "method": "GET", "path": "/leastaction/decisions", "root_path": "",
             "query_string": b"dag=x", "headers": [(b"host", b"h")], "scheme": "http", "server": ("h", 80)}  # fmt: skip
    return Request(scope)


def row(key: AttemptKey, dependency: str, text: str) -> dict:
    return {"id": 1, "dag_id": key.dag_id, "run_id": key.run_id, "map_index": key.map_index,
            "dependency": dependency, "dependency_type": text, "result": text, "reason": text,
            "upstream_slot": NOW, "upstream_revision": 1, "upstream_run_id": text, "upstream_dag_id": text,
            "upstream_task_id": text}  # fmt: skip


@given(
    dag=HOSTILE, task=HOSTILE, run=HOSTILE, text=HOSTILE, outcome=st.sampled_from(["admitted", "skipped", "waiting"]),
    kind=st.sampled_from(["gate", "sensor", "native", "run gate"]), rows=st.integers(0, 2),
)  # fmt: skip
def test_no_text_of_the_catalog_reaches_the_page_as_markup(dag, task, run, text, outcome, kind, rows):
    key = AttemptKey(dag, task, run, -1, 1)
    verdict = Verdict(outcome, 1, 3, text, at=NOW, since=NOW, deadline=NOW, next_look=NOW, why=text)
    gate = Gate(kind, task, (text,), dependencies=(Dependency(text),))
    view = AttemptView(key, [row(key, text, text) for _ in range(rows)], verdict, gate, expected=text)
    card = verdict_card(view, AirflowLinks(), Clock(), NOW, request(), gated_by)
    assert TAG not in card
    assert "&lt;b id=x&gt;" in card
    assert card.count("<section") == card.count("</section>") == 1


def test_a_waiting_card_shows_its_expected_time_line_and_a_card_without_one_none():
    key = AttemptKey("shop", "report__gate", "scheduled__1", -1, 1)
    gate = Gate("gate", "report__gate", ("report",))
    line = "expected 05:40, p90 06:10, waiting on ingest/orders (usually done 04:55, not started)"
    waiting = AttemptView(key, [], Verdict("waiting", 0, 1, "ALL of 1"), gate, expected=line)
    card = verdict_card(waiting, AirflowLinks(), Clock(), NOW, request(), gated_by)
    assert f'<div class="expected">{line}</div>' in card
    plain = AttemptView(key, [], Verdict("waiting", 0, 1, "ALL of 1"), gate)
    assert 'class="expected"' not in verdict_card(plain, AirflowLinks(), Clock(), NOW, request(), gated_by)
