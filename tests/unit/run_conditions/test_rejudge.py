"""When a waiting run-condition gate judges again: a table of ticks, and a property against the instants the
judgement reads the time through (the wait rule's next look and budget, the fallback's deadline)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.run_conditions.rejudge import boundary, judged, stands
from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy, budget_left, due

T0 = dt.datetime(2026, 11, 2, 6, 0, tzinfo=dt.UTC)
POLICY = WaitPolicy(max_wait=dt.timedelta(minutes=10))


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


class TestSameReads:
    def test_a_gate_does_not_judge_again_a_run_whose_reads_are_the_same_objects(self):
        reads = ({}, {}, None, {"up": "running"})
        last = judged(reads, WaitClock(), WaitClock(), POLICY, None, at(0))
        assert stands(last, reads, WaitClock(), at(1)) is True
        assert stands(last, reads, WaitClock(), at(86_400)) is True  # nothing timed ahead: the reads alone decide

    def test_a_gate_judges_again_when_its_run_states_are_a_new_object_even_an_equal_one(self):
        states = {"up": "running"}
        last = judged(({}, {}, None, states), WaitClock(), WaitClock(), POLICY, None, at(0))
        assert stands(last, ({}, {}, None, {"up": "success"}), WaitClock(), at(1)) is False
        assert stands(last, ({}, {}, None, dict(states)), WaitClock(), at(1)) is False

    @pytest.mark.parametrize("which", [0, 1, 2])
    def test_a_gate_judges_again_when_a_catalog_read_is_a_new_object(self, which):
        reads = ({}, {}, [], {"up": "running"})
        last = judged(reads, WaitClock(), WaitClock(), POLICY, None, at(0))
        changed = tuple(type(r)() if i == which else r for i, r in enumerate(reads))
        assert stands(last, changed, WaitClock(), at(1)) is False

    def test_a_gate_judges_again_after_a_judgement_that_moved_its_wait_clock(self):
        reads = ({}, {}, None, {})
        moved = WaitClock(at(0), looks=1, next_look=at(30))
        assert judged(reads, WaitClock(at(0)), moved, POLICY, None, at(0)) is None
        assert stands(None, reads, moved, at(1)) is False

    def test_a_gate_judges_again_when_its_clock_is_not_the_one_its_last_judgement_left(self):
        reads = ({}, {}, None, {})
        last = judged(reads, WaitClock(), WaitClock(), POLICY, None, at(0))
        assert stands(last, reads, WaitClock(at(1)), at(1)) is False


class TestInstants:
    """Each instant the judgement reads the time through, alone: the same reads stand before it, not at it."""

    CASES = [
        ("the next look", WaitClock(at(0), looks=1, next_look=at(30)), None, at(30)),
        ("the end of the wait budget", WaitClock(at(0), looks=0, next_look=None), None, at(600)),
        ("the fallback's deadline", WaitClock(), at(45), at(45)),
        ("the earliest of them", WaitClock(at(0), looks=1, next_look=at(300)), at(120), at(120)),
    ]

    @pytest.mark.parametrize(("clock", "deadline", "instant"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
    def test_a_gate_judges_again_once_an_instant_it_depends_on_has_come(self, clock, deadline, instant):
        reads = ({}, {}, None, {})
        last = judged(reads, clock, clock, POLICY, deadline, at(1))
        assert last.until == instant
        assert stands(last, reads, clock, instant - dt.timedelta(microseconds=1)) is True
        assert stands(last, reads, clock, instant) is False

    def test_instants_already_past_are_no_boundary(self):
        clock = WaitClock(at(0), looks=2, next_look=at(10))
        assert boundary(clock, POLICY, at(5), at(20)) == at(600)
        assert boundary(clock, POLICY, at(5), at(700)) is None


moments = st.integers(min_value=0, max_value=3_600).map(at)
clocks = st.one_of(
    st.just(WaitClock()),
    st.builds(
        WaitClock,
        started=moments,
        looks=st.integers(0, 5),
        next_look=st.one_of(st.none(), moments),
    ),
)
policies = st.builds(
    WaitPolicy,
    max_wait=st.integers(0, 3_600).map(lambda s: dt.timedelta(seconds=s)),
    max_looks=st.integers(1, 30),
)


@given(clock=clocks, policy=policies, deadline=st.one_of(st.none(), moments), now=moments, later=moments)
def test_a_judgement_that_stands_sees_the_time_as_its_own_judgement_did(clock, policy, deadline, now, later):
    """Oracle: between two instants a judgement of the same reads can differ only if the wait rule's look
    falls due, its budget runs out, or the fallback's deadline passes. When the rule lets the last judgement
    stand at ``later``, none of those three differs from ``now``."""
    later = max(now, later)
    reads = ({}, {}, None, {})
    last = judged(reads, clock, clock, policy, deadline, now)
    seen = (due(clock, now), budget_left(clock, policy, now), deadline is not None and now >= deadline)
    then = (due(clock, later), budget_left(clock, policy, later), deadline is not None and later >= deadline)
    if stands(last, reads, clock, later):
        assert seen == then
