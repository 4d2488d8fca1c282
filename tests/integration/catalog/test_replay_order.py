"""Replays never go backwards: an outcome is applied only if it is newer than what the catalog holds for
its slot (the try number orders attempts of one run; the time orders the rest). Real SQLite and
PostgreSQL; spooled events replayed from two machines' spool directories in the wrong order."""

from __future__ import annotations

import datetime as dt
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from airflow_leastaction.catalog.outcomes import SlotEvent, apply, spool
from airflow_leastaction.catalog.schema import consumption
from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.cli import main as cli
from airflow_leastaction.gating.engine import Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.parents import judge_parents

UTC = dt.UTC
RAW = TaskIdentity("orders_raw", "sales-platform")
DAILY = TaskMeta(cron="0 0 * * *")
SLOT = dt.datetime(2026, 11, 3, tzinfo=UTC)


def at(minute: int) -> dt.datetime:
    return dt.datetime(2026, 11, 4, 1, minute, tzinfo=UTC)


def event(state: str, attempt: int, minute: int, run_id: str = "scheduled__2026-11-03", **kw) -> SlotEvent:
    return SlotEvent(
        state=state,
        identity=kw.pop("identity", RAW),
        slot=SLOT,
        at=at(minute),
        meta=DAILY,
        run_id=run_id,
        attempt=attempt,
        **kw,
    )


def slot_row(store, identity=RAW):
    _, slots = store.snapshot([(identity, SLOT)])
    [row] = [s for s in slots if s.slot == SLOT]
    return row


def judge(store) -> Judgement:
    return judge_parents([RAW], SLOT, store.snapshot([(RAW, SLOT)]))[0]


class TestLateOutcomesAreNotApplied:
    def test_a_success_replayed_after_a_newer_running_outcome_publishes_no_revision(self, store):
        apply(store, event("running", 2, 10))
        outcome = apply(store, event("success", 1, 5, rows_written=3))
        assert (outcome.applied, outcome.state, outcome.output_revision) == (False, "running", 0)
        assert (slot_row(store).state, store.get_task(RAW)["prev_interval_start"]) == ("running", None)
        assert not judge(store).satisfied

    def test_a_success_replayed_after_a_newer_failure_leaves_the_failure(self, store):
        apply(store, event("running", 2, 10))
        apply(store, event("failed", 2, 12))
        apply(store, event("success", 1, 5))
        row = slot_row(store)
        assert (row.state, row.output_revision) == ("failed", 0)
        assert judge(store).rejected

    def test_a_later_attempt_of_the_same_run_wins_even_when_its_machines_clock_is_behind(self, store):
        apply(store, event("up_for_retry", 1, 30))
        assert apply(store, event("success", 2, 20)).applied  # attempt 2 reported by a slower clock
        assert apply(store, event("running", 1, 25)).applied is False
        assert (slot_row(store).state, slot_row(store).output_revision) == ("success", 1)

    def test_between_runs_of_the_same_slot_the_later_outcome_wins(self, store):
        apply(store, event("success", 1, 10, run_id="manual__1"))
        assert apply(store, event("failed", 3, 5, run_id="scheduled__2026-11-03")).applied is False
        assert apply(store, event("running", 1, 15, run_id="scheduled__2026-11-03")).applied
        assert slot_row(store).state == "running"

    def test_a_late_success_still_records_what_its_attempt_consumed_once(self, store):
        store.register_task(RAW, DAILY)
        store.audit.record_decisions(
            AttemptKey("d", "t__gate", "r", -1, 1), [Judgement("catalog:x", True, "ok")], downstream_slot=SLOT
        )
        late = event("success", 1, 5, run_id="r", consumer=AttemptKey("d", "t", "r", -1, 1), gate_task_ids=["t__gate"])
        apply(store, event("running", 2, 10, run_id="r"))
        apply(store, late)
        apply(store, late)  # an interrupted replay, repeated
        with store.engine.connect() as conn:
            rows = conn.execute(select(consumption.c.task_id, consumption.c.attempt)).all()
        assert [tuple(r) for r in rows] == [("t", 1)]
        assert slot_row(store).state == "running"

    def test_a_late_success_takes_nothing_of_a_gate_that_bypassed_every_dependency_of_its_run(self, store):
        """The first try may have run on the bypassing admission: it is not credited with the later one's."""
        store.register_task(RAW, DAILY)
        gate = [AttemptKey("d", "t__gate", "r", -1, n) for n in (1, 2)]
        store.audit.record_decisions(
            gate[0], [Judgement("catalog:x", False, "no")], downstream_slot=SLOT, bypass_reason="warn"
        )
        store.audit.record_decisions(
            gate[1], [Judgement("catalog:x", True, "ok")], downstream_slot=SLOT
        )  # the run cleared
        apply(store, event("running", 2, 10, run_id="r"))
        late = event("success", 1, 5, run_id="r", consumer=AttemptKey("d", "t", "r", -1, 1), gate_task_ids=["t__gate"])
        apply(store, late)
        with store.engine.connect() as conn:
            assert conn.execute(select(consumption.c.id)).all() == []
        new = event("success", 2, 20, run_id="r", consumer=AttemptKey("d", "t", "r", -1, 2), gate_task_ids=["t__gate"])
        assert apply(store, new).applied
        with store.engine.connect() as conn:
            assert conn.execute(select(consumption.c.attempt)).scalars().all() == [2]  # the new try took it


