"""How the pages' heaviest reads find their rows: by index ranges the size of what they show, whatever the
size of the audit trail. The query plans of both catalogs are read (PostgreSQL's with sequential scans
priced out, as its planner would price a table of a million rows against this test's few)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import event, text

from airflow_leastaction.catalog.schema import consumption
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.www.queries import ConsumptionFilter, DecisionFilter
from airflow_leastaction.www.reads import CatalogReads

UTC = dt.UTC
AT = dt.datetime(2026, 11, 20, 3, tzinfo=UTC)


def plans(engine, read, seqscan: bool = False) -> list[str]:
    """The query plan lines of every SELECT ``read()`` sends (on PostgreSQL, sequential scans priced out
    unless ``seqscan``)."""
    captured = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().startswith("SELECT"):
            captured.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        read()
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert captured, "the read sent no SELECT"
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            return [row[-1] for s, p in captured for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + s, p)]
        conn.exec_driver_sql(f"SET enable_seqscan = {'on' if seqscan else 'off'}")
        return [row[0] for s, p in captured for row in conn.exec_driver_sql("EXPLAIN " + s, p)]


def index_conditions(steps: list[str], index: str) -> list[str]:
    """The search terms of each use of ``index``: SQLite's ``(...)`` of the step, PostgreSQL's Index Cond."""
    found = []
    for i, step in enumerate(steps):
        if index in step:
            if "USING" in step:  # SQLite: "SEARCH t USING INDEX ix (a=? AND b<?)"
                found.append(step)
            else:  # PostgreSQL: the next "Index Cond:" line of this node
                found.append(next((s for s in steps[i + 1 :] if "Index Cond" in s), ""))
    return found


def test_an_attempts_first_decisions_are_the_start_of_its_index_range(store):
    attempts = [AttemptKey("orders", f"t{i}__gate", "r1", -1, 1) for i in range(3)]
    for key in attempts:
        judged = [Judgement(f"task:up_{n}", n % 2 == 0, "seeded") for n in range(30)]
        store.audit.record_decisions(key, judged, downstream_slot=AT, at=AT)
    for run in range(20):  # a busy gate's attempts around them, and the planner told of them
        busy = [Judgement(f"task:up_{n}", True, "seeded") for n in range(200)]
        store.audit.record_decisions(AttemptKey("busy", "t__gate", f"r{run}", -1, 1), busy, downstream_slot=AT, at=AT)
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    reads = CatalogReads(store.engine)
    steps = plans(store.engine, lambda: reads.attempt_rows(attempts, limit=10))
    lookups = index_conditions(steps, "ix_la_gate_decision_attempt")
    if store.engine.dialect.name == "sqlite":
        # The rows: each attempt's range up to its tenth id, looked up by the attempt and the id.
        assert any("attempt" in s and "id<?" in s for s in lookups), steps
    else:
        # Each attempt's range from its start, read (LATERAL) until its LIMIT of ten rows.
        assert any("attempt = attempt.attempt" in s for s in lookups), steps
        limit = next(i for i, s in enumerate(steps) if s.strip().startswith("->  Limit"))
        assert "Index Scan using ix_la_gate_decision_attempt" in steps[limit + 1], steps
    assert not any(s.startswith("SCAN la_gate_decision") or "Seq Scan on la_gate_decision" in s for s in steps)
    assert len(reads.attempt_rows(attempts, limit=10)) == 30


def consumers(store) -> None:
    """A busy consumer's long history among many consumers of one record each, as the planner sees them."""
    (decision,) = store.audit.record_decisions(
        AttemptKey("busy", "t", "r1", -1, 1), [Judgement("task:up", True, "seeded")], downstream_slot=AT, at=AT
    )
    rows = [
        {
            "decision_id": decision,
            "dag_id": "busy" if i % 2 else f"dag{i % 1000}",
            "task_id": f"t{i % 5}",
            "run_id": "r1",
            "attempt": 1,
            "downstream_slot": AT - dt.timedelta(days=i // 1000),
            "dependency": "task:busy_up" if i % 2 else f"task:up_{i}",
            "upstream_run_pk": 42 if i % 2 else i % 1000,
            "upstream_revision": 1,
            "consumed_at": AT + dt.timedelta(seconds=i),
        }
        for i in range(4000)
    ]
    with store.engine.begin() as conn:
        conn.execute(consumption.insert(), rows)
        conn.execute(text("ANALYZE"))


def test_a_staleness_check_looks_up_the_consumers_matching_records_only(store):
    consumers(store)
    reads = CatalogReads(store.engine)
    steps = plans(store.engine, lambda: reads.consumption(ConsumptionFilter(stale_only=True), None, 50), True)
    checks = index_conditions(steps, "ix_la_consumption_downstream")
    assert checks, steps
    # Dependency and upstream slot record are index terms, not a filter over the consumer's slot (the
    # revision is the last column: the newest one the consumer took is the end of that range).
    for term in ("dependency", "upstream_run_pk"):
        assert all(term in s for s in checks), (term, checks)
    # No check walks the consumer's history by another index (PostgreSQL's planner, estimating one record
    # per consumer, preferred the smaller (DAG, task, time) index and filtered a busy consumer's thousands).
    lookups = [s for s in steps if "SEARCH since" in s or " on la_consumption since" in s]
    assert lookups and all("ix_la_consumption_downstream" in s for s in lookups), lookups


def test_one_task_instances_decisions_are_the_start_of_its_runs_range(store):
    for run in range(12):  # a busy DAG: every task judged 100 dependencies in every run
        for task in range(5):
            judged = [Judgement(f"task:up_{n}", n % 3 > 0, "seeded") for n in range(100)]
            key = AttemptKey("busy", f"t{task}__gate", f"r{run}", -1, 1)
            store.audit.record_decisions(key, judged, downstream_slot=AT, at=AT + dt.timedelta(hours=run, minutes=task))
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    reads = CatalogReads(store.engine)
    f = DecisionFilter(dag_id="busy", task_id="t2", gate_task_id="t2__gate", run_id="r4", map_index=-1)
    steps = plans(store.engine, lambda: reads.decisions(f, None, 50))
    # The run's range, newest first: no sort of the task's or the attempt's decisions before the first row.
    assert index_conditions(steps, "ix_la_gate_decision_run_time"), steps
    assert not any("TEMP B-TREE" in s or s.lstrip().startswith("Sort") for s in steps), steps
    rows = reads.decisions(f, None, 50).rows
    assert len(rows) == 50 and {(r["task_id"], r["run_id"]) for r in rows} == {("t2__gate", "r4")}


def test_a_dags_degraded_runs_are_looked_up_among_the_missing_decisions(store):
    for run in range(40):  # a busy DAG never admitted degraded
        judged = [Judgement(f"task:up_{n}", True, "seeded") for n in range(100)]
        store.audit.record_decisions(AttemptKey("busy", "t__gate", f"r{run}", -1, 1), judged, downstream_slot=AT, at=AT)
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    reads = CatalogReads(store.engine)
    steps = plans(store.engine, lambda: reads.degraded_runs("busy"))
    # The range of the result index that holds MISSING decisions, not the DAG's every decision.
    assert index_conditions(steps, "ix_la_gate_decision_result_time"), steps
    assert not index_conditions(steps, "ix_la_gate_decision_dag_time"), steps
    assert reads.degraded_runs("busy") == []
