"""The catalog store on real SQLite and PostgreSQL: slots, watermark, revisions, decisions, consumption."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from sqlalchemy import func, select

from airflow_leastaction.catalog.schema import consumption, gate_decision, task_run
from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.parents import judge_parents

UTC = dt.UTC
RAW = TaskIdentity("orders_raw", "sales-platform")
DAILY = TaskMeta(cron="0 0 * * *")


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, n, tzinfo=UTC)


def snapshot_reads(store, requests):
    """``store.snapshot(requests)`` and the number of reading statements it sent (every one counted)."""
    from sqlalchemy import event

    statements = []

    def listener(*args):
        statements.append(args[2])

    event.listen(store.engine, "before_cursor_execute", listener)
    try:
        snapshot = store.snapshot(requests)
    finally:
        event.remove(store.engine, "before_cursor_execute", listener)
    return snapshot, len([s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))])


def judge(store, child: dt.datetime, consumed=None) -> Judgement:
    return judge_parents([RAW], child, store.snapshot([(RAW, child)]), consumed)[0]


class TestSlotRecords:
    def test_first_completion_publishes_revision_one(self, store):
        outcome = store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        assert (outcome.state, outcome.output_revision, outcome.applied) == ("success", 1, True)
        assert store.get_task(RAW)["prev_interval_start"] == day(3)

    def test_a_completed_slot_completed_again_publishes_revision_plus_one(self, store):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        store.record_running(RAW, day(3), run_id="r3-repair", attempt=1)
        assert store.record_success(RAW, day(3), run_id="r3-repair").output_revision == 2

    def test_replaying_the_same_completion_changes_nothing(self, store):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3", attempt=1)
        again = store.record_success(RAW, day(3), run_id="r3", attempt=1)
        assert (again.output_revision, again.applied) == (1, False)

    def test_the_watermark_never_moves_backwards(self, store):
        store.record_success(RAW, day(5), meta=DAILY, run_id="r5")
        store.record_success(RAW, day(2), run_id="r2")  # a backfill completes an older slot later
        assert store.get_task(RAW)["prev_interval_start"] == day(5)

    def test_concurrent_completions_keep_the_latest_watermark(self, store):
        store.register_task(RAW, DAILY)
        days = list(range(1, 21))
        threads = [
            threading.Thread(target=store.record_success, args=(RAW, day(n)), kwargs={"run_id": f"r{n}"}) for n in days
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert store.get_task(RAW)["prev_interval_start"] == day(20)
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(task_run)).scalar() == 20

    def test_a_late_replayed_running_event_does_not_undo_a_newer_success(self, store):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        stale = store.record_running(RAW, day(3), run_id="r3", at=day(3))  # older than the success
        assert stale.applied is False
        assert judge(store, day(3)).satisfied

    def test_failed_slot_publishes_no_revision(self, store):
        store.record_running(RAW, day(3), meta=DAILY, run_id="r3")
        outcome = store.record_finished(RAW, day(3), "failed", run_id="r3")
        assert (outcome.state, outcome.output_revision) == ("failed", 0)
        assert store.get_task(RAW)["prev_interval_start"] is None


class TestJudgingParentsFromTheCatalog:
    def test_a_parent_not_in_the_catalog_does_not_satisfy_and_says_so(self, store):
        j = judge(store, day(3))
        assert not j.satisfied and "not in the catalog" in j.reason

    def test_the_parent_satisfies_once_its_covering_slot_completed(self, store):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        j = judge(store, day(3))
        assert j.satisfied and j.upstream_revision == 1 and j.upstream_slot == day(3)
        assert not judge(store, day(4)).satisfied

    def test_a_slot_being_re_run_does_not_satisfy_children_until_it_completes_again(self, store):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        store.record_running(RAW, day(3), run_id="r3-rerun")
        j = judge(store, day(3))
        assert not j.satisfied and "being re-run" in j.reason
        store.record_success(RAW, day(3), run_id="r3-rerun")
        assert judge(store, day(3)).upstream_revision == 2

    def test_a_failed_covering_slot_rejects_with_its_state(self, store):
        store.record_running(RAW, day(3), meta=DAILY, run_id="r3")
        store.record_finished(RAW, day(3), "failed", run_id="r3")
        j = judge(store, day(3))
        assert not j.satisfied and j.rejected and "failed" in j.reason

    def test_a_child_that_consumed_a_slot_waits_for_a_newer_revision(self, store):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        consumed = {RAW.key: {day(3): 1}}
        j = judge(store, day(3), consumed)
        assert not j.satisfied and "waiting for revision 2" in j.reason
        store.record_running(RAW, day(3), run_id="r3b")
        store.record_success(RAW, day(3), run_id="r3b")
        assert judge(store, day(3), consumed).satisfied

    def test_snapshot_reads_any_number_of_parents_in_two_queries(self, store):
        parents = [TaskIdentity(f"p{i}", "proj") for i in range(50)]
        for p in parents:
            store.record_success(p, day(3), meta=DAILY, run_id="r")
        (tasks, slots), reads = snapshot_reads(store, [(p, day(3)) for p in parents])
        assert len(tasks) == 50 and len(slots) == 50
        assert reads == 2


class TestDecisionsAndConsumption:
    ATTEMPT = AttemptKey("orders_enriched", "enrich", "run-1", -1, 1)

    def _admit(self, store, attempt=ATTEMPT):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        return store.audit.record_decisions(attempt, [judge(store, day(3))], downstream_slot=day(3))

    def test_consumption_is_written_with_the_downstream_success_from_its_satisfied_decisions(self, store):
        self._admit(store)
        store.record_success(
            TaskIdentity("orders_enriched.enrich", "airflow"), day(3), run_id="run-1", consumer=self.ATTEMPT
        )
        with store.engine.connect() as conn:
            rows = conn.execute(select(consumption)).mappings().all()
        assert [(r["dependency"], r["upstream_revision"], r["upstream_slot"]) for r in rows] == [(RAW.key, 1, day(3))]

    def test_a_gate_tasks_latest_attempt_is_consumed_by_the_task_it_admits(self, store):
        sensor = AttemptKey("orders_enriched", "wait_for_orders_raw", "run-1", -1, 1)
        self._admit(store, sensor)
        retry = AttemptKey("orders_enriched", "wait_for_orders_raw", "run-1", -1, 2)
        store.audit.record_decisions(retry, [judge(store, day(3))], downstream_slot=day(3))
        store.record_success(
            TaskIdentity("orders_enriched.enrich", "airflow"),
            day(3),
            run_id="run-1",
            consumer=self.ATTEMPT,
            gate_task_ids=["wait_for_orders_raw"],
        )
        with store.engine.connect() as conn:
            consumed = (
                conn.execute(
                    select(gate_decision.c.attempt).join(consumption, consumption.c.decision_id == gate_decision.c.id)
                )
                .scalars()
                .all()
            )
        assert consumed == [2]

    def test_failed_or_skipped_work_consumes_nothing(self, store):
        self._admit(store)
        store.record_finished(TaskIdentity("orders_enriched.enrich", "airflow"), day(3), "failed", run_id="run-1")
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(consumption)).scalar() == 0

    def test_a_crash_before_the_success_commit_leaves_neither_success_nor_consumption(self, store, monkeypatch):
        self._admit(store)

        def crash(*args, **kwargs):
            raise RuntimeError("worker died mid-commit")

        monkeypatch.setattr(store.audit, "consume", crash)
        child = TaskIdentity("orders_enriched.enrich", "airflow")
        with pytest.raises(RuntimeError):
            store.record_success(child, day(3), run_id="run-1", consumer=self.ATTEMPT)
        assert store.get_task(child) is None
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(consumption)).scalar() == 0


class TestOutOfOrderCompletion:
    def test_a_later_slot_completed_first_does_not_release_the_child_of_an_earlier_slot(self, store):
        store.record_success(RAW, day(1), meta=DAILY, run_id="r1")
        store.record_success(RAW, day(5), run_id="r5")  # a backfill finished day 5 before day 2
        j = judge(store, day(2))
        assert not j.satisfied
        assert (
            j.reason == "orders_raw: expected slot 2026-11-02 (day) has not run yet (later slots completed "
            "up to 2026-11-05; judged by its slot records)"
        )
        store.record_success(RAW, day(2), run_id="r2")
        assert judge(store, day(2)).satisfied

    def test_a_parent_known_only_by_its_watermark_is_judged_by_it(self, store):
        from sqlalchemy import update

        from airflow_leastaction.catalog.schema import task

        store.register_task(RAW, DAILY)
        with store.write() as conn:  # a catalog row some other tool maintains: a watermark, no slot records
            conn.execute(update(task).values(prev_interval_start=day(5), state="success"))
        assert judge(store, day(2)).satisfied


class TestPartialHistory:
    """Slots before a parent's first recorded slot are judged by its watermark; after it, by its records."""

    def test_an_external_parent_that_reports_only_its_latest_completion_covers_earlier_children(self, store):
        store.report_completion(RAW, day(5), cron="0 0 * * *")
        j = judge(store, day(3))
        assert j.satisfied
        assert (
            j.reason == "orders_raw: slot 2026-11-03 (day) is covered, completed up to 2026-11-05; judged by "
            "its watermark, as its slot records start at 2026-11-05"
        )

    def test_history_from_before_the_listener_was_installed_is_judged_by_the_watermark(self, store):
        from sqlalchemy import update

        from airflow_leastaction.catalog.schema import task

        store.register_task(RAW, DAILY)
        with store.write() as conn:  # what the parent completed before the listener existed
            conn.execute(update(task).values(prev_interval_start=day(4), state="success"))
        store.record_running(RAW, day(5), run_id="r5")  # the listener's first record
        assert judge(store, day(4)).satisfied
        j = judge(store, day(5))
        assert not j.satisfied and "slot 2026-11-05 (day) is running" in j.reason

    def test_a_parent_with_no_completion_before_its_first_record_does_not_cover_and_says_why(self, store):
        store.record_running(RAW, day(5), meta=DAILY, run_id="r5")
        j = judge(store, day(3))
        assert not j.satisfied
        assert (
            j.reason == "orders_raw: expected slot 2026-11-03 (day), never completed; judged by its "
            "watermark, as its slot records start at 2026-11-05"
        )

    def test_a_missing_slot_after_the_first_record_is_judged_by_the_slot_records(self, store):
        store.report_completion(RAW, day(5), cron="0 0 * * *")
        store.report_completion(RAW, day(7), cron="0 0 * * *")
        j = judge(store, day(6))
        assert not j.satisfied and j.reason.endswith("judged by its slot records)")
        assert judge(store, day(4)).satisfied

    def test_the_first_recorded_slot_counts_records_of_any_state(self, store):
        store.record_running(RAW, day(2), meta=DAILY, run_id="r2")
        store.record_finished(RAW, day(2), "failed", run_id="r2")
        store.record_success(RAW, day(5), run_id="r5")
        assert "judged by its slot records" in judge(store, day(3)).reason
        assert store.snapshot([(RAW, day(3))])[0][RAW].first_slot == day(2)


