"""The poller's asyncio task is named after its catalog, without the catalog's password: asyncio shows
task names in its warnings and in a triggerer's task dumps."""

from __future__ import annotations

import asyncio
import datetime as dt

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.poller import CatalogPoller

SECRET = "s3cret-Pa55"


async def test_the_pollers_task_name_masks_the_catalog_password():
    # Port 9 (discard) on loopback: nothing answers, so the poll loop only backs off.
    url = f"postgresql+psycopg2://la:{SECRET}@127.0.0.1:9/catalog"
    poller = CatalogPoller.shared(url, 30.0)
    sub = poller.join([(TaskIdentity("orders_raw", "sales-platform"), dt.datetime(2026, 11, 28, tzinfo=dt.UTC))])
    try:
        names = [t.get_name() for t in asyncio.all_tasks()]
        [name] = [n for n in names if n.startswith("leastaction-poller")]
        assert SECRET not in name
        assert "127.0.0.1:9/catalog" in name
    finally:
        poller.leave(sub)
        poller._task.cancel()
