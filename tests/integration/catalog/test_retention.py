"""Retention (``db prune``) on real SQLite and PostgreSQL: what goes, what stays, and in what batches."""

from __future__ import annotations

import datetime as dt
import threading

from sqlalchemy import insert, select

from airflow_leastaction.catalog.deadline_warnings import Expected, WarningKey, claim_warning, clear_warning
from airflow_leastaction.catalog.retention import (
    decision_prunable,
    delete_batch,
    prunable_ids,
    prune,
)
from airflow_leastaction.catalog.schema import consumption, deadline_warning, gate_decision, task_run
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.dbt.schema import dbt_queue, dbt_request, dbt_request_event
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
CUTOFF = dt.datetime(2025, 6, 1, tzinfo=UTC)
OLD = dt.datetime(2025, 1, 1, tzinfo=UTC)
NEW = dt.datetime(2025, 7, 1, tzinfo=UTC)
PARENT = TaskIdentity("orders_raw", "sales")
CHILD_DAG, CHILD_TASK = "orders_daily", "build"
CHILD = TaskIdentity(f"{CHILD_DAG}.{CHILD_TASK}", "sales")


def day(n: int) -> dt.datetime:
    return dt.datetime(2025, 1, n, tzinfo=UTC)


def meta(dag_id: str, task_id: str) -> TaskMeta:
    return TaskMeta(cron="0 0 * * *", dag_id=dag_id, task_id=task_id)


def decide(store, *, at, run_id="r1", slot=None, result="SATISFIED", upstream=None, task_id="wait") -> int:
    """One gate decision of ``CHILD_DAG``; ``upstream`` is the parent's slot outcome it selected."""
    sel = (
        {}
        if upstream is None
        else {
            "upstream_task_pk": upstream.task_pk,
            "upstream_run_pk": upstream.run_pk,
            "upstream_slot": upstream.slot,
            "upstream_revision": upstream.output_revision,
        }
    )
    with store.write() as conn:
        return conn.execute(
            insert(gate_decision).values(
                dag_id=CHILD_DAG,
                task_id=task_id,
                run_id=run_id,
                attempt=1,
                downstream_slot=slot,
                dependency=PARENT.key,
                result=result,
                reason="seeded",
                decided_at=at,
                **sel,
            )
        ).inserted_primary_key[0]


def consume(store, decision_id: int, *, at, slot, upstream) -> int:
    with store.write() as conn:
        return conn.execute(
            insert(consumption).values(
                decision_id=decision_id,
                dag_id=CHILD_DAG,
                task_id=CHILD_TASK,
                run_id=f"r-{slot}",
                attempt=1,
                downstream_slot=slot,
                dependency=PARENT.key,
                upstream_task_pk=upstream.task_pk,
                upstream_run_pk=upstream.run_pk,
                upstream_slot=upstream.slot,
                upstream_revision=upstream.output_revision,
                consumed_at=at,
            )
        ).inserted_primary_key[0]


class Outcome:
    """A slot outcome with its slot (``SlotOutcome`` does not carry it)."""

    def __init__(self, outcome, slot):
        self.task_pk, self.run_pk, self.output_revision, self.slot = (
            outcome.task_pk,
            outcome.run_pk,
            outcome.output_revision,
            slot,
        )


def success(store, identity, slot, at, **kw) -> Outcome:
    m = meta(CHILD_DAG, CHILD_TASK) if identity == CHILD else TaskMeta(cron="0 0 * * *")
    return Outcome(store.record_success(identity, slot, meta=m, run_id=f"r-{slot:%d}-{at:%m}", at=at, **kw), slot)


def ids(store, table) -> set:
    with store.engine.connect() as conn:
        return set(conn.execute(select(table.c.id)).scalars())


def slots_of(store, task_pk) -> set:
    with store.engine.connect() as conn:
        return set(conn.execute(select(task_run.c.slot).where(task_run.c.task_pk == task_pk)).scalars())