class TestASchedulesTheCatalogCannotJudge:
    def test_a_parent_whose_catalog_cron_is_refused_waits_saying_why_and_the_others_are_judged(self, store):
        from sqlalchemy import update

        from airflow_leastaction.catalog.schema import task

        good, bad = TaskIdentity("good", "p"), TaskIdentity("bad", "p")
        store.record_success(good, day(2), meta=DAILY, run_id="g")
        store.record_success(bad, day(2), meta=DAILY, run_id="b")
        with store.write() as conn:  # as a version with looser cron rules wrote it
            conn.execute(update(task).where(task.c.name == "bad").values(cron="0 0 * * 1-1"))
        tasks, slots = store.snapshot([(good, day(2)), (bad, day(2)), (bad, day(2), day(3))])
        judged = judge_parents([good, bad], day(2), (tasks, slots))
        assert judged[0].satisfied
        assert not judged[1].satisfied and not judged[1].rejected
        assert "bad: its schedule in the catalog cannot be judged" in judged[1].reason and "1-1" in judged[1].reason
        whole = judge_parents([bad], day(2), (tasks, slots), interval_end=day(3), coverage="interval")[0]
        assert not whole.satisfied and "cannot be judged" in whole.reason


class TestSnapshotWindows:
    """Each parent's slot records are read inside that parent's own windows, never the union."""

    def test_a_long_backfill_and_an_ad_hoc_parent_do_not_widen_other_parents_reads(self, store):
        base = dt.datetime(2026, 6, 1, tzinfo=UTC)
        days = [base + dt.timedelta(days=n) for n in range(60)]
        current, backfill = TaskIdentity("current", "p"), TaskIdentity("backfilled", "p")
        ad_hoc = TaskIdentity("ad_hoc", "p")
        for d in days:
            store.record_success(current, d, meta=DAILY, run_id=f"c{d:%j}")
            store.record_success(backfill, d, meta=DAILY, run_id=f"b{d:%j}")
            store.record_success(ad_hoc, d, meta=TaskMeta(cron=None), run_id=f"a{d:%j}")
        requests = [(current, days[-1]), (backfill, days[0]), (ad_hoc, days[-3])]
        (tasks, slots), reads = snapshot_reads(store, requests)
        per_task = {i.name: len(slots.for_task(t.pk)) for i, t in tasks.items()}
        # One covering day each for the cron parents; the ad hoc one reads from its child's interval on.
        assert per_task == {"current": 1, "backfilled": 1, "ad_hoc": 3}
        assert len(slots) == 5
        assert reads == 2

    def test_a_whole_interval_request_reads_the_parent_slots_inside_the_interval(self, store):
        hourly = TaskMeta(cron="0 * * * *")
        for h in range(48):
            store.record_success(RAW, day(3) + dt.timedelta(hours=h), meta=hourly, run_id=f"h{h}")
        _, slots = store.snapshot([(RAW, day(3), day(4))])
        assert sorted(s.slot for s in slots) == [day(3) + dt.timedelta(hours=h) for h in range(24)]

    def test_windows_shared_by_many_parents_are_read_together(self, store):
        parents = [TaskIdentity(f"p{i}", "proj") for i in range(20)]
        for p in parents:
            store.record_success(p, day(2), meta=DAILY, run_id="r2")
            store.record_success(p, day(3), meta=DAILY, run_id="r3")
        tasks, slots = store.snapshot([(p, d) for p in parents for d in (day(2), day(3))])
        assert len(slots) == 40
        assert all(judge_parents([p], day(2), (tasks, slots))[0].satisfied for p in parents)

    def test_a_thousand_distinct_windows_are_read_in_one_statement(self, store):
        # An OR chain of 1,250 windows breaks SQLite ("Expression tree is too large"); one bound array does not.
        base = dt.datetime(2025, 1, 1, tzinfo=UTC)
        days = [base + dt.timedelta(days=2 * n) for n in range(1250)]  # a long backfill, every other day
        store.register_task(RAW, DAILY)
        for d in days[::10]:
            store.record_success(RAW, d, run_id=f"r{d:%j}")
        (_, slots), reads = snapshot_reads(store, [(RAW, d) for d in days])
        assert sorted(s.slot for s in slots) == days[::10]
        assert reads == 2

    def test_twelve_thousand_windows_are_read_in_one_statement(self, store):
        # Any number of windows travels as one bound parameter: no statement per chunk of windows.
        parents = [TaskIdentity(f"w{i:05d}", "many") for i in range(12_000)]
        with store.write() as conn:
            from airflow_leastaction.catalog.schema import task

            now = dt.datetime.now(UTC)
            conn.execute(
                task.insert(),
                [
                    dict(p.as_dict(), source="external", cron="0 0 * * *", timezone="UTC", updated_at=now)
                    for p in parents
                ],
            )
        for p in parents[::1000]:
            store.record_success(p, day(2), run_id="r")
        (_, slots), reads = snapshot_reads(store, [(p, day(2)) for p in parents])
        assert len(slots) == 12 and {s.slot for s in slots} == {day(2)}
        assert reads == 2
