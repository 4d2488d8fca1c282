"""Publishing a catalog task as an asset: the asset and its watcher, and the input refused when the DAG
file is parsed, each error naming both sides."""

from __future__ import annotations

import datetime as dt
import math

import airflow.sdk
import pytest
from airflow.sdk import Asset
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.assets import bridge
from airflow_leastaction.assets.bridge import catalog_asset, partitioned_on_catalog
from airflow_leastaction.exceptions import (
    AssetNameCollisionError,
    BridgeConflictError,
    ConfigurationError,
    UnreadablePartitionKeyError,
)
from airflow_leastaction.refs import airflow_task, external_task
from airflow_leastaction.triggers.catalog_asset import CatalogAssetTrigger
from airflow_leastaction.version_compat import PARTITION_ROLLUPS, PARTITIONED_ASSETS
from tests.helpers.airflow_minors import needs

FEED = external_task("feed", "partners")
#: Instants as a partner writes them: with an offset or Z, or none.
ISO_INSTANTS = st.builds(
    lambda instant, suffix: instant.isoformat() + suffix,
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)),
    st.sampled_from(["", "Z", "+00:00", "+05:30", "-23:59"]),
)


@pytest.fixture(autouse=True)
def fresh_file(monkeypatch):
    """Each test is one DAG file parsed in a process of its own, as Airflow's DAG processor parses them."""
    for registry in ("_by_task", "_by_name", "_by_uri"):
        monkeypatch.setattr(bridge, registry, {})


