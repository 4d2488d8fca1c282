"""What DAG authors call to publish a catalog task as an asset (:func:`catalog_asset`) and to schedule a
partition-aware DAG on such assets (:func:`partitioned_on_catalog`), with the checks made when the DAG
file is parsed. Every error names both sides (see :class:`~airflow_leastaction.exceptions.AssetBridgeError`).
"""

from __future__ import annotations

import datetime as dt
import math
import urllib.parse
from dataclasses import dataclass
from typing import Any

from airflow.sdk import Asset, AssetWatcher

from airflow_leastaction.assets.keys import DEFAULT_KEY_FORMAT, check_key_format, sample_key
from airflow_leastaction.catalog.schema import asset_bridge
from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import (
    AssetNameCollisionError,
    BridgeConflictError,
    ConfigurationError,
    UnreadablePartitionKeyError,
)
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.instants import parse_iso_instant
from airflow_leastaction.intervals.slots import resolve_timezone
from airflow_leastaction.triggers.catalog_asset import CatalogAssetTrigger
from airflow_leastaction.version_compat import PARTITIONED_ASSETS, serialized_partition_mapper

#: The key of the asset's extra that says which catalog task it publishes (read by the UI and listener).
EXTRA_KEY = "leastaction"
#: The URI scheme of a catalog task's asset.
URI_SCHEME = "leastaction"
#: The longest key format the catalog keeps with a bridge (its column's width).
KEY_FORMAT_WIDTH = asset_bridge.c.key_format.type.length
#: The longest poll interval a watcher takes: a day (a longer one is a typo).
MAX_POLL_INTERVAL = 24 * 3600.0


@dataclass(frozen=True)
class _Bridge:
    name: str
    uri: str
    trigger: tuple

    def label(self) -> str:
        return f"asset {self.name!r} ({self.uri})"


# The bridges of this process: one DAG file per parse process, so a file bridging a task twice is seen.
_by_task: dict[TaskIdentity, _Bridge] = {}
_by_name: dict[str, TaskIdentity] = {}
_by_uri: dict[str, TaskIdentity] = {}


def default_uri(identity: TaskIdentity) -> str:
    """``leastaction://catalog/<project>/<name>``, with ``?account=...&partition=...`` when they are set."""
    quote = lambda part: urllib.parse.quote(part, safe="")  # noqa: E731
    query = urllib.parse.urlencode(
        {k: v for k, v in (("account", identity.account), ("partition", identity.partition)) if v}
    )
    return f"{URI_SCHEME}://catalog/{quote(identity.project)}/{quote(identity.name)}" + (f"?{query}" if query else "")


def catalog_asset(
    parent: TaskIdentity,
    *,
    name: str | None = None,
    uri: str | None = None,
    key_format: str = DEFAULT_KEY_FORMAT,
    timezone: str | None = None,
    from_slot: str | dt.datetime | None = None,
    catalog_conn_id: str | None = None,
    poll_interval: float | None = None,
    extra: dict | None = None,
) -> Asset:
    """The asset catalog task ``parent`` is published to: each completed slot becomes an asset event,
    with the slot as its partition key and the output revision in its extra (a new event for a repair).

    Schedule a DAG on it (``schedule=[catalog_asset(...)]``), or a partition-aware DAG with
    :func:`partitioned_on_catalog`. Airflow runs the watcher in the triggerer while a DAG is scheduled on
    the asset. Refused when the DAG is parsed, naming both: the task already published as another asset
    in this file, or the asset's name or URI already used for another task.

    :param parent: the catalog task (:func:`~airflow_leastaction.refs.airflow_task`,
        :func:`~airflow_leastaction.refs.external_task`).
    :param name: the asset's name (default ``catalog:<project>/<name>``, as gate decisions name the task).
    :param uri: the asset's URI (default ``leastaction://catalog/<project>/<name>``).
    :param key_format: ``strftime`` format of the partition keys (default ``%Y-%m-%dT%H:%M:%S``: what
        ``CronPartitionTimetable`` writes and Airflow's temporal mappers read).
    :param timezone: the timezone keys are written in (default: the catalog task's own).
    :param from_slot: also publish the slots already completed from this slot on when the bridge is new
        (default: only what completes once the watcher runs).
    :param catalog_conn_id: the catalog connection (default ``[leastaction] catalog_conn_id``).
    :param poll_interval: seconds between catalog polls (default ``[leastaction] poll_interval``).
    :param extra: more of the asset's extra.
    """
    if not isinstance(parent, TaskIdentity):
        raise ConfigurationError(
            f"catalog_asset(): {parent!r} is not a catalog task identity; use airflow_task(dag_id, task_id) or "
            "external_task(name, project)"
        )
    owner = f"catalog_asset({parent})"
    _check_key_format(key_format, owner)
    if timezone is not None:
        try:
            resolve_timezone(timezone)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{owner}: {exc}") from exc
    if not isinstance(extra, dict | None):
        raise ConfigurationError(f"{owner}: extra {extra!r} is not a dict")
    asset = _airflow_asset(_text(name, "name", parent.key, owner), _text(uri, "uri", default_uri(parent), owner), owner)
    trigger = CatalogAssetTrigger(
        identity=parent.as_dict(),
        asset_name=asset.name,
        asset_uri=asset.uri,
        key_format=key_format,
        timezone=timezone,
        from_slot=_slot_text(from_slot, owner),
        catalog_conn_id=catalog_conn_id,
        poll_interval=_seconds(poll_interval if poll_interval is not None else setting("poll_interval", "5"), owner),
    )
    kwargs = trigger.serialize()[1]
    bridge = _register(parent, _Bridge(kwargs["asset_name"], kwargs["asset_uri"], tuple(sorted(kwargs.items()))))
    marker = {EXTRA_KEY: {"catalog_task": parent.as_dict(), "key_format": key_format}}
    return Asset(
        name=bridge.name,
        uri=bridge.uri,
        extra={**(extra or {}), **marker},
        watchers=[AssetWatcher(name=f"leastaction-{bridge.name}", trigger=trigger)],
    )


