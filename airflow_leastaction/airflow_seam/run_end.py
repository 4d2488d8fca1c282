"""What a finished run leaves in the catalog: every task's final state, and one state per mapped task.

Airflow sets some final states without running the task (skipped by a trigger rule, a branch or a gate;
upstream_failed; an empty task marked success by the scheduler), so no worker ever reports them. When a
run ends its final task states are compared with the slot records this run left, and what is missing
or different is recorded. Pure, no Airflow import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from airflow_leastaction.run_conditions.latest_run import RunRecord
from airflow_leastaction.states import RECORDED_FINAL_STATES


@dataclass(frozen=True)
class TaskOutcome:
    """The final state of one task instance of a run (``map_index`` -1: unmapped, or a mapped task as a
    whole)."""

    task_id: str
    map_index: int
    state: str
    attempt: int = 1


def mapped_task_state(states: Iterable[str | None]) -> str | None:
    """The state of a mapped task as a whole in one slot, from the states of its map indexes.

    A parent named without a map index is done when every map index is: ``success`` when all succeeded;
    ``failed`` (else ``upstream_failed``) when any did; otherwise ``skipped``, as Airflow skips an
    ``all_success`` downstream of a partly skipped mapped task. None while any map index is unfinished.
    """
    kept = [s for s in states if s != "removed"]
    if not kept or any(s not in RECORDED_FINAL_STATES for s in kept):
        return None
    if all(s == "success" for s in kept):
        return "success"
    for state in ("failed", "upstream_failed"):
        if state in kept:
            return state
    return "skipped"


def run_outcomes(final: Iterable[TaskOutcome]) -> list[TaskOutcome]:
    """Each finished task instance of a run, plus each mapped task as a whole (map index -1)."""
    final = list(final)
    mapped: dict[str, list[TaskOutcome]] = {}
    for outcome in final:
        if outcome.map_index >= 0:
            mapped.setdefault(outcome.task_id, []).append(outcome)
    out = [o for o in final if o.state in RECORDED_FINAL_STATES]
    for task_id, instances in sorted(mapped.items()):
        state = mapped_task_state(o.state for o in instances)
        if state is not None:
            out.append(TaskOutcome(task_id, -1, state, max(o.attempt for o in instances)))
    return out


def outcomes_to_record(
    outcomes: Iterable[TaskOutcome],
    recorded: Mapping[tuple[str, int], RunRecord | None],
    run_id: str,
    mapped_task_ids: Iterable[str] = (),
) -> list[TaskOutcome]:
    """The outcomes the catalog lacks for this run, keyed ``(task_id, map_index)`` in ``recorded``.

    A success of a task instance that started on a worker is left to the worker's own report (it carries
    the rows written and the consumption of its gate decisions, and is spooled, never lost, while the
    catalog is down): only a success with no record of this run at all is recorded here. Every other
    final state, and the state of a mapped task as a whole, is recorded wherever the catalog differs.
    """
    wholes = set(mapped_task_ids)
    missing = []
    for outcome in outcomes:
        record = recorded.get((outcome.task_id, outcome.map_index))
        mine = record is not None and record.run_id == run_id
        if mine and record.state == outcome.state:
            continue
        whole = outcome.map_index < 0 and outcome.task_id in wholes
        if outcome.state == "success" and mine and not whole:
            continue
        missing.append(outcome)
    return missing
