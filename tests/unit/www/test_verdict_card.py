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


def warning(state: str, path: str, outcome: str) -> dict:
    """A deadline warning as the catalog keeps it: deadline 06:00, warned at 04:12, expected 06:40."""
    at = NOW + dt.timedelta(hours=4, minutes=12)
    return {"deadline": NOW + dt.timedelta(hours=6), "state": state, "created_at": at,
            "updated_at": at + dt.timedelta(minutes=50), "expected_p90": NOW + dt.timedelta(hours=6, minutes=40),
            "critical_path": path, "callback_outcome": outcome}  # fmt: skip


@given(
    dag=HOSTILE, task=HOSTILE, run=HOSTILE, text=HOSTILE, outcome=st.sampled_from(["admitted", "skipped", "waiting"]),
    kind=st.sampled_from(["gate", "sensor", "native", "run gate"]), rows=st.integers(0, 2),
    warned=st.sampled_from(["warned", "cleared"]),
)  # fmt: skip
def test_no_text_of_the_catalog_reaches_the_page_as_markup(dag, task, run, text, outcome, kind, rows, warned):
    key = AttemptKey(dag, task, run, -1, 1)
    verdict = Verdict(outcome, 1, 3, text, at=NOW, since=NOW, deadline=NOW, next_look=NOW, why=text)
    gate = Gate(kind, task, (text,), dependencies=(Dependency(text),))
    view = AttemptView(key, [row(key, text, text) for _ in range(rows)], verdict, gate, expected=text)
    view.warnings = [warning(warned, text, f"failed: {text}")]
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


def card_of(*warnings: dict, zone: str = "UTC") -> str:
    key = AttemptKey("sales", "report__gate", "scheduled__1", -1, 1)
    view = AttemptView(key, [], Verdict("waiting", 0, 1, "waiting"), None, warnings=list(warnings))
    return str(verdict_card(view, AirflowLinks(), Clock.named(zone), NOW, request(), gated_by))


class TestDeadlineWarnings:
    def test_a_warned_gate_says_its_deadline_when_it_warned_the_p90_and_what_it_waits_on(self):
        card = card_of(warning("warned", "feeds/orders", "called"), zone="Europe/Paris")
        assert 'data-state="warned"' in card
        assert "deadline 07:00 CET: warned at 05:12 CET, expected 07:40 CET (p90), waiting on feeds/orders" in card

    def test_a_cleared_warning_says_when_it_came_back_on_time(self):
        card = card_of(warning("cleared", "", "called"))
        assert "deadline 06:00 UTC: warned at 04:12 UTC, back on time at 05:02 UTC (expected 06:40 UTC, p90)" in card

    def test_a_callback_that_failed_is_said(self):
        card = card_of(warning("warned", "feeds/orders", "failed: ConnectionError: pager unreachable"))
        assert "the callback failed: ConnectionError: pager unreachable" in card

    def test_a_gate_without_warnings_shows_none(self):
        assert "deadline-warning" not in card_of()


def test_an_attempt_without_its_gate_admits_the_task_its_gate_id_names_and_a_bare_suffix_admits_itself():
    def admits(task_id):
        view = AttemptView(AttemptKey("shop", task_id, "r", -1, 1), [], Verdict("waiting", 0, 1, "waiting"), None)
        return view.gated

    assert admits("report__gate") == ("report",)
    assert admits("report") == ("report",)
    # A task named only "__gate" is no gate: the page names it, never an empty task.
    assert admits("__gate") == ("__gate",)