def _check_key_format(key_format: str, owner: str) -> None:
    check_key_format(key_format, owner)
    if len(key_format) > KEY_FORMAT_WIDTH:
        raise ConfigurationError(f"{owner}: key_format {key_format!r} is longer than {KEY_FORMAT_WIDTH} characters")


def _text(value, what: str, default: str, owner: str) -> str:
    """The asset's ``name`` or ``uri`` as given (``default`` when None): text the catalog can store."""
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ConfigurationError(f"{owner}: asset {what} {value!r} is not non-empty text without NUL characters")
    return value


def _airflow_asset(name: str, uri: str, owner: str) -> Asset:
    """The asset as Airflow checks and normalizes it (its URI's scheme, the length of both)."""
    try:
        return Asset(name=name, uri=uri)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{owner}: Airflow refuses asset {name!r} ({uri!r}): {exc}") from exc


def _seconds(value, owner: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_POLL_INTERVAL):
        raise ConfigurationError(
            f"{owner}: poll_interval {value!r} is not a number of seconds above 0 and at most {MAX_POLL_INTERVAL:g}"
        )
    return seconds


def _slot_text(value: str | dt.datetime | None, owner: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str | dt.datetime):
        raise ConfigurationError(f"{owner}: from_slot {value!r} is neither an ISO-8601 instant nor a datetime")
    try:
        slot = value if isinstance(value, dt.datetime) else parse_iso_instant(value)
    except ValueError as exc:
        raise ConfigurationError(f"{owner}: from_slot {value!r} is not an ISO-8601 instant: {exc}") from exc
    if slot.tzinfo is None:
        raise ConfigurationError(f"{owner}: from_slot {value!r} has no timezone offset")
    return slot.astimezone(dt.UTC).isoformat()


def _register(identity: TaskIdentity, bridge: _Bridge) -> _Bridge:
    known = _by_task.get(identity)
    if known is not None:
        if known != bridge:
            second = (
                bridge.label()
                if (known.name, known.uri) != (bridge.name, bridge.uri)
                else "the same asset with other watcher arguments"
            )
            raise BridgeConflictError(str(identity), known.label(), second)
        return known
    for what, value, seen in (("name", bridge.name, _by_name), ("URI", bridge.uri, _by_uri)):
        other = seen.get(value)
        if other is not None and other != identity:
            raise AssetNameCollisionError(what, value, f"the asset of catalog task {other}", f"that of {identity}")
    _by_task[identity] = bridge
    _by_name[bridge.name] = _by_uri[bridge.uri] = identity
    return bridge


def built_here() -> dict[TaskIdentity, tuple[str, str]]:
    """The catalog assets built in this process (the DAG file being parsed), by task: name and URI."""
    return {identity: (b.name, b.uri) for identity, b in _by_task.items()}