class TestCatalogAsset:
    def test_the_asset_is_named_as_gate_decisions_name_the_task_and_watched_by_the_catalog_trigger(self):
        asset = catalog_asset(FEED, poll_interval=2)
        assert (asset.name, asset.uri) == ("catalog:partners/feed", "leastaction://catalog/partners/feed")
        [watcher] = asset.watchers
        assert isinstance(watcher.trigger, CatalogAssetTrigger)
        classpath, kwargs = watcher.trigger.serialize()
        assert classpath == "airflow_leastaction.triggers.catalog_asset.CatalogAssetTrigger"
        assert CatalogAssetTrigger(**kwargs).serialize() == (classpath, kwargs)  # round-trips through __init__
        assert kwargs["identity"] == FEED.as_dict() and kwargs["poll_interval"] == 2.0
        assert asset.extra["leastaction"]["catalog_task"] == FEED.as_dict()

    def test_account_and_partition_are_part_of_the_uri(self):
        asset = catalog_asset(external_task("feed", "partners", account="eu", partition="3"))
        assert asset.uri == "leastaction://catalog/partners/feed?account=eu&partition=3"

    def test_the_same_bridge_declared_twice_is_one_asset(self):
        assert catalog_asset(FEED, poll_interval=2) == catalog_asset(FEED, poll_interval=2)

    def test_a_task_published_as_two_assets_is_refused_naming_both(self):
        catalog_asset(FEED)
        with pytest.raises(
            BridgeConflictError, match=r"partners/feed is already published as asset 'catalog:partners/feed'.*'feed_v2'"
        ):
            catalog_asset(FEED, name="feed_v2")

    def test_a_task_published_twice_with_other_watcher_arguments_is_refused(self):
        catalog_asset(FEED)
        with pytest.raises(BridgeConflictError, match="other watcher arguments"):
            catalog_asset(FEED, key_format="%Y-%m-%d")

    def test_an_asset_name_another_task_publishes_to_is_refused_naming_both_tasks(self):
        catalog_asset(FEED, name="partner_data")
        with pytest.raises(AssetNameCollisionError, match=r"name 'partner_data'.*partners/feed.*partners/returns"):
            catalog_asset(external_task("returns", "partners"), name="partner_data")

    def test_an_asset_uri_another_task_publishes_to_is_refused(self):
        catalog_asset(FEED, uri="s3://partners/data")
        with pytest.raises(AssetNameCollisionError, match=r"URI 's3://partners/data'"):
            catalog_asset(external_task("returns", "partners"), uri="s3://partners/data")

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"key_format": "%m-%d"}, "must name the year"),
            ({"timezone": "Mars/Olympus"}, "unknown timezone"),
            ({"from_slot": "2026-11-16T00:00:00"}, "has no timezone offset"),
            ({"from_slot": "yesterday"}, "not an ISO-8601 instant"),
        ],
    )
    def test_bad_arguments_are_refused_naming_the_task(self, kwargs, message):
        with pytest.raises(ConfigurationError, match=message):
            catalog_asset(FEED, **kwargs)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"name": ""}, "asset name '' is not non-empty text"),
            ({"name": "feed\x00"}, "asset name 'feed.x00' is not non-empty text without NUL"),
            ({"uri": 5}, "asset uri 5 is not non-empty text"),
            ({"name": "x" * 1501}, "Airflow refuses asset 'xxx.*cannot exceed 1500 characters"),
            ({"uri": "airflow://feed"}, "Airflow refuses asset .*'airflow' is reserved"),
            ({"key_format": 5}, "key_format 5 is not text"),
            ({"key_format": "%Y" + "-" * 99}, "key_format '%Y-+' is longer than 100 characters"),
            ({"poll_interval": 0}, "poll_interval 0 is not a number of seconds above 0"),
            ({"poll_interval": -1}, "poll_interval -1 is not"),
            ({"poll_interval": float("nan")}, "poll_interval nan is not"),
            ({"poll_interval": float("inf")}, "poll_interval inf is not"),
            ({"poll_interval": "soon"}, "poll_interval 'soon' is not"),
            ({"from_slot": 1763251200}, "from_slot 1763251200 is neither an ISO-8601 instant nor a datetime"),
            ({"extra": ["owner"]}, r"extra \['owner'\] is not a dict"),
        ],
    )
    def test_bad_asset_watcher_and_extra_arguments_are_refused_naming_the_task(self, kwargs, message):
        with pytest.raises(ConfigurationError, match=rf"^catalog_asset\(partners/feed\): {message}"):
            catalog_asset(FEED, **kwargs)

    @settings(max_examples=200, deadline=None)
    @given(
        name=st.none() | st.text(max_size=40),
        uri=st.none() | st.text(max_size=40) | st.builds("s3://bucket/{}".format, st.text(max_size=20)),
        timezone=st.none() | st.sampled_from(["UTC", "Europe/Paris"]) | st.text(max_size=20),
        from_slot=st.none() | st.text(max_size=30) | st.datetimes().map(dt.datetime.isoformat) | ISO_INSTANTS,
        poll_interval=st.none() | st.floats(allow_nan=True) | st.integers(-5, 5),
    )
    def test_any_value_is_an_asset_watched_as_given_or_an_error_naming_the_task(
        self, name, uri, timezone, from_slot, poll_interval
    ):
        for registry in ("_by_task", "_by_name", "_by_uri"):  # each example is a DAG file of its own
            getattr(bridge, registry).clear()
        given_args = {"name": name, "uri": uri, "timezone": timezone, "from_slot": from_slot}
        try:
            asset = catalog_asset(FEED, poll_interval=poll_interval, **given_args)
        except ConfigurationError as exc:
            assert str(exc).startswith("catalog_asset(partners/feed): "), exc
            return
        trigger = asset.watchers[0].trigger
        assert asset.name == (name if name is not None else "catalog:partners/feed")
        assert name is None or (name.strip() and "\x00" not in name)
        assert uri is None or (uri.strip() and "\x00" not in uri)
        assert (trigger.asset_name, trigger.asset_uri) == (asset.name, asset.uri)
        assert trigger.poll_interval > 0 and math.isfinite(trigger.poll_interval)
        if from_slot is not None:
            instant = dt.datetime.fromisoformat(from_slot.replace("Z", "+00:00"))
            assert instant.tzinfo is not None
            assert dt.datetime.fromisoformat(trigger.from_slot) == instant

    def test_anything_but_a_catalog_identity_is_refused(self):
        with pytest.raises(ConfigurationError, match="not a catalog task identity"):
            catalog_asset("partners/feed")

    def test_from_slot_is_kept_as_a_utc_instant(self):
        asset = catalog_asset(
            airflow_task("orders", "load"),
            from_slot=dt.datetime(2026, 11, 16, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        )
        assert asset.watchers[0].trigger.from_slot == "2026-11-16T00:00:00+00:00"


def mapper(name: str, **kwargs):
    """Airflow's partition mapper ``name``, made when the test runs: Airflow 3.1 has none."""
    return getattr(airflow.sdk, name)(**kwargs)


def day_rollup():
    return mapper("RollupMapper", upstream_mapper=mapper("StartOfDayMapper"), window=mapper("DayWindow"))


@pytest.mark.skipif(PARTITIONED_ASSETS, reason="this Airflow has partition-aware DAGs: nothing to refuse")
def test_a_partitioned_schedule_is_refused_where_airflow_has_no_partitions():
    with pytest.raises(ConfigurationError, match=r"partitioned assets, which Airflow 3\.2 added"):
        partitioned_on_catalog(catalog_asset(FEED))


@needs(PARTITIONED_ASSETS, "partition-aware DAGs and partition mappers (Airflow 3.2)")
class TestPartitionedOnCatalog:
    @pytest.mark.parametrize(
        "make_mapper",
        [
            pytest.param(lambda: mapper("StartOfDayMapper"), id="start-of-day"),
            pytest.param(
                day_rollup,
                id="rollup",
                marks=needs(PARTITION_ROLLUPS, "partition roll-ups (RollupMapper, Airflow 3.3)"),
            ),
        ],
    )
    def test_a_mapper_that_reads_the_keys_builds_airflows_partitioned_timetable(self, make_mapper):
        feed, chosen = catalog_asset(FEED), make_mapper()
        timetable = partitioned_on_catalog(feed, default_partition_mapper=chosen)
        assert type(timetable).__name__ == "PartitionedAssetTimetable"
        assert timetable.asset_condition == feed and timetable.default_partition_mapper == chosen

    def test_a_mapper_that_cannot_read_the_keys_is_refused_naming_the_asset_the_task_and_the_mapper(self):
        feed = catalog_asset(FEED)
        with pytest.raises(UnreadablePartitionKeyError) as refused:
            partitioned_on_catalog(feed, default_partition_mapper=mapper("StartOfDayMapper", input_format="%Y-%m-%d"))
        message = str(refused.value)
        assert "StartOfDayMapper(input_format='%Y-%m-%d')" in message
        assert "asset 'catalog:partners/feed'" in message and "catalog task partners/feed" in message
        assert "'2026-11-16T13:45:30'" in message

    def test_the_mapper_configured_for_the_catalog_asset_is_the_one_checked(self):
        feed, other = catalog_asset(FEED), Asset("landing", uri="s3://landing")
        config = {feed: mapper("StartOfHourMapper", input_format="%Y-%m-%d")}
        with pytest.raises(UnreadablePartitionKeyError, match="StartOfHourMapper"):
            partitioned_on_catalog(
                feed & other, default_partition_mapper=mapper("StartOfHourMapper"), partition_mapper_config=config
            )
        config = {feed: mapper("StartOfHourMapper")}
        partitioned_on_catalog(
            feed & other,
            default_partition_mapper=mapper("StartOfHourMapper", input_format="%Y"),
            partition_mapper_config=config,
        )

    def test_a_catalog_asset_whose_keys_match_the_mapper_by_its_key_format_is_accepted(self):
        feed = catalog_asset(FEED, key_format="%Y-%m-%d")
        partitioned_on_catalog(feed, default_partition_mapper=mapper("StartOfDayMapper", input_format="%Y-%m-%d"))

    def test_two_assets_of_one_name_in_the_schedule_are_refused_naming_both(self):
        feed = catalog_asset(FEED)
        with pytest.raises(
            AssetNameCollisionError, match=r"'catalog:partners/feed'.*leastaction://catalog/partners/feed.*s3://x"
        ):
            partitioned_on_catalog(
                feed | Asset("catalog:partners/feed", uri="s3://x"),
                default_partition_mapper=mapper("StartOfHourMapper"),
            )

    @pytest.mark.parametrize(
        ("assets", "kwargs", "message"),
        [
            ("catalog:partners/feed", {}, "'catalog:partners/feed' is neither an asset nor a condition of assets"),
            (None, {}, "None is neither an asset"),
            (
                Asset("landing"),
                {"default_partition_mapper": "day"},
                "default_partition_mapper 'day' is not a partition",
            ),
            (
                Asset("landing"),
                {"partition_mapper_config": [("landing", 1)]},
                "partition_mapper_config .* is not a dict",
            ),
            (
                Asset("landing"),
                lambda: {"partition_mapper_config": {"landing": mapper("StartOfDayMapper")}},
                "partition_mapper_config key 'landing' is not an asset",
            ),
            (
                Asset("landing"),
                lambda: {"partition_mapper_config": {Asset("landing"): "day"}},
                "the mapper of .* is not a",
            ),
        ],
    )
    def test_a_schedule_of_other_kinds_than_airflows_timetable_takes_is_refused(self, assets, kwargs, message):
        kwargs = (
            kwargs() if callable(kwargs) else kwargs
        )  # made where Airflow has partitions (3.1's assets are not even hashable)
        with pytest.raises(ConfigurationError, match=rf"^partitioned_on_catalog\(\): {message}"):
            partitioned_on_catalog(assets, **kwargs)
