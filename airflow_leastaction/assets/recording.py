"""Asset events recorded in the catalog as slot records of the asset's identity
(:func:`~airflow_leastaction.refs.airflow_asset`), so a sensor, a run condition or a whole-DAG condition can
wait for an asset's partition. The provider's listener calls :func:`record` wherever Airflow records an
asset event (the API server for task outlets and the REST API, the triggerer for watchers).

The slot of an event is its ``partition_date``, else its partition key read with the asset's key format,
else the slot of the task run that produced it, else the time it was recorded. The identity's schedule is
the one the asset declares (:func:`asset_schedule`), else the producing task's. ``rows_written`` comes from
the event's extra. Each event completes its slot: a second event for a recorded slot is a repair.

A task's event is keyed by the try that produced it (the task instance's id, new for each try, and its
try number), read from Airflow's database: the same event delivered again changes nothing, while the
event of a cleared and re-run task is a repair. When the try cannot be read the event is recorded as a
new completion: its consumers are told to rebuild rather than a repair being dropped.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import uuid
from typing import NamedTuple

from sqlalchemy import select

from airflow_leastaction.assets.keys import DEFAULT_KEY_FORMAT, check_key_format, slot_of_key
from airflow_leastaction.catalog.outcomes import SlotEvent, deliver
from airflow_leastaction.catalog.schema import identity_clause, task, task_run
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from airflow_leastaction.crash_points import CrashPoint
from airflow_leastaction.refs import airflow_asset, airflow_task
from airflow_leastaction.triggers.wire import read_slot_event

log = logging.getLogger(__name__)

#: The key of an asset's extra holding what the catalog records it with.
EXTRA_KEY = "leastaction"

#: The steps of recording one event, after Airflow committed it.
OUTCOME_BUILT = CrashPoint("asset_recording.outcome_built", "the event's slot outcome built; the catalog not written")
RECORDED = CrashPoint("asset_recording.recorded", "the slot record written (or spooled); the listener not returned")


def asset_schedule(cron: str | None, timezone: str = "UTC", key_format: str = DEFAULT_KEY_FORMAT) -> dict:
    """An asset's extra saying how the catalog records its events: ``Asset("orders", extra=asset_schedule(
    "0 * * * *"))``. Children judge the asset's identity by ``cron`` (None: ad hoc) in ``timezone``; its
    partition keys are read with ``key_format`` in that timezone. Checked when the DAG is parsed."""
    meta = TaskMeta(cron=cron, timezone=timezone)
    check_key_format(key_format, f"asset_schedule({cron!r})")
    return {EXTRA_KEY: {"cron": meta.cron, "timezone": meta.timezone, "key_format": key_format}}


def record(asset_event, store_factory=CatalogStore) -> None:
    """Record ``asset_event`` (Airflow's listener event) in the catalog; never raises. The events of the
    provider's own watchers are not recorded again: their catalog task is in the catalog already."""
    if read_slot_event(asset_event.extra) is not None:
        return
    try:
        event = slot_event_of(asset_event, store_factory)
    except Exception as exc:
        log.warning("asset %r: event not recorded in the catalog: %s", asset_event.asset.name, exc)
        return
    if event is not None:
        OUTCOME_BUILT()
        deliver(event, store_factory)
        RECORDED()


def slot_event_of(asset_event, store_factory=CatalogStore) -> SlotEvent | None:
    """The catalog outcome of ``asset_event``: a success of one slot of the asset's identity."""
    asset = asset_event.asset
    declared = (getattr(asset, "extra", None) or {}).get(EXTRA_KEY) or {}
    timezone = declared.get("timezone", "UTC")
    meta = TaskMeta(cron=declared.get("cron"), timezone=timezone, source="asset") if "cron" in declared else None
    produced = _producing_run(asset_event, store_factory)
    slot = getattr(asset_event, "partition_date", None)
    key = asset_event.partition_key
    if slot is None and key is not None:
        try:
            slot = slot_of_key(key, timezone, declared.get("key_format", DEFAULT_KEY_FORMAT))
        except ValueError as exc:
            log.warning("asset %r: partition key %r is not a time the catalog can record: %s", asset.name, key, exc)
            return None
    if produced is not None:
        slot = slot or produced[0]
        meta = meta or TaskMeta(cron=produced[1], timezone=produced[2], source="asset")
    now = dt.datetime.now(dt.UTC)
    produced_by = _producing_try(asset_event)
    return SlotEvent(
        state="success",
        identity=airflow_asset(asset.name),
        slot=(slot or now).astimezone(dt.UTC),
        at=now,
        meta=meta,
        run_id=_run_id(asset_event, key, produced_by),
        attempt=produced_by.try_number if produced_by is not None else 1,
        rows_written=_rows_written(asset_event.extra),
    )


def _producing_run(asset_event, store_factory) -> tuple[dt.datetime, str | None, str] | None:
    """The slot, cron and timezone the catalog has for the task run that produced the event, if any."""
    if not (asset_event.source_dag_id and asset_event.source_task_id and asset_event.source_run_id):
        return None
    producer = airflow_task(
        asset_event.source_dag_id, asset_event.source_task_id, map_index=asset_event.source_map_index or -1
    )
    store = store_factory()
    with store.engine.connect() as conn:
        row = conn.execute(
            select(task_run.c.slot, task.c.cron, task.c.timezone)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(*identity_clause(producer), task_run.c.run_id == asset_event.source_run_id)
            .limit(1)
        ).first()
    return (row.slot, row.cron, row.timezone) if row is not None else None


class ProducingTry(NamedTuple):
    """The try of a task instance that produced an event: Airflow gives each try an id of its own."""

    ti_id: str
    try_number: int


def _producing_try(asset_event) -> ProducingTry | None:
    """The try that produced ``asset_event``, from Airflow's database (None: no task produced it, or the
    try cannot be read; the event then counts as a new one)."""
    if not asset_event.source_run_id:
        return None
    try:
        return read_producing_try(
            asset_event.source_dag_id,
            asset_event.source_run_id,
            asset_event.source_task_id,
            -1 if asset_event.source_map_index is None else asset_event.source_map_index,
        )
    except Exception as exc:
        log.warning(
            "asset %r: the try of %s/%s/%s that produced the event cannot be read (%s); recorded as a new completion",
            asset_event.asset.name,
            asset_event.source_dag_id,
            asset_event.source_run_id,
            asset_event.source_task_id,
            exc,
        )
        return None


def read_producing_try(dag_id: str, run_id: str, task_id: str, map_index: int) -> ProducingTry:
    """The current try of one task instance, in a session of its own (never the one Airflow is using)."""
    from airflow import settings
    from airflow.models.taskinstance import TaskInstance as TI

    with settings.Session.session_factory() as session:
        row = session.execute(
            select(TI.id, TI.try_number).where(
                TI.dag_id == dag_id, TI.run_id == run_id, TI.task_id == task_id, TI.map_index == map_index
            )
        ).first()
    if row is None:
        raise LookupError("no such task instance in Airflow's database")
    return ProducingTry(str(row.id), max(int(row.try_number or 0), 1))


#: The longest run id a slot record holds (its column's width).
RUN_ID_WIDTH = 250
#: What follows the producing run in a slot record's run id: ``@`` and the try's id (or ``unknown-`` and a new one).
_TRY_WIDTH = 41


def _run_id(asset_event, key: str | None, produced_by: ProducingTry | None) -> str:
    """The producing run (with the map index and key: one run may emit several partitions) and the try
    that produced the event, or a new id for an event whose run or try is unknown. Too long for the
    column, the run keeps its start and a digest of the whole."""
    if not asset_event.source_run_id:
        return f"asset-event:{uuid.uuid4().hex}"
    index = asset_event.source_map_index
    run_id = (
        f"{asset_event.source_dag_id}/{asset_event.source_run_id}/{asset_event.source_task_id}"
        + (f"/{index}" if index is not None and index >= 0 else "")
        + (f"#{key}" if key else "")
    )
    if len(run_id) > RUN_ID_WIDTH - _TRY_WIDTH:
        run_id = f"{run_id[: RUN_ID_WIDTH - _TRY_WIDTH - 41]}~{hashlib.sha1(run_id.encode()).hexdigest()}"
    try_id = produced_by.ti_id if produced_by is not None else f"unknown-{uuid.uuid4().hex}"
    return f"{run_id}@{try_id}"


def _rows_written(extra) -> int | None:
    value = (extra or {}).get("rows_written")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
