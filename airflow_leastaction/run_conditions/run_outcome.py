"""What the run-outcome task concludes from the final states of its run's other tasks. Pure logic.

Airflow decides a run's state from its leaf tasks; with gates, a failure is followed by skipped tasks and
alert paths that succeed, which would leave the run green. The run fails when any task of it failed, and
the summary names the tasks kept from running because of the failure (gates left out: they are plumbing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from airflow_leastaction.run_conditions.model import is_gate_task_id
from airflow_leastaction.states import KEPT_FROM_RUNNING_STATES

#: The run-outcome task's id: one per DAG with run conditions, added by the declaration helpers.
RUN_OUTCOME_TASK_ID = "leastaction_run_outcome"

#: The XCom key of the run-outcome task's summary.
RUN_SUMMARY_KEY = "leastaction_run_summary"


@dataclass(frozen=True)
class RunSummary:
    failed: tuple[str, ...]
    skipped_because_of_failure: tuple[str, ...]

    def as_dict(self) -> dict[str, list[str]]:
        return {"failed": list(self.failed), "skipped_because_of_failure": list(self.skipped_because_of_failure)}

    def message(self) -> str:
        because = ", ".join(self.skipped_because_of_failure) or "none"
        return f"run failed: {', '.join(self.failed)} failed; skipped because of the failure: {because}"


def summarize(states: Mapping[str, str | None], downstream: Callable[[str], Iterable[str]]) -> RunSummary:
    """The failed tasks of ``states`` and the tasks downstream of them that were kept from running.

    ``downstream(task_id)`` gives a task's direct downstream task ids.
    """
    failed = sorted(t for t, s in states.items() if s == "failed")
    seen: set[str] = set()
    todo = list(failed)
    while todo:
        for down in downstream(todo.pop()):
            if down not in seen:
                seen.add(down)
                todo.append(down)
    because = sorted(t for t in seen if states.get(t) in KEPT_FROM_RUNNING_STATES and not is_gate_task_id(t))
    return RunSummary(tuple(failed), tuple(because))
