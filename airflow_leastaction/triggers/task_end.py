"""Ending a gate's task in the triggerer: its decisions are recorded there, then the task ends.

A gate started in the triggerer (Airflow's ``start_from_trigger``) never runs on a worker. Its trigger
records the decisions with :func:`~airflow_leastaction.admission.settle`, the rule every gate follows, and
ends the task with one of Airflow's task-end events. The write goes through a thread (``sync_to_async``),
so the triggerer's event loop never waits on the catalog.
"""

from __future__ import annotations

import datetime as dt

from airflow.triggers.base import BaseTaskEndEvent, TaskSkippedEvent, TaskSuccessEvent
from asgiref.sync import sync_to_async

from airflow_leastaction.admission import Admission, settle
from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.gate import GateOutcome


async def settle_in_triggerer(
    url: str, attempt: AttemptKey, outcome: GateOutcome, *, downstream_slot: dt.datetime | None, mode: str
) -> Admission:
    """:func:`~airflow_leastaction.admission.settle` for ``attempt``, on the catalog at ``url``."""

    def write() -> Admission:
        from airflow_leastaction.catalog.engine import get_engine
        from airflow_leastaction.catalog.store import CatalogStore

        return settle(CatalogStore(get_engine(url)), attempt, outcome, downstream_slot=downstream_slot, mode=mode)

    return await sync_to_async(write)()


def end_event(admission: Admission) -> BaseTaskEndEvent:
    """The task-end event of a settled gate: success when it admitted, skipped otherwise (its gated task
    is then skipped by Airflow's own trigger rule, as when the gate skips on a worker)."""
    return TaskSuccessEvent() if admission.admitted else TaskSkippedEvent()