class TestRules:
    def test_old_decisions_go_and_recent_ones_stay(self, store):
        old = decide(store, at=OLD, result="UNSATISFIED", slot=day(1))
        recent = decide(store, at=NEW, result="UNSATISFIED", slot=day(1))
        report = prune(store.engine, CUTOFF)
        assert ids(store, gate_decision) == {recent}
        assert report.counts()["la_gate_decision"] == 1 and old not in ids(store, gate_decision)

    def test_the_latest_slot_record_of_a_task_is_kept(self, store):
        first = success(store, PARENT, day(1), OLD)
        success(store, PARENT, day(2), OLD)
        prune(store.engine, CUTOFF)
        assert slots_of(store, first.task_pk) == {day(2)}

    def test_the_slot_at_the_watermark_is_kept_when_a_later_slot_failed(self, store):
        done = success(store, PARENT, day(1), OLD)
        store.record_success(PARENT, day(1) - dt.timedelta(days=1), run_id="r0", at=OLD)  # older: goes
        store.record_finished(PARENT, day(2), "failed", run_id="r2", at=OLD)
        prune(store.engine, CUTOFF)
        assert slots_of(store, done.task_pk) == {day(1), day(2)}

    def test_in_flight_and_repair_pending_slot_records_are_kept(self, store):
        store.record_running(PARENT, day(1), run_id="r1", at=OLD)  # running
        repaired = success(store, PARENT, day(2), OLD)
        store.record_running(PARENT, day(2), run_id="r2-repair", at=OLD)  # a repair that failed: still owed
        store.record_finished(PARENT, day(2), "failed", run_id="r2-repair", at=OLD)
        store.record_success(PARENT, day(3), run_id="r3", at=OLD)
        prune(store.engine, CUTOFF)
        assert slots_of(store, repaired.task_pk) == {day(1), day(2), day(3)}

    def test_slot_records_changed_after_the_cutoff_are_kept(self, store):
        first = success(store, PARENT, day(1), NEW)
        success(store, PARENT, day(2), NEW)
        prune(store.engine, CUTOFF)
        assert slots_of(store, first.task_pk) == {day(1), day(2)}

    def test_a_stale_consumption_keeps_its_decision_and_upstream_slot(self, store):
        up = success(store, PARENT, day(1), OLD)
        dec = decide(store, at=OLD, slot=day(1), upstream=up)
        stale = consume(store, dec, at=OLD, slot=day(1), upstream=up)
        store.record_running(PARENT, day(1), run_id="repair", at=OLD)
        store.record_success(PARENT, day(1), run_id="repair", at=OLD)  # revision 2: the consumer is stale
        for n in (2, 3):  # later slots: day 1 is no longer the latest
            store.record_success(PARENT, day(n), run_id=f"r{n}", at=OLD)
        # a later consumption, so the stale one is not the consumer's last either
        later = success(store, PARENT, day(3), OLD)
        consume(store, decide(store, at=OLD, slot=day(3), upstream=later), at=OLD, slot=day(3), upstream=later)
        assert len(store.audit.stale_consumers(CHILD_DAG)) == 1
        prune(store.engine, CUTOFF)
        assert stale in ids(store, consumption) and dec in ids(store, gate_decision)
        assert day(1) in slots_of(store, up.task_pk) and day(2) not in slots_of(store, up.task_pk)
        assert len(store.audit.stale_consumers(CHILD_DAG)) == 1

    def test_what_a_consumer_consumed_last_is_kept_and_older_consumption_goes(self, store):
        one, two = success(store, PARENT, day(1), OLD), success(store, PARENT, day(2), OLD)
        d1, d2 = decide(store, at=OLD, slot=day(1), upstream=one), decide(store, at=OLD, slot=day(2), upstream=two)
        c1, c2 = (
            consume(store, d1, at=OLD, slot=day(1), upstream=one),
            consume(store, d2, at=OLD, slot=day(2), upstream=two),
        )
        before = store.audit.last_consumed(CHILD_DAG, CHILD_TASK, [PARENT.key])
        report = prune(store.engine, CUTOFF)
        assert ids(store, consumption) == {c2} and ids(store, gate_decision) == {d2}
        assert store.audit.last_consumed(CHILD_DAG, CHILD_TASK, [PARENT.key]) == before
        assert report.counts()["la_consumption"] == 1 and c1 not in ids(store, consumption)

    def test_an_old_consumption_with_a_recent_one_of_the_same_slot_is_kept(self, store):
        up = success(store, PARENT, day(1), OLD)
        old = consume(store, decide(store, at=OLD, slot=day(1), upstream=up), at=OLD, slot=day(1), upstream=up)
        recent = consume(
            store, decide(store, at=NEW, slot=day(1), upstream=up, run_id="r2"), at=NEW, slot=day(1), upstream=up
        )
        later = success(store, PARENT, day(2), OLD)
        consume(store, decide(store, at=NEW, slot=day(2), upstream=later), at=NEW, slot=day(2), upstream=later)
        prune(store.engine, CUTOFF)
        assert {old, recent} <= ids(store, consumption)

    def test_a_consumer_without_a_downstream_slot_keeps_its_old_record_beside_a_recent_one(self, store):
        up = success(store, PARENT, day(1), OLD)
        old = consume(store, decide(store, at=OLD, upstream=up), at=OLD, slot=None, upstream=up)
        consume(store, decide(store, at=NEW, upstream=up, run_id="r2"), at=NEW, slot=None, upstream=up)
        later = success(store, PARENT, day(2), OLD)
        consume(store, decide(store, at=NEW, slot=day(2), upstream=later), at=NEW, slot=day(2), upstream=later)
        prune(store.engine, CUTOFF)
        assert old in ids(store, consumption)

    def test_decisions_of_a_run_still_in_flight_are_kept(self, store):
        store.record_running(CHILD, day(1), meta=meta(CHILD_DAG, CHILD_TASK), run_id="r1", at=OLD)
        waiting = decide(store, at=OLD, slot=day(1))
        finished = decide(store, at=OLD, slot=day(5), run_id="r5")
        prune(store.engine, CUTOFF)
        assert waiting in ids(store, gate_decision) and finished not in ids(store, gate_decision)