def bridged_task(asset: Any) -> tuple[TaskIdentity, str] | None:
    """The catalog task and key format an asset publishes (None: not a catalog task's asset)."""
    marker = (getattr(asset, "extra", None) or {}).get(EXTRA_KEY)
    if not isinstance(marker, dict) or "catalog_task" not in marker:
        return None
    return TaskIdentity.from_dict(marker["catalog_task"]), marker.get("key_format", DEFAULT_KEY_FORMAT)


def partitioned_on_catalog(assets, *, default_partition_mapper=None, partition_mapper_config: dict | None = None):
    """Airflow's ``PartitionedAssetTimetable`` on ``assets``, checked when the DAG is parsed: every mapper
    reads the partition keys of the catalog assets it maps, and no two assets share a name or a URI.

    :param assets: an asset or a condition (``a & b``, ``a | b``) of assets, some of them :func:`catalog_asset`.
    :param default_partition_mapper: the mapper of assets not in ``partition_mapper_config`` (Airflow's
        default: ``IdentityMapper()``).
    :param partition_mapper_config: per asset, its mapper.
    """
    if not PARTITIONED_ASSETS:
        raise ConfigurationError("partitioned_on_catalog() needs partitioned assets, which Airflow 3.2 added")
    from airflow.sdk import IdentityMapper, PartitionedAssetTimetable

    default = default_partition_mapper or IdentityMapper()
    config = partition_mapper_config or {}
    _check_schedule(assets, default, config)
    by_name = {asset.name: mapper for condition, mapper in config.items() for asset in assets_of(condition)}
    names: dict[str, str] = {}
    uris: dict[str, str] = {}
    for asset in assets_of(assets):
        if names.setdefault(asset.name, asset.uri) != asset.uri:
            raise AssetNameCollisionError(
                "name", asset.name, f"the asset {names[asset.name]}", f"the asset {asset.uri}"
            )
        if uris.setdefault(asset.uri, asset.name) != asset.name:
            raise AssetNameCollisionError(
                "URI", asset.uri, f"the URI of asset {uris[asset.uri]!r}", f"of {asset.name!r}"
            )
        bridged = bridged_task(asset)
        if bridged is not None:
            _check_mapper(asset.name, *bridged, by_name.get(asset.name, default))
    return PartitionedAssetTimetable(assets=assets, default_partition_mapper=default, partition_mapper_config=config)


def _check_schedule(assets, default, config) -> None:
    """The arguments of :func:`partitioned_on_catalog` are of the kinds Airflow's timetable takes."""
    from airflow.sdk import PartitionMapper
    from airflow.sdk.definitions.asset import BaseAsset

    owner = "partitioned_on_catalog()"
    if not isinstance(assets, BaseAsset):
        raise ConfigurationError(f"{owner}: {assets!r} is neither an asset nor a condition of assets (a & b, a | b)")
    if not isinstance(config, dict):
        raise ConfigurationError(f"{owner}: partition_mapper_config {config!r} is not a dict of assets to mappers")
    for mapper, what in [
        (default, "default_partition_mapper"),
        *((m, f"the mapper of {a!r}") for a, m in config.items()),
    ]:
        if not isinstance(mapper, PartitionMapper):
            raise ConfigurationError(f"{owner}: {what} {mapper!r} is not a partition mapper (StartOfDayMapper(), ...)")
    for key in config:
        if not isinstance(key, BaseAsset):
            raise ConfigurationError(f"{owner}: partition_mapper_config key {key!r} is not an asset")


def assets_of(condition):
    """The assets of an asset or a condition of assets (references and aliases have no name and URI yet)."""
    if isinstance(condition, Asset):
        yield condition
    for inner in getattr(condition, "objects", ()):
        yield from assets_of(inner)


def _check_mapper(asset_name: str, identity: TaskIdentity, key_format: str, mapper) -> None:
    key = sample_key(key_format)
    try:
        serialized_partition_mapper(mapper).to_downstream(key)
    except Exception as exc:
        raise UnreadablePartitionKeyError(
            asset_name, str(identity), key, key_format, describe(mapper), str(exc)
        ) from exc


def describe(mapper) -> str:
    """A mapper as a DAG author wrote it, with the formats that decide which keys it reads."""
    inner = getattr(mapper, "upstream_mapper", None)
    if inner is not None:
        return f"{type(mapper).__name__}(upstream_mapper={describe(inner)})"
    fmt = getattr(mapper, "input_format", None)
    return f"{type(mapper).__name__}(input_format={fmt!r})" if fmt else f"{type(mapper).__name__}()"