class TestTwoSpoolDirectoriesReplayedOutOfOrder:
    def test_the_older_machines_spool_replayed_last_changes_nothing(self, store, catalog_url, use_catalog, tmp_path):
        use_catalog(catalog_url)
        first, second = tmp_path / "worker-a", tmp_path / "worker-b"
        for e in (event("running", 1, 0), event("success", 1, 5, rows_written=9)):
            spool(e, first)  # attempt 1 finished while the catalog was down
        for e in (event("running", 2, 10), event("failed", 2, 14)):
            spool(e, second)  # the slot ran again elsewhere and failed
        assert cli(["catalog", "replay", "--spool-dir", str(second)]) == 0
        assert cli(["catalog", "replay", "--spool-dir", str(first)]) == 0
        row = slot_row(store)
        assert (row.state, row.output_revision, row.rows_written) == ("failed", 0, None)
        assert store.get_task(RAW)["prev_interval_start"] is None
        assert judge(store).rejected
        assert list(first.glob("*.jsonl")) == list(second.glob("*.jsonl")) == []


# -- property: any replay order ends in the newest outcome ------------------------------------------
@st.composite
def histories(draw):
    """A slot's real history: runs interleave in time; within a run each try starts running, then may end
    (success, failed, up_for_retry, skipped); later tries have higher numbers. Times strictly increase."""
    tries = {"r1": 0, "r2": 0}
    events = []
    for _ in range(draw(st.integers(1, 5))):
        run = draw(st.sampled_from(sorted(tries)))
        tries[run] += 1
        events.append(("running", run, tries[run]))
        end = draw(st.sampled_from(["success", "failed", "up_for_retry", "skipped", None]))
        if end:
            events.append((end, run, tries[run]))
    order = draw(st.permutations(range(len(events))))
    return events, order


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories())
def test_any_replay_order_ends_in_the_newest_outcome_of_the_slot(store, history):
    events, order = history
    identity = TaskIdentity(f"t_{uuid.uuid4().hex[:10]}", "replay")
    built = [
        SlotEvent(
            state=s,
            identity=identity,
            slot=SLOT,
            at=at(i),
            meta=DAILY,
            run_id=run,
            attempt=n,
            rows_written=i if s == "success" else None,
        )
        for i, (s, run, n) in enumerate(events)
    ]
    for i in order:
        apply(store, built[i])
    newest = built[-1]
    row = slot_row(store, identity)
    assert row.state == newest.state
    with store.engine.connect() as conn:
        from airflow_leastaction.catalog.schema import task_run

        held = conn.execute(select(task_run.c.run_id, task_run.c.attempt).where(task_run.c.id == row.pk)).one()
    assert tuple(held) == (newest.run_id, newest.attempt)
    if newest.state == "success":  # its output is the one published
        assert (row.output_revision >= 1, row.rows_written) == (True, newest.rows_written)


class TestTheTasksCurrentState:
    def test_a_late_failure_of_an_older_slot_does_not_become_the_tasks_current_state(self, store):
        store.record_running(RAW, SLOT + dt.timedelta(days=1), meta=DAILY, run_id="next", at=at(20))
        late = store.record_finished(RAW, SLOT, "failed", run_id="scheduled__2026-11-03", at=at(5))
        assert late.applied  # the older slot's own record takes it
        assert slot_row(store).state == "failed"
        row = store.get_task(RAW)
        assert (row["state"], row["logical_date"]) == ("running", SLOT + dt.timedelta(days=1))

    def test_a_late_success_of_an_older_slot_still_moves_the_watermark_forward(self, store):
        store.record_running(RAW, SLOT + dt.timedelta(days=1), meta=DAILY, run_id="next", at=at(20))
        store.record_success(RAW, SLOT, run_id="scheduled__2026-11-03", at=at(5))
        row = store.get_task(RAW)
        assert (row["state"], row["prev_interval_start"]) == ("running", SLOT)
