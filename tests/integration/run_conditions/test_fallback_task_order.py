"""A run that starts after its fallback's deadline (a backfill or catch-up of past days) decides the same
in whatever order the scheduler runs its tasks: the gate waits for the tasks of its own run, and the
deadline decides only about what is outside the run. Every order of a small DAG (three feeds of the run and
the gate, each feed running then ending) is played against the pure judge, with the dependencies on other
DAGs judged from a real catalog on both backends, and compared with the order where the gate comes last."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from airflow_leastaction.gating.engine import GateOutcome, Verdict
from airflow_leastaction.gating.fallback import Fallback
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.judging import RunView, evaluate
from airflow_leastaction.run_conditions.model import Dependency, GateSpec
from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy

UTC = dt.UTC
DAY = dt.datetime(2024, 3, 1, tzinfo=UTC)  # a past day: its deadline, 06:00, passed long ago
LANDED, LATE = TaskIdentity("feed_fr", "feeds"), TaskIdentity("feed_it", "feeds")
IN_RUN = ("land_a", "land_b", "land_c")
GATE, TASK = "report__gate", "report"
POLICY = WaitPolicy(dt.timedelta(hours=8), 30, dt.timedelta(seconds=1))


@pytest.fixture
def latest(store):
    """The other DAGs' feeds as the catalog has them: one landed for the day, one still running."""
    store.report_completion(LANDED, DAY, cron="0 0 * * *")
    store.record_running(LATE, DAY, run_id="it-late")
    return store.runs.latest_runs([LANDED, LATE])


def spec(require: int) -> GateSpec:
    deps = tuple(Dependency(t) for t in IN_RUN) + (Dependency(LANDED), Dependency(LATE))
    return GateSpec(TASK, deps, fallback=Fallback("06:00", require), gate_task_id=GATE)


def look(gate: GateSpec, states: dict, latest, started: dt.datetime) -> GateOutcome:
    upstream = {**{t: [] for t in IN_RUN}, GATE: [], TASK: [GATE]}
    view = RunView("backfill__2024-03-01", dict(states), upstream, frozenset({GATE}), {})
    now = dt.datetime.now(UTC)
    outcome, _ = evaluate(gate, view, latest, {}, WaitClock(), POLICY, now, None, gate.deadline(DAY), started)
    return outcome


def play(order, outcomes: dict, gate: GateSpec, latest, started: dt.datetime) -> GateOutcome:
    """The scheduler runs the run's tasks in ``order``; once started, the gate looks at every change."""
    states = {**dict.fromkeys(IN_RUN), GATE: None, TASK: None}
    steps = []
    for name in order:
        steps += [(GATE, "running")] if name == GATE else [(name, "running"), (name, outcomes[name])]
    for name, state in steps:
        states[name] = state
        if states[GATE] is not None and (outcome := look(gate, states, latest, started)).verdict is not Verdict.WAIT:
            return outcome
    raise AssertionError(f"the gate still waits once every task of the run has ended ({order}, {outcomes})")


def decisions(outcome: GateOutcome) -> tuple:
    return outcome.verdict, outcome.degraded, tuple((j.dependency, j.satisfied) for j in outcome.judgements)


@pytest.mark.parametrize("require", [1, 2, 3, 4])
def test_a_run_started_after_its_deadline_decides_the_same_in_every_task_order(latest, require):
    gate = spec(require)
    started = DAY + dt.timedelta(days=400)  # the backfill runs long after the day
    assert started >= gate.deadline(DAY)
    for ends in itertools.product(("success", "failed"), repeat=len(IN_RUN)):
        outcomes = dict(zip(IN_RUN, ends, strict=True))
        expected = decisions(play((*IN_RUN, GATE), outcomes, gate, latest, started))
        for order in itertools.permutations((*IN_RUN, GATE)):
            assert decisions(play(order, outcomes, gate, latest, started)) == expected, (order, outcomes)


def test_a_task_of_the_run_is_never_missing_for_a_run_started_after_its_deadline(latest):
    gate = spec(1)
    outcome = play((GATE, *IN_RUN), dict.fromkeys(IN_RUN, "success"), gate, latest, DAY + dt.timedelta(days=1))
    assert decisions(outcome) == (
        Verdict.ADMIT,
        True,
        (("task:land_a", True), ("task:land_b", True), ("task:land_c", True), (LANDED.key, True), (LATE.key, False)),
    )


def test_a_run_that_started_before_its_deadline_still_counts_a_task_still_running_at_it_missing(latest):
    gate = spec(1)
    started = DAY + dt.timedelta(hours=1)
    outcome = play((GATE, *IN_RUN), dict.fromkeys(IN_RUN, "success"), gate, latest, started)
    assert outcome.degraded
    assert [j.dependency for j in outcome.judgements if not j.satisfied] == [*(f"task:{t}" for t in IN_RUN), LATE.key]
