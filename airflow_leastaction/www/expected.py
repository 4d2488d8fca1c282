"""Expected times on the pages: the line of a waiting gate's card, a catalog task's next slot, ``/api/eta``.

Each page asks once for everything it shows (one read of each kind per gate condition, see
:func:`~airflow_leastaction.expectations.reads.expectations_with_dags`), words times of day in the page's
zone, and withholds the name of a task of a DAG the reader may not read wherever a line would name it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import replace

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.expectations.estimate import Expectation, task_of_key
from airflow_leastaction.expectations.reads import airflow_identities, expectations_with_dags, next_slot_after_watermark
from airflow_leastaction.expectations.wording import expectation_line
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_dag
from airflow_leastaction.www import airflow_state
from airflow_leastaction.www.attempts import AttemptView
from airflow_leastaction.www.declared import Gate
from airflow_leastaction.www.present import Clock
from airflow_leastaction.www.queries import DagScope
from airflow_leastaction.www.reads import CatalogReads

#: What a line says instead of the name of a task of a DAG the reader may not read.
WITHHELD = "a task of a DAG you may not read"


def withhold(found: Expectation, dags: Mapping[str, str | None], scope: DagScope) -> Expectation:
    """``found`` without the names of tasks (``dags``: each task's DAG) the reader may not read."""
    hidden = {name for name, dag_id in dags.items() if not scope.allows(dag_id)}
    if not hidden:
        return found
    reason = found.reason
    for name in hidden:
        for after in (" (", ";"):
            reason = reason.replace(f"waiting on {name}{after}", f"waiting on {WITHHELD}{after}")
    path = tuple(
        f"{WITHHELD}@{key.rpartition('@')[2]}" if task_of_key(key) in hidden else key for key in found.critical_path
    )
    return replace(found, reason=reason, critical_path=path)


def gate_mode(gate: Gate | None) -> str | int:
    """How many of a gate's parents must complete: ``ALL``, ``ANY`` or N (ALL when the DAG does not say)."""
    if gate is None or gate.condition is None:
        return "ALL"
    return gate.condition.count if gate.condition.kind == "N" else gate.condition.kind


def expect_cards(
    reads: CatalogReads, views: Sequence[AttemptView], clock: Clock, now: dt.datetime, scope: DagScope
) -> None:
    """Give each waiting gate's card (``views``) its expected-time line: when the task it admits is expected
    to be done for the run's slot (a DAG's run gate: the run, as the DAG's catalog identity), and which
    parent decides it."""
    waiting = [v for v in views if v.verdict.outcome == "waiting" and v.gate is not None]
    if not waiting:
        return
    slots = airflow_state.run_slots({(v.key.dag_id, v.key.run_id) for v in waiting})
    tasks = [v for v in waiting if v.gate.kind != "run gate"]
    identities = airflow_identities(reads, {(v.key.dag_id, v.gated[0]) for v in tasks if v.gated})
    by_mode: dict[str | int, list[tuple[AttemptView, TaskIdentity, dt.datetime]]] = {}
    for view in waiting:
        if view.gate.kind == "run gate":
            identity = airflow_dag(view.key.dag_id)
        else:
            identity = identities.get((view.key.dag_id, view.gated[0])) if view.gated else None
        slot = slots.get((view.key.dag_id, view.key.run_id))
        if identity is not None and slot is not None:
            by_mode.setdefault(gate_mode(view.gate), []).append((view, identity, slot))
    for mode, cards in by_mode.items():
        targets = [(identity, slot) for _, identity, slot in cards]
        found, dags = expectations_with_dags(reads, targets, now, mode=mode, zone=clock.zone)
        for view, identity, slot in cards:
            view.expected = expectation_line(withhold(found[(str(identity), slot)], dags, scope), clock.zone, now)


def expect_next_slots(
    reads: CatalogReads, tasks: Sequence[Mapping], clock: Clock, now: dt.datetime, scope: DagScope
) -> dict[int, tuple[dt.datetime, str]]:
    """The next slot not yet complete of each scheduled catalog task row, with its expected-time line, by
    the row's id (a task whose schedule cannot be read is left out)."""
    targets = {}
    for row in tasks:
        try:
            slot = next_slot_after_watermark(row["cron"], row["timezone"], row["prev_interval_start"], now)
        except ConfigurationError:
            continue
        if slot is not None:
            targets[row["id"]] = (TaskIdentity.from_row(row), slot)
    if not targets:
        return {}
    found, dags = expectations_with_dags(reads, list(targets.values()), now, zone=clock.zone)
    return {
        pk: (slot, expectation_line(withhold(found[(str(identity), slot)], dags, scope), clock.zone, now))
        for pk, (identity, slot) in targets.items()
    }
