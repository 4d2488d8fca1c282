"""The catalog store on real SQLite and PostgreSQL: slots, watermark, revisions, decisions, consumption."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from sqlalchemy import func, select

from airflow_leastaction.catalog.schema import consumption, gate_decision, task_run
from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.gate import Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.parents import judge_parents

UTC = dt.timezone.utc
RAW = TaskIdentity("orders_raw", "sales-platform")
DAILY = TaskMeta(cron="0 0 * * *")


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, n, tzinfo=UTC)


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
        threads = [threading.Thread(target=store.record_success, args=(RAW, day(n)), kwargs={"run_id": f"r{n}"})
                   for n in days]
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
        statements = []
        from sqlalchemy import event

        listener = lambda *args: statements.append(args[2])  # noqa: E731
        event.listen(store.engine, "before_cursor_execute", listener)
        try:
            tasks, slots = store.snapshot([(p, day(3)) for p in parents])
        finally:
            event.remove(store.engine, "before_cursor_execute", listener)
        assert len(tasks) == 50 and len(slots) == 50
        assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 2


class TestDecisionsAndConsumption:
    ATTEMPT = AttemptKey("orders_enriched", "enrich", "run-1", -1, 1)

    def _admit(self, store, attempt=ATTEMPT):
        store.record_success(RAW, day(3), meta=DAILY, run_id="r3")
        return store.record_decisions(attempt, [judge(store, day(3))], downstream_slot=day(3))

    def test_consumption_is_written_with_the_downstream_success_from_its_satisfied_decisions(self, store):
        self._admit(store)
        store.record_success(TaskIdentity("orders_enriched.enrich", "airflow"), day(3), run_id="run-1",
                             consumer=self.ATTEMPT)
        with store.engine.connect() as conn:
            rows = conn.execute(select(consumption)).mappings().all()
        assert [(r["dependency"], r["upstream_revision"], r["upstream_slot"]) for r in rows] == [
            (RAW.key, 1, day(3))]

    def test_a_gate_tasks_latest_attempt_is_consumed_by_the_task_it_admits(self, store):
        sensor = AttemptKey("orders_enriched", "wait_for_orders_raw", "run-1", -1, 1)
        self._admit(store, sensor)
        retry = AttemptKey("orders_enriched", "wait_for_orders_raw", "run-1", -1, 2)
        store.record_decisions(retry, [judge(store, day(3))], downstream_slot=day(3))
        store.record_success(TaskIdentity("orders_enriched.enrich", "airflow"), day(3), run_id="run-1",
                             consumer=self.ATTEMPT, gate_task_ids=["wait_for_orders_raw"])
        with store.engine.connect() as conn:
            consumed = conn.execute(select(gate_decision.c.attempt).join(
                consumption, consumption.c.decision_id == gate_decision.c.id)).scalars().all()
        assert consumed == [2]

    def test_failed_or_skipped_work_consumes_nothing(self, store):
        self._admit(store)
        store.record_finished(TaskIdentity("orders_enriched.enrich", "airflow"), day(3), "failed", run_id="run-1")
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(consumption)).scalar() == 0

    def test_a_crash_before_the_success_commit_leaves_neither_success_nor_consumption(self, store, monkeypatch):
        self._admit(store)
        from airflow_leastaction.catalog import store as store_module

        def crash(*args, **kwargs):
            raise RuntimeError("worker died mid-commit")

        monkeypatch.setattr(store_module.CatalogStore, "_consume", crash)
        child = TaskIdentity("orders_enriched.enrich", "airflow")
        with pytest.raises(RuntimeError):
            store.record_success(child, day(3), run_id="run-1", consumer=self.ATTEMPT)
        assert store.get_task(child) is None
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(consumption)).scalar() == 0


class TestOutOfOrderCompletion:
    def test_a_later_slot_completed_first_does_not_release_the_child_of_an_earlier_slot(self, store):
        store.record_success(RAW, day(5), meta=DAILY, run_id="r5")  # a backfill finished day 5 first
        j = judge(store, day(2))
        assert not j.satisfied
        assert j.reason == "orders_raw: expected slot 2026-11-02 (day) has not run yet (later slots completed " \
                           "up to 2026-11-05)"
        store.record_success(RAW, day(2), run_id="r2")
        assert judge(store, day(2)).satisfied

    def test_a_parent_known_only_by_its_watermark_is_judged_by_it(self, store):
        from sqlalchemy import update

        from airflow_leastaction.catalog.schema import task

        store.register_task(RAW, DAILY)
        with store.write() as conn:  # a catalog row some other tool maintains: a watermark, no slot records
            conn.execute(update(task).values(prev_interval_start=day(5), state="success"))
        assert judge(store, day(2)).satisfied
