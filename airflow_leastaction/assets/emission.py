"""What the provider's listener adds, in the triggerer, to the transaction that records a catalog
watcher's event: the watcher's cursor in the asset's state store, and the event with its partition key
for partition-aware DAGs (Airflow records a watcher's event without one). See ``docs/assets.md``.

The one module that writes Airflow's metadata database: through the session Airflow is committing the
event in, and Airflow's own ``AssetManager``. A listener call outside such a transaction changes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

from sqlalchemy import event, or_, select

from airflow_leastaction.catalog.bridges import AssetBridges
from airflow_leastaction.crash_points import CrashPoint
from airflow_leastaction.hooks.catalog import catalog_engine
from airflow_leastaction.refs import deployment_project
from airflow_leastaction.triggers.wire import CURSOR_KEY, Cursor
from airflow_leastaction.version_compat import PARTITIONED_ASSETS, WATCHER_STATE_STORE, say_once

log = logging.getLogger(__name__)

_ADVANCES = "leastaction_bridge_advances"

#: The steps of publishing one watcher event: Airflow's transaction (the event, then these writes), its
#: commit, then the catalog's bridge cursor.
CURSOR_STAGED = CrashPoint(
    "asset_emission.cursor_staged", "the watcher's cursor written in Airflow's transaction, not committed"
)
WRITES_STAGED = CrashPoint(
    "asset_emission.writes_staged",
    "the event, its cursor and any partitioned twin in Airflow's transaction, not committed",
)
COMMITTED = CrashPoint("asset_emission.committed", "Airflow committed the event; the catalog's cursor not moved")
CATALOG_CURSOR_MOVED = CrashPoint("asset_emission.catalog_cursor_moved", "the catalog's bridge cursor moved")


def publish_in_transaction(asset_event, payload: dict) -> None:
    """The writes that go with a watcher's event ``asset_event`` (its ``payload``) in its transaction.

    A duplicate (an event whose cursor the stored one has passed: a triggerer that stalled and came back
    after another took its watchers over) is logged and gets no partitioned event.
    """
    session = event_session(asset_event)
    if session is None:
        say_once(
            "a catalog watcher's event was not recorded in a transaction the listener can join: its cursor is "
            "not stored with it and it has no partitioned twin"
        )
        return
    from airflow.models.asset import AssetModel

    asset = asset_event.asset
    asset_id = session.scalar(select(AssetModel.id).where(AssetModel.name == asset.name, AssetModel.uri == asset.uri))
    cursor = Cursor.decode(payload.get("cursor"))
    if asset_id is None or cursor is None:
        return
    if WATCHER_STATE_STORE:
        stored = _locked_cursor(session, asset_id)
        if stored is not None and stored.passed(cursor.seq, cursor.slot):
            log.error(
                "asset %r: slot %s revision %s was published already (the stored cursor is past it): a second "
                "triggerer ran its watcher; this event gets no partitioned twin",
                asset.name,
                payload.get("slot"),
                payload.get("revision"),
            )
            return
        _store_cursor(session, asset_id, cursor)
        CURSOR_STAGED()
    if PARTITIONED_ASSETS and partition_aware_consumers(session, asset_id, asset.name, asset.uri):
        from airflow.assets.manager import AssetManager

        AssetManager.register_asset_change(
            asset=asset,
            extra=dict(asset_event.extra),
            partition_key=payload["partition_key"],
            partition_date=dt.datetime.fromisoformat(payload["slot"]),
            session=session,
        )
    WRITES_STAGED()
    after_commit(session, (asset.name, cursor, int(payload.get("revision") or 0)))


def event_session(asset_event):
    """The session holding ``asset_event`` in the transaction being committed, or None."""
    from airflow import settings
    from airflow.models.asset import AssetEvent

    registry = getattr(settings, "Session", None)
    if registry is None or not registry.registry.has():  # no session on this thread: not inside submit_event
        return None
    session = registry()
    if not session.in_transaction():
        return None
    for obj in [*session.new, *session.identity_map.values()]:
        if isinstance(obj, AssetEvent) and obj.partition_key is None and obj.extra == asset_event.extra:
            return session
    return None


def _locked_cursor(session, asset_id: int) -> Cursor | None:
    from airflow.models.asset_state_store import AssetStateStoreModel

    value = session.scalar(
        select(AssetStateStoreModel.value)
        .where(AssetStateStoreModel.asset_id == asset_id, AssetStateStoreModel.key == CURSOR_KEY)
        .with_for_update()
    )
    return Cursor.decode(json.loads(value)) if value else None


def _store_cursor(session, asset_id: int, cursor: Cursor) -> None:
    from airflow._shared.state import AssetStateStoreWriterKind
    from airflow.state import AssetScope, get_state_backend
    from airflow.state.metastore import MetastoreBackend

    backend = get_state_backend()
    if not isinstance(backend, MetastoreBackend):
        say_once("the asset state store is not Airflow's database: catalog watchers resume from the catalog")
        return
    backend.set_asset_state_store(
        AssetScope(asset_id=asset_id),
        CURSOR_KEY,
        json.dumps(cursor.encode()),
        kind=AssetStateStoreWriterKind.WATCHER,
        session=session,
    )


def partition_aware_consumers(session, asset_id: int, name: str, uri: str) -> bool:
    """Whether an unpaused partition-aware DAG is scheduled on the asset (by the asset, its name or URI)."""
    from airflow.models.asset import (
        DagScheduleAssetNameReference,
        DagScheduleAssetReference,
        DagScheduleAssetUriReference,
    )
    from airflow.models.dag import DagModel

    scheduled = or_(
        DagModel.dag_id.in_(
            select(DagScheduleAssetReference.dag_id).where(DagScheduleAssetReference.asset_id == asset_id)
        ),
        DagModel.dag_id.in_(
            select(DagScheduleAssetNameReference.dag_id).where(DagScheduleAssetNameReference.name == name)
        ),
        DagModel.dag_id.in_(select(DagScheduleAssetUriReference.dag_id).where(DagScheduleAssetUriReference.uri == uri)),
    )
    found = session.scalar(
        select(DagModel.dag_id).where(scheduled, DagModel.timetable_partitioned.is_(True), ~DagModel.is_paused).limit(1)
    )
    return found is not None


def after_commit(session, advance: tuple) -> None:
    """Move the catalog's bridge cursor once Airflow's transaction commits (dropped if it rolls back)."""
    pending = session.info.setdefault(_ADVANCES, [])
    pending.append(advance)
    if not event.contains(session, "after_commit", _on_commit):
        event.listen(session, "after_commit", _on_commit)
        event.listen(session, "after_rollback", _on_rollback)


def _on_rollback(session) -> None:
    session.info.pop(_ADVANCES, None)


def _on_commit(session) -> None:
    advances = session.info.pop(_ADVANCES, None)
    if not advances:
        return
    COMMITTED()
    try:
        bridges = AssetBridges(catalog_engine())
        for name, cursor, revision in advances:
            bridges.advance(deployment_project(), name, cursor, revision)
        CATALOG_CURSOR_MOVED()
    except Exception as exc:  # the catalog is down: its cursor catches up with the next event
        log.warning("cannot move the catalog's cursor of asset bridges %s: %s", [a[0] for a in advances], exc)
