"""The catalog page and API show why a slot's rows written are unknown (their read failed), escaped as
every other text of the page; a slot with a count shows the count."""

from __future__ import annotations

import datetime as dt
import html

from airflow_leastaction.identity import TaskIdentity

P = "/leastaction"
LOAD = TaskIdentity("orders_load_rows", "shop")
DAY = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)
ERROR = "ConnectionError: <b>API</b> away"


def test_a_slot_whose_rows_could_not_be_read_says_so_on_the_catalog_page_and_api(client, store):
    store.record_success(LOAD, DAY, run_id="r1", rows_error=ERROR)
    store.record_success(LOAD, DAY + dt.timedelta(days=1), run_id="r2", rows_written=7)
    [item] = client.get(P + "/api/catalog", params={"q": LOAD.name}).json()["items"]
    slots = [(s["slot"][:10], s["rows_written"], s["rows_error"]) for s in item["recent_slots"]]
    assert slots == [("2024-01-03", 7, None), ("2024-01-02", None, ERROR)]
    page = client.get(P + "/catalog", params={"q": LOAD.name}).text
    assert html.escape(f"rows unknown: could not be read ({ERROR})") in page
    assert "<b>API</b>" not in page
    assert "7 rows written" in page
