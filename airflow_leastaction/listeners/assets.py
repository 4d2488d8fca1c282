"""Asset events and the catalog: each asset event Airflow records is recorded in the catalog as a slot
record of the asset's identity, and a catalog watcher's own event gets its cursor and partitioned twin in
the same transaction (:mod:`airflow_leastaction.assets.emission`). Runs where Airflow records asset events:
the API server (task outlets, the REST API) and the triggerer (watchers). Never raises.
"""

from __future__ import annotations

import logging

from airflow.listeners import hookimpl

from airflow_leastaction.assets.emission import publish_in_transaction
from airflow_leastaction.assets.recording import record
from airflow_leastaction.triggers.wire import read_slot_event

log = logging.getLogger(__name__)


@hookimpl
def on_asset_event_emitted(asset_event):
    try:
        payload = read_slot_event(asset_event.extra)
        if payload is None:
            record(asset_event)
        elif asset_event.partition_key is None:  # the watcher's own event, not its partitioned twin
            publish_in_transaction(asset_event, payload)
    except Exception:
        log.exception("leastaction: asset event of %r not handled", getattr(asset_event.asset, "name", None))
