"""The catalog page says which catalog tasks are published to which assets, and what their watcher
published last, in its page and its JSON."""

from __future__ import annotations

import datetime as dt
import html

from airflow_leastaction.catalog.bridges import AssetBridges
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.wire import Cursor

P = "/leastaction"
FEED = TaskIdentity("partner_feed", "partners")
SLOT = dt.datetime(2026, 11, 16, 5, tzinfo=dt.UTC)
HOSTILE = "<script>alert(1)</script>"


def test_a_published_task_shows_its_assets_and_the_last_slot_published(client, store):
    store.report_completion(FEED, SLOT, cron="0 * * * *")
    store.register_task(TaskIdentity("quiet", "partners"), TaskMeta(cron="0 * * * *", source="external"))
    bridges = AssetBridges(store.engine)
    bridges.register(
        "airflow",
        "catalog:partners/partner_feed",
        "leastaction://catalog/partners/partner_feed",
        FEED,
        "%Y-%m-%dT%H:%M:%S",
    )
    bridges.register("other-deployment", HOSTILE, "s3://partners/feed", FEED, "%Y-%m-%d")
    bridges.advance("airflow", "catalog:partners/partner_feed", Cursor(3, SLOT), 2)

    items = {i["name"]: i for i in client.get(P + "/api/catalog").json()["items"]}
    published = {a["name"]: a for a in items["partner_feed"]["assets"]}
    assert set(published) == {"catalog:partners/partner_feed", HOSTILE}
    shown = published["catalog:partners/partner_feed"]
    assert (shown["deployment"], shown["last_slot"][:19], shown["last_revision"]) == (
        "airflow",
        "2026-11-16T05:00:00",
        2,
    )
    assert published[HOSTILE]["last_slot"] is None  # registered, nothing published yet
    assert items["quiet"]["assets"] == []

    page = client.get(P + "/catalog").text
    assert "published as asset <strong>catalog:partners/partner_feed</strong> (airflow)" in page
    assert html.escape(HOSTILE) in page and HOSTILE not in page
    assert "nothing published yet" in page


def test_asset_identities_are_listed_by_their_source(client, store):
    store.record_success(
        TaskIdentity("asset:orders_landed", "airflow"), SLOT, meta=TaskMeta(cron="0 * * * *", source="asset")
    )
    store.report_completion(FEED, SLOT, cron="0 * * * *")
    names = [i["name"] for i in client.get(P + "/api/catalog", params={"source": "asset"}).json()["items"]]
    assert names == ["asset:orders_landed"]
