"""The fallback's rule at its deadline (:func:`decide_at_deadline`) and what a MISSING decision records
(:meth:`Judgement.as_missing`). Pure logic."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.gating.engine import (
    ALL,
    ANY,
    DependencyType,
    Judgement,
    RunCondition,
    Verdict,
    decide_at_deadline,
    judge_upstream_task,
)
from airflow_leastaction.gating.fallback import Fallback
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import SlotSnapshot, TaskSnapshot, judge_parent
from airflow_leastaction.run_conditions.judging import in_run_pending, with_fallback
from airflow_leastaction.run_conditions.model import GateSpec

DEADLINE = "2026-11-28T06:00:00+00:00"
SLOT = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)


def feeds(*satisfied: bool) -> list[Judgement]:
    return [
        Judgement(f"catalog:feeds/{c}", ok, f"{c}: {'landed' if ok else 'not landed'}")
        for c, ok in zip(["fr", "de", "es", "it"], satisfied, strict=False)
    ]


@pytest.mark.parametrize(
    "condition, satisfied, require, verdict, degraded",
    [
        pytest.param(ALL, (True, True, True, True), 3, Verdict.ADMIT, False, id="all there: admitted in full"),
        pytest.param(ALL, (True, True, True, False), 3, Verdict.ADMIT, True, id="ALL of 4, 3 there: degraded"),
        pytest.param(ALL, (True, True, False, False), 3, Verdict.SKIP, False, id="below require: skipped"),
        pytest.param(RunCondition("N", 3), (True, True, True, False), 2, Verdict.ADMIT, False, id="N met: in full"),
        pytest.param(RunCondition("N", 3), (True, True, False, False), 2, Verdict.ADMIT, True, id="N short: degraded"),
        pytest.param(ANY, (False, False, False, False), 1, Verdict.SKIP, False, id="ANY with none: skipped"),
    ],
)
def test_at_the_deadline(condition, satisfied, require, verdict, degraded):
    outcome = decide_at_deadline(condition, feeds(*satisfied), require, DEADLINE)
    assert (outcome.verdict, outcome.degraded) == (verdict, degraded)
    assert outcome.satisfied_count == sum(satisfied)


def test_a_degraded_admission_says_which_dependency_is_missing_and_when():
    outcome = decide_at_deadline(ALL, feeds(True, True, True, False), 3, DEADLINE)
    assert [j.reason for j in outcome.judgements if not j.satisfied] == [
        f"it: not landed; missing at the fallback deadline {DEADLINE}"
    ]
    assert outcome.summary().startswith("ADMIT (degraded): 3/4 satisfied, needs ALL")


def test_a_skip_at_the_deadline_says_how_many_the_fallback_needed():
    outcome = decide_at_deadline(ALL, feeds(True, False, False, False), 2, DEADLINE)
    assert all(j.final for j in outcome.judgements if not j.satisfied)
    assert outcome.judgements[1].reason == (
        f"de: not landed; at the fallback deadline {DEADLINE} only 1 satisfied, the fallback needs 2"
    )


class TestMissingDecision:
    def test_it_names_the_slot_the_judge_awaited_and_revision_0(self):
        yesterday = SLOT - dt.timedelta(days=1)
        judged = Judgement(
            "catalog:feeds/it",
            False,
            "already consumed",
            upstream_task_pk=7,
            upstream_run_pk=70,
            upstream_slot=yesterday,
            upstream_revision=1,
            awaited_slot=SLOT,
        )
        missing = judged.as_missing(SLOT + dt.timedelta(hours=1))
        assert (
            missing.upstream_task_pk,
            missing.upstream_slot,
            missing.upstream_run_pk,
            missing.upstream_revision,
        ) == (7, SLOT, None, 0)

    def test_without_an_awaited_slot_it_is_the_downstream_slot(self):
        assert Judgement("task:feed_it", False, "running").as_missing(SLOT).upstream_slot == SLOT

    def test_the_record_of_the_awaited_slot_keeps_its_revision(self):
        judged = Judgement(
            "catalog:feeds/it",
            False,
            "repair failed",
            upstream_task_pk=7,
            upstream_run_pk=71,
            upstream_slot=SLOT,
            upstream_revision=2,
            awaited_slot=SLOT,
        )
        assert (judged.as_missing(SLOT).upstream_run_pk, judged.as_missing(SLOT).upstream_revision) == (71, 2)

    def test_the_awaited_slot_travels_in_trigger_events(self):
        judged = Judgement("catalog:feeds/it", False, "late", awaited_slot=SLOT)
        assert Judgement.from_event(judged.as_event()) == judged


class TestSameRunUpstreamsAtTheDeadline:
    """At the deadline a task of the gate's own run still running is late data like any other, but the gate
    is never skipped before its run's tasks have ended."""

    NOW = SLOT + dt.timedelta(hours=7)
    DEADLINE_AT = SLOT + dt.timedelta(hours=6)

    def spec(self, require: int = 3, condition: RunCondition = ALL):
        return GateSpec("report", condition=condition, fallback=Fallback(dt.timedelta(hours=6), require))

    def in_run(self, *states: str | None) -> list[Judgement]:
        return [
            judge_upstream_task(f"task:land_{c}", DependencyType.SUCCESS, s, run_settled=True)
            for c, s in zip(["fr", "de", "es", "it"], states, strict=False)
        ]

    def decide(self, spec, judgements):
        outcome = with_fallback(spec, judgements, [], self.NOW, self.DEADLINE_AT)
        return outcome, in_run_pending(outcome)

    @pytest.mark.parametrize("running", ["running", "scheduled", None, "up_for_retry"])
    def test_a_same_run_upstream_still_unfinished_at_the_deadline_is_missing_when_require_others_are_there(
        self, running
    ):
        outcome, pending = self.decide(self.spec(), self.in_run("success", "success", "success", running))
        assert (outcome.verdict, outcome.degraded, pending) == (Verdict.ADMIT, True, False)
        assert outcome.judgements[3].reason.endswith(f"missing at the fallback deadline {self.DEADLINE_AT.isoformat()}")

    @pytest.mark.parametrize("running", ["running", "scheduled", None, "up_for_retry"])
    def test_below_require_with_upstreams_of_the_run_unfinished_it_waits_and_sees_its_run_pending(self, running):
        # Pending, so the gate reschedules and the run's other tasks get their turn (under dag.test a
        # deferred gate would hold the run: its trigger runs inline).
        outcome, pending = self.decide(self.spec(), self.in_run("success", "success", running, running))
        assert (outcome.verdict, pending) == (Verdict.WAIT, True)
        assert all("fallback deadline" not in j.reason for j in outcome.judgements)

    def test_once_the_same_run_upstream_failed_and_the_run_settled_it_is_missing_and_the_task_admitted_degraded(self):
        outcome, pending = self.decide(self.spec(), self.in_run("success", "success", "success", "failed"))
        assert (outcome.verdict, outcome.degraded, pending) == (Verdict.ADMIT, True, False)
        assert outcome.judgements[3].reason.endswith(f"missing at the fallback deadline {self.DEADLINE_AT.isoformat()}")

    def test_a_condition_met_in_full_admits_at_once_whatever_else_of_the_run_still_runs(self):
        outcome, _ = self.decide(self.spec(1, ANY), self.in_run("success", "running", "running", "running"))
        assert (outcome.verdict, outcome.degraded) == (Verdict.ADMIT, False)


class TestMissingWhileRepaired:
    """A slot being re-run at the deadline still holds its last revision: the task ran without the repair,
    and is stale only once the repair lands."""

    def test_a_slot_being_repaired_at_the_deadline_is_missing_at_the_revision_it_held(self):
        feed = TaskIdentity("feed_it", "feeds")
        task = TaskSnapshot(7, feed, "0 0 * * *", "UTC", "running", SLOT, True, SLOT)
        judged = judge_parent(feed, task, [SlotSnapshot(71, 7, SLOT, "running", 2)], SLOT)
        missing = judged.as_missing(SLOT)
        assert (judged.in_flight, missing.upstream_slot, missing.upstream_run_pk, missing.upstream_revision) == (
            True,
            SLOT,
            71,
            2,
        )
