"""Gate attempts as the pages show them: each with its verdict, its gate and all its decisions.

Glue between the catalog (decisions, :mod:`~airflow_leastaction.www.reads`), Airflow's records (DAGs as
serialized, task instances: :mod:`~airflow_leastaction.www.airflow_state`) and the pure verdict
(:mod:`~airflow_leastaction.www.verdicts`). Each page reads each of them once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.run_conditions.model import gated_task_id
from airflow_leastaction.www import airflow_state
from airflow_leastaction.www.declared import DeclaredTask, Gate, gates_of, native_gate
from airflow_leastaction.www.queries import EVERY_DAG, DagScope
from airflow_leastaction.www.reads import ROWS_PER_ATTEMPT, CatalogReads
from airflow_leastaction.www.verdicts import Tally, TaskInstanceFacts, Verdict, group_attempts, verdict


@dataclass
class AttemptView:
    """One gate attempt: what it came to (``verdict``), and every dependency it judged (``rows``)."""

    key: AttemptKey
    rows: list[dict]
    verdict: Verdict
    gate: Gate | None
    #: A waiting attempt: when the task it admits is expected to be done (see :mod:`~.expected`).
    expected: str = ""
    #: The early warnings of the attempt's run before the gate's deadline (newest deadline first).
    warnings: list[dict] = field(default_factory=list)

    @property
    def gated(self) -> tuple[str, ...]:
        """The tasks this attempt admits (itself for a native condition)."""
        if self.gate is not None:
            return self.gate.gated
        return (gated_task_id(self.key.task_id) or self.key.task_id,)


class DagGates:
    """The gates of the DAGs a page shows, each DAG read from Airflow once."""

    def __init__(self, dag_ids):
        self.tasks: dict[str, dict[str, DeclaredTask]] = airflow_state.declared_tasks(dag_ids)
        self._gates: dict[str, dict[str, Gate]] = {}

    def gates(self, dag_id: str) -> dict[str, Gate]:
        if dag_id not in self._gates:
            self._gates[dag_id] = gates_of(self.tasks.get(dag_id, {}))
        return self._gates[dag_id]

    def of(self, dag_id: str, task_id: str, rows: Sequence[Mapping] = ()) -> Gate | None:
        """The gate whose attempts ``task_id`` records: a gate task, or a task with a native condition."""
        gate = self.gates(dag_id).get(task_id)
        if gate is not None:
            return gate
        declared = self.tasks.get(dag_id, {}).get(task_id)
        if declared is None or not rows:
            return None
        return native_gate(declared, [(r["dependency"], r["dependency_type"]) for r in rows])

    def admitting(self, dag_id: str, task_id: str) -> Gate | None:
        """The gate that admits ``task_id`` (the task itself when it is one), if any."""
        gates = self.gates(dag_id)
        if task_id in gates:
            return gates[task_id]
        return next((g for g in gates.values() if task_id in g.gated), None)


def attempt_views(
    reads: CatalogReads, page_rows: Sequence[dict], scope: DagScope = EVERY_DAG, rows: int = ROWS_PER_ATTEMPT
) -> list[AttemptView]:
    """The attempts of ``page_rows`` (decisions chosen by a page's filters), each with its first ``rows``
    decisions and a verdict over all of them."""
    order = list(group_attempts(page_rows))
    if not order:
        return []
    everything = group_attempts(reads.attempt_rows(order, scope, rows))
    # Each attempt's counts were written with its decisions: the page reads them, it does not count.
    tallies = reads.attempt_tallies(order)
    dags = DagGates(k.dag_id for k in order)
    facts = airflow_state.task_instances((k.dag_id, k.task_id, k.run_id, k.map_index) for k in order)
    views = []
    for key in order:
        shown = everything.get(key, [])
        ti = facts.get((key.dag_id, key.task_id, key.run_id, key.map_index))
        state = ti.state if ti is not None and ti.try_number == key.attempt else None
        gate = dags.of(key.dag_id, key.task_id, shown)
        counts = tallies.get((key.dag_id, key.task_id, key.run_id, key.map_index, key.attempt))
        tally = Tally(*counts) if counts else None
        views.append(AttemptView(key, shown, verdict(shown, gate, ti, decided_state=state, tally=tally), gate))
    return views


def with_warnings(reads: CatalogReads, views: list[AttemptView]) -> list[AttemptView]:
    """``views`` (a page's cards) with their runs' deadline warnings, read in one statement for all."""
    if not views:
        return views
    found = reads.deadline_warnings((v.key.dag_id, v.key.run_id, v.key.task_id, v.key.map_index) for v in views)
    for v in views:
        v.warnings = found.get((v.key.dag_id, v.key.run_id, v.key.task_id, v.key.map_index), [])
    return views


def undecided_view(dag_id: str, task_id: str, run_id: str, map_index: int) -> tuple[AttemptView | None, str]:
    """A task instance with no decision yet: the waiting (or never judged) attempt of the gate that
    admits it, or None and the trigger rule that starts it when no gate does."""
    dags = DagGates([dag_id])
    gate = dags.admitting(dag_id, task_id)
    declared = dags.tasks.get(dag_id, {}).get(task_id)
    if gate is None:
        return None, declared.trigger_rule if declared is not None else ""
    facts = airflow_state.task_instances([(dag_id, gate.task_id, run_id, map_index)])
    ti = facts.get((dag_id, gate.task_id, run_id, map_index))
    key = AttemptKey(dag_id, gate.task_id, run_id, map_index, ti.try_number if ti else 0)
    return AttemptView(key, [], verdict([], gate, ti), gate), ""


def waiting_views(dag_ids, limit: int = 25) -> list[AttemptView]:
    """Gates waiting now, in the readable DAGs (``dag_ids`` None: every DAG)."""
    waiting = airflow_state.waiting_gates(dag_ids, limit)
    dags = DagGates({k[0] for k, _ in waiting})
    out = []
    for (dag_id, task_id, run_id, map_index), ti in waiting:
        gate = dags.of(dag_id, task_id)
        key = AttemptKey(dag_id, task_id, run_id, map_index, ti.try_number)
        out.append(AttemptView(key, [], verdict([], gate, ti), gate))
    return out


__all__ = ["AttemptView", "DagGates", "TaskInstanceFacts", "attempt_views", "undecided_view", "waiting_views"]
