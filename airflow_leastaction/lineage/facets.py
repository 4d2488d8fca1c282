"""The provider's OpenLineage run facets and dbt batch events. Imported only by Airflow's OpenLineage
provider (through ``[openlineage] custom_run_facets``) and by the dbt drain when that provider is installed.

Each facet names its schema: ``lineage/schemas/LeastActionRunFacets.json`` in the package.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import attr
from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import RunFacet, error_message_run, parent_run

from airflow_leastaction import __version__
from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
from airflow_leastaction.dbt.schema import BatchStatus
from airflow_leastaction.listeners.catalog import admitting_gates, is_gate

log = logging.getLogger(__name__)

#: Where the schema is published (the ``$id`` of the shipped file).
SCHEMA_ID = (
    "https://raw.githubusercontent.com/airflow-leastaction/airflow-leastaction/main/"
    "airflow_leastaction/lineage/schemas/LeastActionRunFacets.json"
)
PRODUCER = f"https://github.com/airflow-leastaction/airflow-leastaction/tree/{__version__}"
#: The facet keys in a run's facets.
CONSUMPTION_FACET = "leastaction_consumption"
DBT_BATCH_FACET = "leastaction_dbtBatch"


@attr.define
class LeastActionConsumptionRunFacet(RunFacet):
    """What a gated task's run consumed: per SATISFIED decision, the upstream, its slot and revision."""

    consumed: list[dict] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_ID}#/$defs/LeastActionConsumptionRunFacet"


@attr.define
class LeastActionDbtBatchRunFacet(RunFacet):
    """One dbt queue batch: the models it built, reused and failed."""

    environment: str
    batchId: str
    status: str
    built: list[str] = attr.field(factory=list)
    reused: list[str] = attr.field(factory=list)
    failed: list[str] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_ID}#/$defs/LeastActionDbtBatchRunFacet"


def consumption_facets(task_instance, ti_state=None, store_factory=CatalogStore) -> dict[str, RunFacet]:
    """``[openlineage] custom_run_facets`` function: the consumption facet of ``task_instance``'s run, for
    a task its gates admitted (empty for a gate itself and for a task nothing admitted). Never raises."""
    task = getattr(task_instance, "task", None)
    if task is None or is_gate(task):
        return {}
    who = AttemptKey(
        task_instance.dag_id,
        task_instance.task_id,
        task_instance.run_id,
        task_instance.map_index if task_instance.map_index is not None else -1,
        task_instance.try_number,
    )
    try:
        rows = store_factory().audit.admitting_decisions(who, admitting_gates(task))
    except Exception as exc:  # the catalog is down: the run's lineage goes without the facet
        log.warning("leastaction: no consumption facet for %s: %s", who, exc)
        return {}
    if not rows:
        return {}
    consumed = [consumed_entry(row) for row in rows]
    return {CONSUMPTION_FACET: LeastActionConsumptionRunFacet(consumed=consumed, producer=PRODUCER)}


def consumed_entry(row: Mapping) -> dict[str, Any]:
    """One consumed decision as the facet lists it."""
    revision = row["upstream_revision"]
    upstream = None
    if row["name"] is not None:
        upstream = {k: row[k] or "" for k in ("name", "project", "account", "partition")}
    return {
        "dependency": row["dependency"],
        "type": row["dependency_type"],
        "gate": row["task_id"],
        "upstream": upstream,
        "slot": row["upstream_slot"].isoformat() if row["upstream_slot"] else None,
        "revision": revision,
        "repair": (revision or 0) > 1,
        "decisionId": row["id"],
    }


#: The OpenLineage run state of a batch, by its status: only a batch that built everything COMPLETEs; a
#: batch whose worker lost the environment was stopped from outside (ABORT); any other failed.
BATCH_RUN_STATES = {BatchStatus.SUCCESS.value: RunState.COMPLETE, BatchStatus.ABANDONED.value: RunState.ABORT}


def batch_run_state(status: str) -> RunState:
    """The run state of a batch that ended ``status`` (an unknown status is a failure, never a success)."""
    return BATCH_RUN_STATES.get(status, RunState.FAIL)


def batch_events(report: Mapping, task_instance, environment: str) -> list[RunEvent]:
    """One run event per batch of a drain's ``report``, a child of the drain task's run (see
    :func:`batch_event`)."""
    from airflow.providers.openlineage.plugins.macros import lineage_job_name, lineage_job_namespace, lineage_run_id

    namespace = lineage_job_namespace()
    parent = parent_run.ParentRunFacet(
        run=parent_run.Run(runId=lineage_run_id(task_instance)),
        job=parent_run.Job(namespace=namespace, name=lineage_job_name(task_instance)),
        producer=PRODUCER,
    )
    job = Job(namespace=namespace, name=f"{lineage_job_name(task_instance)}.dbt_batch")
    return [batch_event(batch, environment, parent, job) for batch in report.get("batches", [])]


def batch_event(batch: Mapping, environment: str, parent: parent_run.ParentRunFacet, job: Job) -> RunEvent:
    """The run event of one batch: its state (:func:`batch_run_state`), its outputs the models it built, and
    where it did not build everything, the error facet saying what failed."""
    built = sorted(u for u, outcome in batch["outcomes"].items() if outcome == "success")
    failed = sorted(u for u, state in batch["settled"].items() if state == "failed")
    facets: dict[str, RunFacet] = {
        "parent": parent,
        DBT_BATCH_FACET: LeastActionDbtBatchRunFacet(
            environment=environment,
            batchId=str(batch["batch_id"]),
            status=batch["status"],
            built=built,
            reused=sorted(batch.get("reused", [])),  # the queue's reuse, where the batch reports it
            failed=failed,
            producer=PRODUCER,
        ),
    }
    state = batch_run_state(batch["status"])
    if state is not RunState.COMPLETE:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=_batch_error(batch, failed), programmingLanguage="python", producer=PRODUCER
        )
    return RunEvent(
        eventType=state,
        eventTime=dt.datetime.now(dt.UTC).isoformat(),
        run=Run(runId=str(uuid.uuid5(uuid.NAMESPACE_URL, f"leastaction-dbt-batch:{batch['batch_id']}")), facets=facets),
        job=job,
        outputs=[OutputDataset(namespace=f"leastaction-dbt://{environment}", name=u) for u in built],
        producer=PRODUCER,
    )


def _batch_error(batch: Mapping, failed: list[str]) -> str:
    unfinished = sorted(u for u, o in batch["outcomes"].items() if o != "success")
    head = f"dbt batch {batch['batch_id']} {batch['status']}"
    if failed:
        head += f"; failed: {', '.join(failed)}"
    if unfinished:
        head += f"; not built: {', '.join(unfinished)}"
    detail = batch.get("message")
    return f"{head}\n{detail}" if detail else head


def emit_batch_events(report: Mapping, task_instance, environment: str) -> int:
    """Emit :func:`batch_events` through the OpenLineage provider (nothing when it is disabled); returns
    how many were emitted. Never raises: lineage never fails a drain."""
    try:
        from airflow.providers.openlineage import conf as lineage_conf
        from airflow.providers.openlineage.plugins.listener import get_openlineage_listener

        if lineage_conf.is_disabled():
            return 0
        adapter = get_openlineage_listener().adapter
        events = batch_events(report, task_instance, environment)
        for event in events:
            adapter.emit(event)
        return len(events)
    except Exception as exc:
        log.warning("leastaction: dbt batch lineage of %r not emitted: %s", environment, exc)
        return 0
