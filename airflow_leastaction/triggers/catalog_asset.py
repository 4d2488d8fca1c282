"""The asset watcher's trigger: a catalog task's completed slots, published as asset events.

Built by :func:`airflow_leastaction.assets.catalog_asset`; Airflow runs it in the triggerer for as long as
a DAG is scheduled on the asset. See ``docs/assets.md`` for how an event is emitted exactly once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from airflow_leastaction.assets.keys import DEFAULT_KEY_FORMAT, partition_key
from airflow_leastaction.catalog.bridges import AssetBridges
from airflow_leastaction.catalog.engine import aresolve_url, is_outage
from airflow_leastaction.config import setting
from airflow_leastaction.hooks.catalog import catalog_engine
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.poll_group import backoff
from airflow_leastaction.triggers.poller import CatalogPoller
from airflow_leastaction.triggers.trigger_log import ClassLog
from airflow_leastaction.triggers.wire import CURSOR_KEY, Cursor, slot_event
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER, WATCHER_STATE_STORE, say_once


class CatalogAssetTrigger(ClassLog, BaseEventTrigger):
    """Publish each completed slot of one catalog task as an event of one asset.

    Every watcher of a triggerer joins the triggerer's shared catalog poll (the ``completions`` read of
    :class:`~airflow_leastaction.triggers.poller.CatalogPoller`), with the gates: one statement per tick
    asks which tasks changed, and only a watcher whose task changed reads its new completed slot records.
    It yields one event per completed slot past its cursor, in the order the catalog committed them, with
    the slot as a partition key and the output revision (a repair when above 1). While the catalog cannot
    be reached it keeps waiting and says so once; then it emits what completed meanwhile.

    Airflow's own shared stream (``shared_stream_key``) is not used: the catalog poll is already shared
    with the gates, and the watcher's resume point is committed with each event (``docs/assets.md``).

    :param identity: the catalog task, as ``TaskIdentity.as_dict()``.
    :param asset_name: the name of the asset it publishes to.
    :param asset_uri: that asset's URI.
    :param key_format: ``strftime`` format of the partition key (default ``%Y-%m-%dT%H:%M:%S``, what
        ``CronPartitionTimetable`` writes and Airflow's temporal mappers read).
    :param timezone: the timezone the key is written in (default: the catalog task's own).
    :param from_slot: ISO-8601 slot: a new bridge also publishes the slots already completed from this
        one on. Default: only what completes after the bridge first starts.
    :param catalog_conn_id: catalog connection id (None: the configured default).
    :param poll_interval: seconds between catalog polls.
    """

    def __init__(
        self,
        identity: dict[str, str],
        asset_name: str,
        asset_uri: str,
        key_format: str = DEFAULT_KEY_FORMAT,
        timezone: str | None = None,
        from_slot: str | None = None,
        catalog_conn_id: str | None = None,
        poll_interval: float = 5.0,
    ):
        super().__init__()
        self.identity = dict(identity)
        self.asset_name = asset_name
        self.asset_uri = asset_uri
        self.key_format = key_format
        self.timezone = timezone
        self.from_slot = from_slot
        self.catalog_conn_id = catalog_conn_id
        self.poll_interval = float(poll_interval)
        self._unreachable = False

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "identity": self.identity,
            "asset_name": self.asset_name,
            "asset_uri": self.asset_uri,
            "key_format": self.key_format,
            "timezone": self.timezone,
            "from_slot": self.from_slot,
            "catalog_conn_id": self.catalog_conn_id,
            "poll_interval": self.poll_interval,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        identity = TaskIdentity.from_dict(self.identity)
        url = await aresolve_url(self.catalog_conn_id)
        cursor = await self._resume(url, identity)
        self.log.info("publishing %s to asset %r from change %d", identity, self.asset_name, cursor.seq)
        first = dt.datetime.fromisoformat(self.from_slot) if self.from_slot else None
        while True:
            task, pending = await self._next_completions(url, identity, cursor, first)
            tz = self.timezone or (task.timezone if task is not None else "UTC")
            for done in pending:
                cursor = Cursor(done.seq, done.slot)
                key = partition_key(done.slot, tz, self.key_format)
                self.log.info(
                    "%s: slot %s completed (revision %d): asset event with partition key %s",
                    identity,
                    done.slot.isoformat(),
                    done.revision,
                    key,
                )
                yield TriggerEvent(
                    slot_event(
                        self.identity,
                        done.slot,
                        key,
                        done.revision,
                        cursor,
                        rows_written=done.rows_written,
                        run_id=done.run_id,
                    )
                )
                if not ASSET_EVENT_LISTENER:  # nothing sees the commit: move the catalog's cursor here
                    await asyncio.to_thread(self._advance, url, cursor, done.revision)

    async def _next_completions(self, url: str, identity: TaskIdentity, cursor: Cursor, first):
        """The task's row and its completed slots past ``cursor`` (from ``first`` on), once there are any.
        The shared poller is asked for each wait: the loop of the last one ends while the watcher is held at
        its event, when nothing else reads completions."""
        poller = CatalogPoller.shared(url, self.poll_interval, read="completions")
        sub = poller.join([(identity, cursor.seq)])
        try:
            while True:
                try:
                    task, records = (await sub.next_change())[identity]
                except Exception as exc:
                    if not is_outage(exc):  # a bug or a broken schema: waiting cannot cure it
                        raise
                    self._say_unreachable(exc)
                    continue
                self._say_reachable()
                pending = [
                    c for c in records if not cursor.passed(c.seq, c.slot) and (first is None or c.slot >= first)
                ]
                if pending:
                    return task, pending
        finally:
            poller.leave(sub)

    async def _resume(self, url: str, identity: TaskIdentity) -> Cursor:
        """The cursor to start from: the one committed with the last event in Airflow's state store, else the
        catalog's bridge cursor (registering the bridge; a new one starts now, or at ``from_slot``)."""
        stored = await self._stored_cursor()
        failures = 0
        while True:
            try:
                bridges = AssetBridges(await asyncio.to_thread(partial(catalog_engine, url=url)))
                deployment = setting("project", "airflow")
                registered = await asyncio.to_thread(
                    bridges.register,
                    deployment,
                    self.asset_name,
                    self.asset_uri,
                    identity,
                    self.key_format,
                    from_start=self.from_slot is not None,
                )
                break
            except Exception as exc:
                if not is_outage(exc):
                    raise
                self._say_unreachable(exc)
                failures += 1
                await asyncio.sleep(backoff(self.poll_interval, failures))
        self._say_reachable()
        if stored is not None:
            return stored
        if WATCHER_STATE_STORE:  # the listener compares each event with a stored cursor
            await self._store_cursor(registered)
        return registered

    def _accessor(self):
        from airflow.sdk import Asset

        return self.asset_state_store[Asset(name=self.asset_name, uri=self.asset_uri)]

    async def _stored_cursor(self) -> Cursor | None:
        if not WATCHER_STATE_STORE:
            say_once(
                "asset watchers resume from the catalog's bridge cursor, written after each event's commit "
                "(no asset state store in the triggerer before Airflow 3.3): a triggerer that dies between "
                "the commit and that write publishes the slot again"
            )
            return None
        if self.asset_state_store is None:
            return None
        try:
            return Cursor.decode(await self._accessor().aget(CURSOR_KEY))
        except Exception as exc:
            self.log.warning("cannot read the cursor of asset %r from its state store: %s", self.asset_name, exc)
            return None

    async def _store_cursor(self, cursor: Cursor) -> None:
        if self.asset_state_store is None:
            return
        try:
            await self._accessor().aset(CURSOR_KEY, cursor.encode())
        except Exception as exc:
            self.log.warning("cannot store the start of asset %r in its state store: %s", self.asset_name, exc)

    def _advance(self, url: str, cursor: Cursor, revision: int) -> None:
        say_once(
            "asset watchers move their cursor when they yield an event (no asset-event listener before "
            "Airflow 3.2): a triggerer that dies before Airflow records the event loses it"
        )
        AssetBridges(catalog_engine(url=url)).advance(setting("project", "airflow"), self.asset_name, cursor, revision)

    def _say_unreachable(self, exc: BaseException) -> None:
        if not self._unreachable:
            self.log.warning(
                "catalog unreachable; waiting, and publishing what completed meanwhile once it answers: %s", exc
            )
        self._unreachable = True

    def _say_reachable(self) -> None:
        if self._unreachable:
            self.log.info("catalog reachable again")
        self._unreachable = False
