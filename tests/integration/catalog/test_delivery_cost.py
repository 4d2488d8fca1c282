"""What one delivered outcome costs the catalog while no re-run on late arrival waits on it: its record,
and one look for a late-arrival row to sweep. Counts, not timings: every delivery of every task pays them."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.catalog.audit import RerunOnArrival
from airflow_leastaction.catalog.outcomes import SlotEvent, deliver
from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.gating.engine import ALL, DependencyType, Judgement, decide_at_deadline
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.statement_count import StatementCounter

DAY = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
CRON = "0 0 * * *"
UP = TaskIdentity("feed_fr", "feeds")
#: The statements of one delivered success, BEGIN left out (SQLite's own, issued for every transaction):
#: the success record, then the sweep's one look for a late-arrival row.
STATEMENTS = {
    ("plain", "sqlite"): 9,
    ("plain", "postgresql"): 10,
    ("gated", "sqlite"): 10,
    ("gated", "postgresql"): 11,
}


def success(store, kind: str, day: int) -> SlotEvent:
    """A success as the listener delivers it: a plain task's, or a gated task's (it consumes its gate's
    decisions, written before)."""
    slot = DAY + dt.timedelta(days=day)
    run_id = f"scheduled__{day}"
    if kind == "plain":
        return SlotEvent("success", UP, slot, slot, meta=TaskMeta(cron=CRON), run_id=run_id)
    judged = [Judgement(UP.key, True, "feed_fr: ok", DependencyType.SUCCESS, final=True, upstream_slot=slot)]
    store.audit.record_decisions(AttemptKey("report", "load__gate", run_id), judged, downstream_slot=slot)
    meta = TaskMeta(cron=CRON, dag_id="report", task_id="load")
    consumer = AttemptKey("report", "load", run_id)
    identity = TaskIdentity("report.load", "report")
    return SlotEvent("success", identity, slot, slot, meta=meta, run_id=run_id, consumer=consumer,
                     gate_task_ids=["load__gate"])  # fmt: skip


def delivered(store, event: SlotEvent) -> list[str]:
    """The statements ``deliver`` sends for ``event``, BEGIN left out."""
    with StatementCounter(store.engine) as counter:
        assert deliver(event, store_factory=lambda: store) is not None
    return [s for s in counter.statements if not s.lstrip().startswith("BEGIN")]


def degraded_elsewhere(store) -> None:
    """A run of another DAG admitted degraded without feed_it, waiting to re-run when it lands."""
    it = TaskIdentity("feed_it", "feeds")
    judged = [Judgement(UP.key, True, "feed_fr: ok"), Judgement(it.key, False, "feed_it: not yet")]
    outcome = decide_at_deadline(ALL, judged, 1, "2026-11-02T06:00:00+00:00")
    gate = AttemptKey("country_report", "report__gate", "scheduled__1", -1, 1)
    store.audit.record_decisions(
        gate, outcome.judgements, downstream_slot=DAY, degraded=True, rerun=RerunOnArrival(("report",))
    )
    assert [row["state"] for row in store.late_arrivals.newest_first()] == ["waiting"]


@pytest.fixture(autouse=True)
def own_spool(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))


@pytest.mark.parametrize("kind", ["plain", "gated"])
def test_a_delivered_success_looks_for_a_late_arrival_in_one_statement_when_none_is_open(store, kind):
    deliver(success(store, kind, 0), store_factory=lambda: store)  # the task's row exists from now on
    statements = delivered(store, success(store, kind, 1))
    assert sum("la_late_arrival" in s for s in statements) == 1, statements
    assert len(statements) == STATEMENTS[kind, store.engine.dialect.name], statements


def test_a_late_arrival_waiting_on_something_else_adds_no_statement_to_a_delivery(store):
    degraded_elsewhere(store)
    deliver(success(store, "gated", 0), store_factory=lambda: store)
    statements = delivered(store, success(store, "gated", 1))
    assert sum("la_late_arrival" in s for s in statements) == 1, statements
    assert len(statements) == STATEMENTS["gated", store.engine.dialect.name], statements


def test_a_delivered_start_sends_no_late_arrival_statement(store):
    event = SlotEvent("running", UP, DAY, DAY, meta=TaskMeta(cron=CRON), run_id="scheduled__0")
    assert not any("la_late_arrival" in s for s in delivered(store, event))