def seed_queue(store) -> dict[str, int]:
    rows = {}
    with store.write() as conn:

        def row(name, uid, status, finished):
            rows[name] = conn.execute(
                insert(dbt_queue).values(
                    environment="prod",
                    unique_id=uid,
                    fqn=uid,
                    materialized="table",
                    status=status,
                    first_requested_at=OLD,
                    last_requested_at=OLD,
                    finished_at=finished,
                )
            ).inserted_primary_key[0]

        row("older_build", "model.p.a", "done", OLD)
        row("last_build", "model.p.a", "done", OLD + dt.timedelta(days=1))
        row("old_failure", "model.p.b", "failed", OLD)
        row("pending", "model.p.b", "pending", None)
        row("recent_build", "model.p.c", "done", NEW)
        for req, queue_row in (("req-old", "older_build"), ("req-active", "pending")):
            conn.execute(
                insert(dbt_request).values(id=req, environment="prod", selector="x", status="queued", requested_at=OLD)
            )
            rows[f"{req}-event"] = conn.execute(
                insert(dbt_request_event).values(
                    request_id=req,
                    environment="prod",
                    unique_id="u",
                    selector="x",
                    outcome="new_pending",
                    queue_id=rows[queue_row],
                    requested_at=OLD,
                )
            ).inserted_primary_key[0]
    return rows


class TestDbtQueueRules:
    def test_finished_rows_go_but_active_rows_and_each_models_last_build_stay(self, store):
        rows = seed_queue(store)
        report = prune(store.engine, CUTOFF)
        assert ids(store, dbt_queue) == {rows["last_build"], rows["pending"], rows["recent_build"]}
        assert report.counts()["la_dbt_queue"] == 2

    def test_events_of_active_rows_and_their_requests_stay(self, store):
        rows = seed_queue(store)
        prune(store.engine, CUTOFF)
        assert ids(store, dbt_request_event) == {rows["req-active-event"]}
        assert ids(store, dbt_request) == {"req-active"}


class TestDeadlineWarningRules:
    def test_a_warning_goes_once_its_deadline_and_last_change_are_before_the_cutoff(self, store):
        def warn(run_id, deadline, at, cleared_at=None):
            key = WarningKey(CHILD_DAG, run_id, "wait", -1, deadline)
            assert claim_warning(store, key, Expected(deadline, deadline, "orders_raw"), now=at)
            if cleared_at is not None:
                assert clear_warning(store, key, Expected(at, at, ""), now=cleared_at)
            return run_id

        gone = warn("old", deadline=OLD, at=OLD - dt.timedelta(hours=1))
        kept = {
            warn("deadline ahead of the cutoff", deadline=NEW, at=OLD),
            warn("cleared after the cutoff", deadline=day(2), at=day(1), cleared_at=NEW),
        }
        report = prune(store.engine, CUTOFF)
        with store.engine.connect() as conn:
            left = set(conn.execute(select(deadline_warning.c.run_id)).scalars())
        assert left == kept and gone not in left
        assert report.counts()["la_deadline_warning"] == 1


