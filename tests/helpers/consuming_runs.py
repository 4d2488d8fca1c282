"""Writing the catalog as the provider writes an Airflow task's run: its gate's decisions on its parents'
runs of the same slot and, with its success, what it consumed (``record_decisions``, then
``record_success`` with the consumer's attempt)."""

from __future__ import annotations

import datetime as dt

from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.gating.engine import Judgement

DAILY = "0 0 * * *"


def run(store, identity, slot: dt.datetime, parents=(), cron: str = DAILY) -> None:
    """One run of Airflow task ``identity`` (named ``<dag_id>.<task_id>``) at ``slot``: its gate admits it
    on its parents' runs of that slot, and its success consumes them."""
    dag_id, task_id = identity.name.split(".")
    attempt = AttemptKey(dag_id, task_id, f"scheduled__{slot.isoformat()}", -1, 1)
    judged = []
    for parent in parents:
        (record,) = [s for s in store.snapshot([(parent, slot)])[1] if s.slot == slot]
        judged.append(
            Judgement(
                parent.key,
                True,
                "completed",
                upstream_task_pk=record.task_pk,
                upstream_run_pk=record.pk,
                upstream_slot=slot,
                upstream_revision=record.output_revision,
            )
        )
    if judged:
        store.audit.record_decisions(attempt, judged, downstream_slot=slot)
    meta = TaskMeta(cron=cron, timezone="UTC", dag_id=dag_id, task_id=task_id)
    store.record_success(identity, slot, meta=meta, run_id=attempt.run_id, consumer=attempt if judged else None)
