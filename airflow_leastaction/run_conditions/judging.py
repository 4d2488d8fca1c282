"""One evaluation of a run-condition gate: every dependency judged, combined under the run condition.

Pure: the worker (``execute``/``execute_complete``) and the trigger feed it what they read (Airflow task
states of the run, catalog slot records, the latest runs of tasks in other DAGs) and get the same answer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace

from airflow_leastaction.exceptions import RowsUnreadableWaitError
from airflow_leastaction.gating.engine import (
    DependencyType,
    GateOutcome,
    Judgement,
    Verdict,
    decide,
    decide_at_deadline,
    judge_upstream_task,
    run_settled,
)
from airflow_leastaction.gating.fallback import awaits_own_run
from airflow_leastaction.intervals.coverage import snapshot_requests
from airflow_leastaction.intervals.parents import judge_parents
from airflow_leastaction.run_conditions.latest_run import LatestRuns, RunRecord, judge_latest_run
from airflow_leastaction.run_conditions.model import GateSpec, task_key, task_of_key
from airflow_leastaction.run_conditions.wait_rule import (
    WaitClock,
    WaitPolicy,
    after_look,
    budget_left,
    due,
    start,
)
from airflow_leastaction.states import NOT_STARTED_STATES, TERMINAL_STATES, UNFINISHED_STATES


@dataclass(frozen=True)
class RunView:
    """What the gate knows about its own DAG run.

    :param run_id: the run.
    :param states: Airflow state of every task of the run.
    :param upstream: direct upstream task ids of every task (to tell blocked tasks from ready ones).
    :param waiting: gates and the run-outcome task: they start nothing by themselves.
    :param records: catalog slot records of the in-run upstreams, by task id.
    """

    run_id: str
    states: Mapping[str, str | None]
    upstream: Mapping[str, list[str]]
    waiting: frozenset[str]
    records: Mapping[str, RunRecord]

    @property
    def settled(self) -> bool:
        return run_settled(dict(self.states), self.upstream, self.waiting)


def judge_in_run(spec: GateSpec, run: RunView) -> list[Judgement]:
    settled = None
    out = []
    for dep in spec.dependencies:
        if not dep.in_run:
            continue
        state = run.states.get(dep.upstream)
        rec = run.records.get(dep.upstream)
        if rec is not None and (rec.run_id != run.run_id or rec.state != state):
            rec = None  # the catalog has not caught up with this run's outcome yet
        undecided = state == "failed" or (state == "success" and rec is None and dep.type is DependencyType.HAS_DATA)
        if undecided and settled is None:
            settled = run.settled  # only worth computing when a judgement depends on it
        selected = (
            None
            if rec is None
            else {
                "upstream_task_pk": rec.task_pk,
                "upstream_run_pk": rec.pk,
                "upstream_slot": rec.slot,
                "upstream_revision": rec.output_revision,
            }
        )
        out.append(
            judge_upstream_task(
                dep.key,
                dep.type,
                state,
                run_settled=bool(settled),
                rows_written=rec.rows_written if rec else None,
                rows_error=rec.rows_error if rec else None,
                record_known=rec is not None,
                selected=selected,
            )
        )
    return out


def whole_interval_requests(spec: GateSpec, start: dt.datetime, end: dt.datetime | None) -> list[tuple]:
    """The catalog snapshot requests of the dependencies judged on the whole interval ``[start, end)``."""
    parents = [d.upstream for d in spec.elsewhere if d.whole_interval]
    return snapshot_requests(parents, ["interval"] * len(parents), start, end)


def judge_whole_intervals(spec: GateSpec, snapshot, start: dt.datetime, end: dt.datetime | None) -> dict:
    """Per catalog identity, its whole-interval judgement (``coverage="interval"``) from a snapshot."""
    parents = [d.upstream for d in spec.elsewhere if d.whole_interval]
    if not parents:
        return {}
    return dict(
        zip(parents, judge_parents(parents, start, snapshot, interval_end=end, coverage="interval"), strict=True)
    )


def _judge_whole_interval(d, intervals: Mapping, may_wait: bool) -> Judgement:
    # Slots of the interval may still complete: wait for them within the budget, then the judgement stands.
    j = intervals.get(d.upstream)
    if j is None:
        return Judgement(d.key, False, f"{d.label} ({d.type.value}): not read yet", d.type, final=not may_wait)
    reason = j.reason.removeprefix(f"{d.upstream.name}: ")
    return Judgement(
        d.key,
        j.satisfied,
        f"{d.label} ({d.type.value}): {reason}",
        d.type,
        final=j.satisfied or not may_wait,
        rejected=j.rejected,
        upstream_task_pk=j.upstream_task_pk,
        upstream_run_pk=j.upstream_run_pk,
        upstream_slot=j.upstream_slot,
        upstream_revision=j.upstream_revision,
        in_flight=j.in_flight,
    )


def judge_elsewhere(
    spec: GateSpec,
    latest: Mapping,
    consumed: Mapping[str, tuple[dt.datetime, int]],
    clock: WaitClock,
    policy: WaitPolicy,
    now: dt.datetime,
    intervals: Mapping | None = None,
) -> tuple[list[Judgement], WaitClock]:
    """Judge the dependencies on tasks in other DAGs; count a look when one is due and finds a run of
    one of them in progress (see :mod:`~airflow_leastaction.run_conditions.wait_rule`): for one judged on
    the whole interval, one of its missing slots running (queued, running or up for retry); slots that
    have not run yet are waited for within ``max_wait`` alone.

    ``intervals`` holds the judgements of those judged on the whole interval (:func:`judge_whole_intervals`).
    """
    may_wait = budget_left(clock, policy, now)
    out = [
        _judge_whole_interval(d, intervals or {}, may_wait)
        if d.whole_interval
        else judge_latest_run(
            d.key,
            d.type,
            d.label,
            latest.get(d.upstream),
            may_wait=may_wait,
            consumed=consumed.get(d.key),
            consume_repairs=d.consume_repairs,
        )
        for d in spec.elsewhere
    ]
    if spec.elsewhere and due(clock, now):
        in_progress = []
        for d, j in zip(spec.elsewhere, out, strict=True):
            runs: LatestRuns | None = latest.get(d.upstream)
            if j.rows_unreadable:
                continue  # waits for a re-run, not for a run in progress: spends max_wait alone, no look
            if not j.final and d.whole_interval and j.in_flight:
                in_progress.append((now, None))  # no run length to time the next look by
            elif not j.final and runs is not None and runs.latest is not None:
                in_progress.append((runs.latest.started_at or now, runs.average))
        clock = after_look(clock, in_progress, now, policy)
    return out, clock


def held_by_run_gate(spec: GateSpec, run: RunView) -> GateOutcome | None:
    """WAIT while the DAG's run gate judges the run's dependencies on other pipelines, SKIP when it did not
    admit the run; None once it admitted it (or the DAG has none)."""
    if spec.run_gate is None:
        return None
    state = run.states.get(spec.run_gate)
    state = None if state in NOT_STARTED_STATES else str(state)
    if state == "success":
        return None
    dependency = task_key(spec.run_gate)
    if state in UNFINISHED_STATES:
        held = Judgement(
            dependency,
            False,
            f"{spec.run_gate}: the run's dependencies on other pipelines are not judged yet; waiting",
            final=False,
        )
        return GateOutcome(Verdict.WAIT, spec.condition, (held,))
    held = Judgement(
        dependency,
        False,
        f"{spec.run_gate} is {state}: the run's dependencies on other pipelines "
        "are not met, so no task of this run starts",
        final=True,
    )
    return GateOutcome(Verdict.SKIP, spec.condition, (held,))


def evaluate(
    spec: GateSpec,
    run: RunView,
    latest: Mapping,
    consumed: Mapping[str, tuple[dt.datetime, int]],
    clock: WaitClock,
    policy: WaitPolicy,
    now: dt.datetime,
    intervals: Mapping | None = None,
    deadline: dt.datetime | None = None,
    run_started: dt.datetime | None = None,
) -> tuple[GateOutcome, WaitClock]:
    """Judge every dependency and decide ADMIT, WAIT or SKIP.

    A task is never skipped while one of its upstreams in its own run has not finished: dependencies on
    other DAGs alone do not skip it before it could have started. Their check (its wait clock and look
    budget) starts when every same-run dependency is final; before that a running upstream elsewhere
    is simply waited for (it may still satisfy an ANY or N early). Nothing is judged before the DAG's run
    gate (if any) admitted the run. ``deadline``: the fallback's (:meth:`GateSpec.deadline`), and
    ``run_started``: when the run started (None: not known), see :func:`with_fallback`. Raises
    :class:`~airflow_leastaction.exceptions.RowsUnreadableWaitError` when the wait budget is spent while a
    HAS_DATA dependency still waits on rows written that could not be read.
    """
    held = held_by_run_gate(spec, run)
    if held is not None:
        return held, clock
    in_run = judge_in_run(spec, run)
    if all(j.final or j.rows_unreadable for j in in_run):  # unreadable rows wait within max_wait
        clock = start(clock, now)
    elsewhere, clock = judge_elsewhere(spec, latest, consumed, clock, policy, now, intervals)
    if deadline is not None and spec.fallback is not None:
        outcome = with_fallback(spec, in_run, elsewhere, now, deadline, run_started)
    else:
        outcome = decide(spec.condition, in_run + elsewhere)
    if outcome.verdict is Verdict.SKIP and any(not j.final for j in in_run):
        outcome = GateOutcome(Verdict.WAIT, outcome.condition, outcome.judgements)
    if outcome.verdict is Verdict.WAIT and not budget_left(clock, policy, now):
        unreadable = [j.reason for j in outcome.judgements if j.rows_unreadable]
        if unreadable:
            raise RowsUnreadableWaitError(spec.task_id, unreadable)
    return outcome, clock


def with_fallback(
    spec: GateSpec,
    in_run: list[Judgement],
    elsewhere: list[Judgement],
    now: dt.datetime,
    deadline: dt.datetime,
    run_started: dt.datetime | None = None,
) -> GateOutcome:
    """A gate with a fallback. From its deadline on: :func:`decide_at_deadline` (in full, degraded or
    skipped, whatever is still running). Before it, a dependency on another DAG that is not satisfied may
    still get a run: it is waited for, and the task is skipped only when even the fallback can no longer
    be met by what may still come. At the deadline a task of the gate's own run still running is late data
    like any other (MISSING when ``require`` others are there), but the gate is never skipped before its
    run's tasks have ended: below ``require`` it waits with their judgements as they are (not final), so
    the gate sees its run pending and gives the run's other tasks their turn. A run that started after its
    deadline (:func:`~airflow_leastaction.gating.fallback.awaits_own_run`) waits for its own tasks to end before
    the deadline's rule applies: the same decisions in whatever order its tasks ran."""
    if now >= deadline and awaits_own_run(deadline, run_started) and any(not j.final for j in in_run):
        outcome = decide(spec.condition, in_run + elsewhere)
        return (
            outcome
            if outcome.verdict is Verdict.ADMIT
            else GateOutcome(Verdict.WAIT, spec.condition, outcome.judgements)
        )
    if now >= deadline:
        outcome = decide_at_deadline(spec.condition, in_run + elsewhere, spec.fallback.require, deadline.isoformat())
        if outcome.verdict is Verdict.SKIP and any(not j.final for j in in_run):
            return GateOutcome(Verdict.WAIT, spec.condition, tuple(in_run + elsewhere))
        return outcome
    judged = in_run + [j if j.satisfied else replace(j, final=False) for j in elsewhere]
    outcome = decide(spec.condition, judged)
    possible = sum(1 for j in judged if j.satisfied or not j.final)
    if outcome.verdict is Verdict.SKIP and possible >= spec.fallback.require:
        return GateOutcome(Verdict.WAIT, outcome.condition, outcome.judgements)
    return outcome


def in_run_unfinished(spec: GateSpec, states: Mapping[str, str | None]) -> list[str]:
    """Same-run upstreams not yet in a terminal Airflow state. What a relaxed gate (``gates = warn|off``)
    still waits for when the catalog cannot be read: relaxing never reorders a run."""
    return [d.upstream for d in spec.in_run if states.get(d.upstream) not in TERMINAL_STATES]


def in_run_pending(outcome: GateOutcome) -> bool:
    """Whether a same-run dependency is not final yet: a relaxed gate still waits for it. Rows written that
    could not be read wait for a re-run, not for the run: they are not pending (the gate's max_wait ends it)."""
    return any(
        not j.final and not j.rows_unreadable for j in outcome.judgements if task_of_key(j.dependency) is not None
    )