def seed_history(store, n: int):
    for i in range(1, n + 1):
        decide(store, at=OLD, result="UNSATISFIED", slot=day(i), run_id=f"r{i}")
        success(store, PARENT, day(i), OLD)


class TestRuns:
    def test_a_dry_run_deletes_nothing_and_counts_what_would_go(self, store):
        seed_history(store, 5)
        seed_queue(store)
        # consumption the prune deletes frees its decision: the dry run counts that decision too
        one, two = success(store, CHILD, day(1), OLD), success(store, CHILD, day(2), OLD)
        consume(store, decide(store, at=OLD, slot=day(1), upstream=one), at=OLD, slot=day(1), upstream=one)
        consume(store, decide(store, at=OLD, slot=day(2), upstream=two), at=OLD, slot=day(2), upstream=two)
        tables = (consumption, gate_decision, task_run, dbt_queue, dbt_request_event, dbt_request)
        before = [ids(store, t) for t in tables]
        dry = prune(store.engine, CUTOFF, dry_run=True)
        assert [ids(store, t) for t in tables] == before
        real = prune(store.engine, CUTOFF)
        assert dry.counts() == real.counts()
        assert real.counts() == {
            "la_consumption": 1,
            "la_gate_decision": 6,
            "la_gate_attempt": 0,  # the seeded decisions were written without a gate's summary
            "la_task_run": 4 + 1,
            "la_dbt_request_event": 1,
            "la_dbt_request": 1,
            "la_dbt_queue": 2,
            "la_deadline_warning": 0,
        }

    def test_a_small_batch_size_deletes_in_several_transactions(self, store):
        seed_history(store, 5)
        report = prune(store.engine, CUTOFF, batch_size=2)
        assert (report.tables["la_gate_decision"].rows, report.tables["la_gate_decision"].transactions) == (5, 3)
        assert (report.tables["la_task_run"].rows, report.tables["la_task_run"].transactions) == (4, 2)
        assert ids(store, gate_decision) == set()

    def test_a_row_a_writer_needs_after_the_batch_was_chosen_stays(self, store):
        up = success(store, PARENT, day(1), OLD)
        chosen = decide(store, at=OLD, slot=day(1), upstream=up)
        with store.engine.connect() as conn:
            batch = list(conn.execute(prunable_ids(gate_decision, decision_prunable, CUTOFF)).scalars())
        assert batch == [chosen]
        consume(store, chosen, at=NEW, slot=day(1), upstream=up)  # a consumer succeeds in between
        with store.write() as conn:
            assert delete_batch(conn, gate_decision, decision_prunable, CUTOFF, batch) == 0
        assert chosen in ids(store, gate_decision)

    def test_a_writer_keeps_writing_while_a_prune_runs(self, store):
        seed_history(store, 12)
        wrote, errors, done = [], [], threading.Event()
        progressed = threading.Condition()

        def writer():
            n = 0
            try:
                while not done.is_set():
                    n += 1
                    wrote.append(decide(store, at=NEW, slot=NEW, run_id=f"w{n}", result="UNSATISFIED"))
                    store.record_success(TaskIdentity("writer", "sales"), NEW + dt.timedelta(days=n), run_id=f"w{n}")
                    with progressed:
                        progressed.notify_all()
            except Exception as exc:
                errors.append(exc)
                with progressed:
                    progressed.notify_all()

        def between_batches(_table, _rows):
            # Every batch waits for the writer to write once more: the writes interleave with the prune.
            seen = len(wrote)
            with progressed:
                progressed.wait_for(lambda: len(wrote) > seen or errors)

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            report = prune(store.engine, CUTOFF, batch_size=3, on_batch=between_batches)
        finally:
            done.set()
            thread.join()
        assert errors == []
        assert report.tables["la_gate_decision"].transactions == 4
        assert set(wrote) <= ids(store, gate_decision)
        writer_pk = store.get_task(TaskIdentity("writer", "sales"))["id"]
        assert len(slots_of(store, writer_pk)) == len(wrote) > report.tables["la_gate_decision"].transactions
