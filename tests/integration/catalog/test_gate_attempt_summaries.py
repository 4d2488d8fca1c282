"""A gate attempt's summary (``la_gate_attempt``): counted when its decisions are written, in the same
transaction, on SQLite and PostgreSQL; what migrations 0012 and 0010 count from decisions already
recorded; and when retention lets a summary go."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, insert, inspect, select

from airflow_leastaction.catalog import audit
from airflow_leastaction.catalog.audit_statements import ATTEMPT_COLUMNS
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.retention import prune
from airflow_leastaction.catalog.schema import gate_attempt, gate_decision
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.gating.engine import Judgement
from tests.helpers.run_conditions import attempt_summaries

UTC = dt.UTC
AT = dt.datetime(2026, 11, 20, 3, tzinfo=UTC)
LATER = AT + dt.timedelta(minutes=5)
GATE = AttemptKey("orders", "report__gate", "scheduled__2026-11-20", -1, 1)


def judged(*met: bool) -> list[Judgement]:
    return [Judgement(f"task:up_{i}", ok, "ok" if ok else "not yet") for i, ok in enumerate(met)]


def summary(store, key: AttemptKey = GATE) -> tuple | None:
    s = gate_attempt.c
    with store.engine.connect() as conn:
        row = conn.execute(
            select(s.decisions, s.satisfied, s.bypassed, s.decided_at).where(
                *(s[name] == getattr(key, name) for name in ATTEMPT_COLUMNS)
            )
        ).first()
    return tuple(row) if row else None


def missing(store, key: AttemptKey = GATE) -> int | None:
    s = gate_attempt.c
    with store.engine.connect() as conn:
        return conn.execute(
            select(s.missing).where(*(s[name] == getattr(key, name) for name in ATTEMPT_COLUMNS))
        ).scalar()


class TestWrittenWithTheDecisions:
    def test_an_attempts_summary_counts_its_decisions_met_and_bypassed_and_when(self, store):
        store.audit.record_decisions(GATE, judged(True, False, True), downstream_slot=AT, at=AT)
        assert summary(store) == (3, 2, 0, AT)
        relaxed = AttemptKey(GATE.dag_id, GATE.task_id, GATE.run_id, -1, 2)
        store.audit.record_decisions(
            relaxed, judged(True, False, False), downstream_slot=AT, bypass_reason="gates=warn", at=AT
        )
        assert summary(store, relaxed) == (3, 1, 2, AT)

    def test_an_attempt_admitted_degraded_counts_what_it_ran_without_as_missing(self, store):
        store.audit.record_decisions(GATE, judged(True, False, True, True), downstream_slot=AT, degraded=True, at=AT)
        assert missing(store) == 1
        assert summary(store) == (4, 3, 0, AT)
        written, counted = attempt_summaries(store)
        assert written == counted

    def test_a_second_write_for_the_same_attempt_adds_to_its_summary(self, store):
        store.audit.record_decisions(GATE, judged(True, False), downstream_slot=AT, at=LATER)
        store.audit.record_decisions(GATE, judged(True), downstream_slot=AT, at=AT)
        assert summary(store) == (3, 2, 0, LATER)
        written, counted = attempt_summaries(store)
        assert written == counted

    def test_attempts_keep_their_own_summaries(self, store):
        mapped = [AttemptKey(GATE.dag_id, GATE.task_id, GATE.run_id, index, 1) for index in (0, 1)]
        store.audit.record_decisions(mapped[0], judged(True), downstream_slot=AT, at=AT)
        store.audit.record_decisions(mapped[1], judged(False, False), downstream_slot=AT, at=AT)
        assert [summary(store, k) for k in mapped] == [(1, 1, 0, AT), (2, 0, 0, AT)]

    def test_decisions_are_not_recorded_when_their_summary_cannot_be(self, store, monkeypatch):
        # A summary that cannot be written (a NOT NULL column left empty) takes its decisions with it.
        real = audit.summary_params
        monkeypatch.setattr(audit, "summary_params", lambda *a: {**real(*a), "decided_at": None})
        with pytest.raises(Exception, match="(?i)null"):
            store.audit.record_decisions(GATE, judged(True, True), downstream_slot=AT, at=AT)
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(gate_decision)).scalar() == 0
        assert summary(store) is None


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_at_0007(request):
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    engine = get_engine(url, migrate=False)
    upgrade(engine, "0007_change_seq")
    return engine


def seed_decisions(engine, more: list[tuple] = ()) -> None:
    """Decisions an earlier version recorded: a gate's 2 of 3 and its retry's 1 bypassed, another DAG's one
    (and ``more``)."""
    rows = [
        *more,
        ("orders", "report__gate", 1, "SATISFIED", AT),
        ("orders", "report__gate", 1, "UNSATISFIED", AT),
        ("orders", "report__gate", 1, "SATISFIED", LATER),
        ("orders", "report__gate", 2, "BYPASSED", LATER),
        ("sales", "wait", 1, "SATISFIED", AT),
    ]
    with engine.begin() as conn:
        for dag_id, task_id, attempt, result, at in rows:
            conn.execute(
                insert(gate_decision).values(
                    dag_id=dag_id,
                    task_id=task_id,
                    run_id="r1",
                    map_index=-1,
                    attempt=attempt,
                    dependency="task:up",
                    result=result,
                    reason="seeded",
                    decided_at=at,
                )  # fmt: skip
            )


class TestMigration0012:
    def test_upgrading_counts_every_attempt_already_recorded(self, catalog_at_0007):
        seed_decisions(catalog_at_0007)
        upgrade(catalog_at_0007, "0012_ui_reads")
        s = gate_attempt.c
        with catalog_at_0007.connect() as conn:
            got = conn.execute(
                select(s.dag_id, s.task_id, s.attempt, s.decisions, s.satisfied, s.bypassed, s.decided_at).order_by(
                    s.dag_id, s.attempt
                )
            ).all()
        assert [tuple(r) for r in got] == [
            ("orders", "report__gate", 1, 3, 2, 0, LATER),
            ("orders", "report__gate", 2, 1, 0, 1, LATER),
            ("sales", "wait", 1, 1, 1, 0, AT),
        ]

    def test_the_attempt_index_ends_with_the_id_and_downgrading_restores_it(self, catalog_at_0007):
        def attempt_index():
            found = inspect(catalog_at_0007).get_indexes("la_gate_decision")
            return next(i["column_names"] for i in found if i["name"] == "ix_la_gate_decision_attempt")

        attempt = ["dag_id", "task_id", "run_id", "map_index", "attempt"]
        upgrade(catalog_at_0007, "0012_ui_reads")
        assert attempt_index() == [*attempt, "id"]
        downgrade(catalog_at_0007, "0007_change_seq")
        assert attempt_index() == attempt
        assert "la_gate_attempt" not in inspect(catalog_at_0007).get_table_names()


class TestMigration0010:
    def test_upgrading_counts_the_missing_decisions_already_recorded(self, catalog_at_0007):
        seed_decisions(catalog_at_0007, [("orders", "report__gate", 3, "MISSING", LATER)])
        upgrade(catalog_at_0007, "0012_ui_reads")
        upgrade(catalog_at_0007, "head")
        s = gate_attempt.c
        with catalog_at_0007.connect() as conn:
            got = conn.execute(select(s.dag_id, s.attempt, s.decisions, s.missing).order_by(s.dag_id, s.attempt))
            assert [tuple(r) for r in got] == [
                ("orders", 1, 3, 0),
                ("orders", 2, 1, 0),
                ("orders", 3, 1, 1),
                ("sales", 1, 1, 0),
            ]
        downgrade(catalog_at_0007, "0012_ui_reads")
        assert "missing" not in {c["name"] for c in inspect(catalog_at_0007).get_columns("la_gate_attempt")}


OLD = dt.datetime(2025, 1, 1, tzinfo=UTC)
CUTOFF = dt.datetime(2025, 6, 1, tzinfo=UTC)


class TestRetention:
    def test_a_summary_goes_with_the_last_decision_of_its_attempt_and_not_before(self, store):
        gone = AttemptKey("orders", "report__gate", "old", -1, 1)
        kept = AttemptKey("orders", "report__gate", "recent", -1, 1)
        store.audit.record_decisions(gone, judged(True, False), downstream_slot=OLD, at=OLD)
        store.audit.record_decisions(kept, judged(True), downstream_slot=OLD, at=OLD)
        # A decision of the second attempt recorded after the cutoff keeps it, and so its summary.
        store.audit.record_decisions(kept, judged(False), downstream_slot=OLD, at=CUTOFF + dt.timedelta(days=1))
        dry = prune(store.engine, CUTOFF, dry_run=True)
        report = prune(store.engine, CUTOFF)
        assert dry.counts()["la_gate_attempt"] == report.counts()["la_gate_attempt"] == 1
        assert summary(store, gone) is None
        assert summary(store, kept) == (2, 1, 0, CUTOFF + dt.timedelta(days=1))
