"""Writing from a trigger that ends its task in the triggerer (Airflow's ``start_from_trigger``).

Such a task never runs on a worker, so the task listener's hooks never fire for it: the trigger records
what a worker would have, with the same functions, off the triggerer's event loop (the catalog calls are
synchronous). The run-end reconciliation still records every task's final state when the run ends.
"""

from __future__ import annotations

import datetime as dt

from airflow.triggers.base import BaseTaskEndEvent, TaskSkippedEvent, TaskSuccessEvent
from asgiref.sync import sync_to_async

from airflow_leastaction.catalog.audit import AttemptKey, RerunOnArrival
from airflow_leastaction.gating.admission import Admission, GateMode, settle
from airflow_leastaction.gating.engine import GateOutcome
from airflow_leastaction.hooks.catalog import store_at


async def settle_from_trigger(
    url: str,
    attempt: AttemptKey,
    outcome: GateOutcome,
    *,
    downstream_slot: dt.datetime | None,
    mode: GateMode,
    rerun: RerunOnArrival | None = None,
) -> Admission:
    """:func:`~airflow_leastaction.gating.admission.settle` for ``attempt``, from the triggerer."""

    def run() -> Admission:
        # Once: a trigger run again after its triggerer restarted keeps the decisions it recorded before.
        store = store_at(url)
        return settle(store, attempt, outcome, downstream_slot=downstream_slot, mode=mode, once=True, rerun=rerun)

    return await sync_to_async(run)()


async def record_success_from_trigger(ti, *, gate: bool, read_rows: bool = False) -> None:
    """Record ``ti``'s success as the task listener would on a worker (never raises).

    ``gate`` False: the task consumes its own admission, in the same transaction as its success.
    ``read_rows``: read the rows the task reported (an XCom: a round trip through Airflow's API, whose
    first use in a triggerer can take seconds); a gate reports none.
    """
    from airflow_leastaction.listeners.catalog import record_outcome

    await sync_to_async(record_outcome)(ti, "success", gate=gate, read_rows=read_rows)


def end_event(admission: Admission) -> BaseTaskEndEvent:
    """The task-end event of a settled gate: success when it admitted, skipped otherwise (its gated task
    is then skipped by Airflow's own trigger rule, as when the gate skips on a worker)."""
    return TaskSuccessEvent() if admission.admitted else TaskSkippedEvent()
