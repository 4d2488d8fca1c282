"""What one gate attempt's audit trail costs the catalog: a constant number of statements, whatever the
number of dependencies, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import func, select

from airflow_leastaction.catalog.schema import consumption
from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.gating.engine import DependencyType, Judgement
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.run_conditions import day
from tests.helpers.statement_count import StatementCounter

DOWN = TaskIdentity("rc_cost.report", "rc_cost")


def judgements(n: int, up) -> list[Judgement]:
    return [
        Judgement(
            f"task:up_{i}",
            i % 2 == 0,
            f"up_{i}: {'ok' if i % 2 == 0 else 'not yet'}",
            DependencyType.SUCCESS,
            final=True,
            upstream_task_pk=up.task_pk,
            upstream_run_pk=up.run_pk,
            upstream_slot=day(1),
            upstream_revision=i,
        )
        for i in range(n)
    ]


def test_a_100_dependency_attempts_decisions_are_written_in_at_most_three_statements(store):
    up = store.record_success(TaskIdentity("rc_cost_up", "other-team"), day(1), run_id="u1")
    attempt = AttemptKey("rc_cost", "report__gate", "run-1")
    with StatementCounter(store.engine) as counter:
        ids = store.audit.record_decisions(attempt, judgements(100, up), downstream_slot=day(1), bypass_reason="warn")
    assert 1 <= counter.total <= 3, counter.statements
    written = store.audit.decisions_for(attempt)
    # The ids come back in the order of the judgements, each naming its own decision.
    assert ids == [d["id"] for d in written]
    assert [d["dependency"] for d in written] == [f"task:up_{i}" for i in range(100)]
    assert [d["upstream_revision"] for d in written] == list(range(100))
    assert [d["result"] for d in written[:2]] == ["SATISFIED", "BYPASSED"]


def test_consuming_100_decisions_adds_a_constant_number_of_statements_to_the_success_record(store):
    up = store.record_success(TaskIdentity("rc_cost_up", "other-team"), day(1), run_id="u1")
    store.register_task(DOWN, TaskMeta())  # both successes below find the task row already there
    costs = {}
    for n, slot in ((1, day(2)), (100, day(3))):
        run = f"run-{n}"
        store.audit.record_decisions(
            AttemptKey("rc_cost", "report__gate", run), judgements(n, up), downstream_slot=slot
        )
        with StatementCounter(store.engine) as counter:
            store.record_success(
                DOWN, slot, run_id=run, consumer=AttemptKey("rc_cost", "report", run), gate_task_ids=["report__gate"]
            )
        costs[n] = counter.total
    assert costs[100] == costs[1]
    with store.engine.connect() as conn:
        consumed = conn.execute(
            select(func.count()).select_from(consumption).where(consumption.c.run_id == "run-100")
        ).scalar()
    assert consumed == 50  # the SATISFIED half


def test_consumption_reads_only_the_consuming_attempts_decisions_not_the_audit_history(sqlite_url):
    """Each source attempt is looked up on the whole attempt index, and the gate's latest attempt on its
    prefix. With an OR of attempts SQLite chose the (result, time) index and scanned every SATISFIED
    decision ever recorded, so a success got slower as the audit trail grew."""
    from sqlalchemy import event

    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    store = CatalogStore(get_engine(sqlite_url, migrate=True))
    up = store.record_success(TaskIdentity("rc_cost_up", "other-team"), day(1), run_id="u1")
    run = "run-plan"
    # The consumer's own decisions and its gate's: two source attempts, one lookup each.
    store.audit.record_decisions(AttemptKey("rc_cost", "report", run), judgements(4, up), downstream_slot=day(2))
    store.audit.record_decisions(AttemptKey("rc_cost", "report__gate", run), judgements(4, up), downstream_slot=day(2))
    captured = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith("INSERT INTO la_consumption"):
            captured.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        store.record_success(
            DOWN, day(2), run_id=run, consumer=AttemptKey("rc_cost", "report", run), gate_task_ids=["report__gate"]
        )
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    [(statement, parameters)] = captured
    with store.engine.connect() as conn:
        plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
    lookups = [step for step in plan if "la_gate_decision" in step]
    assert all(
        "INDEX ix_la_gate_decision_attempt (dag_id=? AND task_id=? AND run_id=? AND map_index=?" in s for s in lookups
    )
    whole = "AND map_index=? AND attempt=?)"
    # The two source attempts (the consumer's own, its gate's) on the whole index; the gate's latest
    # attempt number (one scalar subquery) on the index without its last column.
    assert [s.endswith(whole) for s in lookups].count(True) == 2, plan
    assert [s.endswith("AND map_index=?)") for s in lookups].count(True) == 1, plan
    assert len(lookups) == 3, plan
    with store.engine.connect() as conn:
        consumed = conn.execute(select(func.count()).select_from(consumption).where(consumption.c.run_id == run))
        assert consumed.scalar() == 4  # the SATISFIED half of each attempt's four
