"""The verdict of a gate attempt, read from its decisions, its gate and Airflow's record of the attempt."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.gating.engine import RunCondition
from airflow_leastaction.run_conditions.model import Dependency
from airflow_leastaction.www.declared import Gate
from airflow_leastaction.www.verdicts import Tally, TaskInstanceFacts, group_attempts, verdict

UTC = dt.UTC
AT = dt.datetime(2026, 11, 25, 0, 5, tzinfo=UTC)


def row(result: str, dependency: str = "task:a", **key) -> dict:
    return {
        "dag_id": "d",
        "task_id": "t__gate",
        "run_id": "r",
        "map_index": -1,
        "attempt": 1,
        "dependency": dependency,
        "dependency_type": "SUCCESS",
        "result": result,
        "reason": f"{dependency}: {result.lower()}",
        "decided_at": AT,
        **key,
    }


def gate(kind: str = "ALL", count: int | None = None, n: int = 3, **extra) -> Gate:
    deps = tuple(Dependency(f"u{i}") for i in range(n))
    return Gate("gate", "t__gate", ("t",), RunCondition(kind, count), deps, **extra)


class TestDecided:
    def test_an_n_of_m_gate_that_ran_with_one_dependency_unmet_reads_admitted_2_of_3(self):
        rows = [row("SATISFIED", "task:a"), row("SATISFIED", "task:b"), row("UNSATISFIED", "catalog:x/y")]
        v = verdict(rows, gate("N", 2), None)
        assert (v.outcome, v.headline, v.condition) == ("admitted", "admitted: 2 of 3 met", "N = 2 of 3")
        assert v.at == AT and v.folded

    def test_a_skipped_attempt_says_what_it_needed_and_what_was_not_met(self):
        rows = [row("SATISFIED", "task:a"), row("UNSATISFIED", "task:b")]
        v = verdict(rows, gate("ALL", n=2), None)
        assert v.headline == "skipped: 1 of 2 met" and not v.folded
        assert v.why.startswith("needs 2 of 2") and "task:b: unsatisfied" in v.why

    def test_relaxed_gates_admit_with_bypassed_rows(self):
        v = verdict([row("BYPASSED"), row("SATISFIED", "task:b")], gate("ALL", n=2), None)
        assert v.outcome == "bypassed" and v.headline == "admitted, gate bypassed: 1 of 2 met"

    def test_an_attempt_that_ran_without_a_missing_dependency_reads_admitted_degraded(self):
        # Only an admission at a fallback's deadline records MISSING: ALL of 4 with require=3 ran on 3.
        rows = [row("SATISFIED", f"task:{n}") for n in "abc"] + [row("MISSING", "catalog:feeds/feed_it")]
        v = verdict(rows, gate("ALL", n=4), None)
        assert (v.outcome, v.headline) == ("degraded", "admitted degraded at its deadline: 3 of 4 met")
        assert "catalog:feeds/feed_it: missing" in v.why and "task:a" not in v.why
        assert not v.folded

    def test_a_degraded_attempt_shown_in_part_is_counted_over_all_its_decisions(self):
        v = verdict([row("SATISFIED")], gate("ALL", n=4), None, tally=Tally(4, 3, 0, AT, 1))
        assert (v.outcome, v.met, v.total) == ("degraded", 3, 4)

    def test_without_a_known_condition_airflows_state_of_the_attempt_decides(self):
        rows = [row("SATISFIED"), row("UNSATISFIED", "task:b")]
        assert verdict(rows, None, None, decided_state="skipped").outcome == "skipped"
        assert verdict(rows, None, None, decided_state="success").outcome == "admitted"
        unknown = verdict(rows, None, None)
        assert (unknown.outcome, unknown.condition) == ("decided", "condition not known")

    @given(
        st.lists(st.sampled_from(["SATISFIED", "UNSATISFIED"]), min_size=1, max_size=8),
        st.sampled_from(["ALL", "ANY", "N"]),
        st.integers(1, 8),
    )
    def test_admitted_exactly_when_enough_dependencies_were_met(self, results, kind, count):
        # The spec's words: a gate admits once enough dependencies are satisfied for its run condition
        # (ALL: every one, ANY: one, N: count of them), and records its decisions only when it decides.
        count = min(count, len(results)) if kind == "N" else None
        needed = {"ALL": len(results), "ANY": 1, "N": count}[kind]
        met = results.count("SATISFIED")
        v = verdict([row(r, f"task:u{i}") for i, r in enumerate(results)], gate(kind, count, len(results)), None)
        assert v.outcome == ("admitted" if met >= needed else "skipped")
        assert v.headline == f"{v.outcome}: {met} of {len(results)} met"


class TestUndecided:
    def test_a_waiting_gate_says_since_when_and_until_when(self):
        started = dt.datetime(2026, 11, 25, 0, 0, tzinfo=UTC)
        ti = TaskInstanceFacts(
            "deferred", 1, started, clock={"started": started.isoformat(), "next_look": "2026-11-25T00:02:00+00:00"}
        )
        v = verdict([], gate("N", 2, max_wait=1800.0), ti)
        assert v.outcome == "waiting" and v.headline == "waiting: 0 of 3 met"
        assert v.since == started and v.deadline == started + dt.timedelta(minutes=30)
        assert v.next_look == dt.datetime(2026, 11, 25, 0, 2, tzinfo=UTC)

    def test_a_gate_deferred_to_a_queue_no_triggerer_took_says_which_queue_it_waits_for(self):
        started = dt.datetime(2026, 11, 25, tzinfo=UTC)
        unserved = verdict([], gate(), TaskInstanceFacts("deferred", 1, started, unserved_queue="eu"))
        served = verdict([], gate(), TaskInstanceFacts("deferred", 1, started))
        assert unserved.outcome == served.outcome == "waiting"
        assert unserved.why == "waiting for a triggerer serving queue eu"
        assert served.why.startswith("waits in the triggerer (deferred)")

    def test_a_waiting_sensor_has_its_timeout_as_deadline(self):
        started = dt.datetime(2026, 11, 25, tzinfo=UTC)
        sensor = Gate("sensor", "wait", ("load",), RunCondition("ALL"), (Dependency("u"),), timeout=3600.0)
        v = verdict([], sensor, TaskInstanceFacts("deferred", 1, started))
        assert v.deadline == started + dt.timedelta(hours=1)

    def test_a_gate_not_started_is_not_judged_yet(self):
        assert verdict([], gate(), None).headline == "not judged yet"
        assert verdict([], gate(), TaskInstanceFacts(None)).outcome == "not judged"

    def test_a_sensor_that_failed_without_decisions_says_so(self):
        sensor = Gate("sensor", "wait", ("load",), RunCondition("ALL"), (Dependency("u"),), timeout=60.0)
        v = verdict([], sensor, TaskInstanceFacts("failed", 1, AT, AT))
        assert v.outcome == "failed" and "timeout" in v.why


def test_decisions_group_by_attempt_in_the_order_they_come():
    rows = [row("SATISFIED", attempt=2), row("SATISFIED", "task:b", attempt=2), row("UNSATISFIED", attempt=1)]
    groups = group_attempts(rows)
    assert [k.attempt for k in groups] == [2, 1] and [len(v) for v in groups.values()] == [2, 1]


def test_a_verdict_counts_every_decision_when_the_page_shows_only_the_first():
    shown = [row("UNSATISFIED", f"task:u{i}") for i in range(6)]
    v = verdict(shown, gate("ALL", n=2000), None, tally=Tally(2000, 1990, 0, AT))
    assert v.headline == "skipped: 1990 of 2000 met"
    assert v.why.count("unsatisfied") == 5 and v.why.endswith("and 5 more")
