"""Catalog slots published as asset events, on a real deployment: scheduler, dag-processor, API server and
two triggerers as processes, Airflow's database on the shared PostgreSQL server, the catalog on a
PostgreSQL server of the test's own (stopped and started again).

The example ``partner_feed_assets.py``: a partner reports hourly slots of ``partners/partner_feed`` to the
catalog; ``catalog_asset`` publishes them. Each completed slot is one asset event (the watcher's) and, as
``partner_feed_hourly`` is partition-aware, one event with the slot as its partition key; a repair is a
new pair with revision 2. A watcher whose catalog is down says so and publishes what completed meanwhile;
a triggerer killed while its watcher publishes loses no event and doubles none, and so does one killed at
each step boundary of an event's publication (its crash points); once every hour of the day is reported
(with the command line, as the partner's system does), ``partner_feed_daily`` rolls it up.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text

from airflow_leastaction.catalog.bridges import AssetBridges
from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.schema import asset_bridge
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.crash_points import armed
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.wire import Cursor
from tests.helpers.airflow_cluster import AirflowCluster, fresh_pg_database
from tests.helpers.own_postgres import OwnPostgres
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.postgres

DAGS = Path(__file__).resolve().parent / "catalog_to_assets_dags"
EXAMPLE = ROOT / "dags_examples" / "partner_feed_assets.py"
ASSET = "catalog:partners/partner_feed"
PARTNER_FEED = TaskIdentity("partner_feed", "partners")
DAY = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
TIMEOUT = 240


@pytest.fixture(scope="module")
def deployment(pg_admin_url, tmp_path_factory):
    catalog_server = OwnPostgres()
    catalog_server.start()
    catalog_url = catalog_server.create_database("la_catalog")
    airflow_url, drop_airflow = fresh_pg_database(pg_admin_url, "la_e2e_assets")
    work = tmp_path_factory.mktemp("catalog_to_assets")
    dags = work / "dags"
    shutil.copytree(DAGS, dags)
    shutil.copy(EXAMPLE, dags)
    cluster = AirflowCluster(
        dags,
        sql_alchemy_conn=airflow_url,
        catalog_url=catalog_url,
        home=work / "home",
        components=("scheduler", "dag-processor", "api-server", "triggerer", "triggerer"),
        env={"AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "10"},
    )
    cluster.metadata = create_engine(airflow_url)
    try:
        with cluster:
            yield cluster, catalog_server, CatalogStore(create_engine(catalog_url))
    finally:
        cluster.metadata.dispose()
        catalog_server.remove()
        drop_airflow()


@pytest.fixture(scope="module")
def watching(deployment):
    """Both consumers unpaused, and the watcher running (it registered its bridge in the catalog)."""
    cluster, _server, store = deployment
    for dag_id in ("partner_feed_plain", "partner_feed_hourly", "partner_feed_daily"):
        cluster.unpause(dag_id)

    def registered():
        with store.engine.connect() as conn:
            return conn.execute(select(asset_bridge).where(asset_bridge.c.asset_name == ASSET)).first()

    cluster.wait_until(registered, TIMEOUT, "the watcher to register its bridge")
    return deployment


def report(store: CatalogStore, hour: int, run_id: str | None = None):
    slot = DAY + dt.timedelta(hours=hour)
    return report_completion("partner_feed", "partners", slot, cron="0 * * * *", run_id=run_id, store=store)


def asset_events(cluster: AirflowCluster) -> list[dict]:
    """The asset's events, from Airflow's database: the REST listing answers 500 while an event's run is
    queued (Airflow 3.3 validates the run's start date, which it has not got yet)."""
    query = text(
        "SELECT e.extra, e.partition_key FROM asset_event e JOIN asset a ON a.id = e.asset_id "
        "WHERE a.name = :name ORDER BY e.id"
    )
    with cluster.metadata.connect() as conn:
        rows = conn.execute(query, {"name": ASSET}).all()
    return [
        {"extra": r.extra if isinstance(r.extra, dict) else json.loads(r.extra), "partition_key": r.partition_key}
        for r in rows
    ]


def published(cluster: AirflowCluster) -> tuple[Counter, Counter]:
    """(slot, revision) -> how many watcher events, and (partition key, revision) -> how many partitioned."""
    plain, keyed = Counter(), Counter()
    for event in asset_events(cluster):
        payload = event["extra"]["payload"]
        if event["partition_key"] is None:
            plain[(payload["slot"], payload["revision"])] += 1
        else:
            keyed[(event["partition_key"], payload["revision"])] += 1
    return plain, keyed


def wait_published(cluster: AirflowCluster, wanted: set[tuple[str, int]]) -> tuple[Counter, Counter]:
    def done():
        plain, keyed = published(cluster)
        return (plain, keyed) if wanted <= set(plain) and len(keyed) >= len(plain) else None

    return cluster.wait_until(done, TIMEOUT, lambda: f"events for {sorted(wanted)} (have {published(cluster)})")


def key(hour: int) -> str:
    return (DAY + dt.timedelta(hours=hour)).strftime("%Y-%m-%dT%H:%M:%S")


def slot(hour: int) -> str:
    return (DAY + dt.timedelta(hours=hour)).isoformat()


def test_a_completed_slot_is_one_event_and_one_partitioned_event_keyed_by_its_slot(watching):
    cluster, _server, store = watching
    report(store, 5)
    plain, keyed = wait_published(cluster, {(slot(5), 1)})
    assert plain[(slot(5), 1)] == 1 and keyed[(key(5), 1)] == 1
    runs = cluster.wait_until(
        lambda: [r for r in cluster.runs("partner_feed_hourly") if r["state"] == "success"],
        TIMEOUT,
        "partner_feed_hourly to run",
    )
    assert [r["partition_key"] for r in runs] == ["2026-11-16T05"]
    [plain_run] = cluster.wait_for_runs("partner_feed_plain", 1)
    assert plain_run["state"] == "success"


def test_a_repair_is_a_new_event_with_the_new_revision_in_its_extra(watching):
    cluster, _server, store = watching
    report(store, 6)
    wait_published(cluster, {(slot(6), 1)})
    report(store, 6, run_id="partner-rerun")
    plain, keyed = wait_published(cluster, {(slot(6), 1), (slot(6), 2)})
    assert (plain[(slot(6), 1)], plain[(slot(6), 2)], keyed[(key(6), 2)]) == (1, 1, 1)
    [repair] = [e for e in asset_events(cluster) if e["extra"]["payload"]["revision"] == 2 and not e["partition_key"]]
    assert repair["extra"]["payload"]["repair"] is True


def triggerer_log(cluster: AirflowCluster, name: str) -> str:
    return cluster.component(name).log_path.read_text(errors="replace")


def starts(cluster: AirflowCluster, name: str) -> int:
    """How many times the feed's watcher started in triggerer ``name``."""
    return triggerer_log(cluster, name).count("publishing partners/partner_feed to asset")


def published_by(cluster: AirflowCluster, hour: int) -> str:
    """The triggerer whose watcher published the hour last (its log says so, each line with its time)."""
    text = f"slot {slot(hour)} completed (revision 1)"
    found = [
        (line.split(" ", 1)[0], name)
        for name in ("triggerer-1", "triggerer-2")
        for line in triggerer_log(cluster, name).splitlines()
        if text in line
    ]
    return max(found)[1]


def test_a_watcher_whose_catalog_is_down_waits_says_so_and_publishes_what_completed_meanwhile(
    watching, tmp_path, monkeypatch
):
    from airflow_leastaction.catalog.outcomes import SlotEvent, deliver, replay
    from airflow_leastaction.catalog.store import TaskMeta

    cluster, server, store = watching
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path))
    server.stop()
    cluster.wait_until(
        lambda: any(
            "catalog unreachable; waiting" in triggerer_log(cluster, n) for n in ("triggerer-1", "triggerer-2")
        ),
        TIMEOUT,
        "the watcher to say the catalog is unreachable",
    )
    # A reporter that spools while the catalog is down, as the listener does.
    for hour in (7, 8):
        outcome = SlotEvent(
            "success",
            TaskIdentity("partner_feed", "partners"),
            DAY + dt.timedelta(hours=hour),
            dt.datetime.now(dt.UTC),
            meta=TaskMeta(cron="0 * * * *", source="external"),
            run_id=f"spooled-{hour}",
        )
        assert deliver(outcome, lambda: store) is None  # spooled, not applied
    server.start()
    store.engine.dispose()
    assert replay(store, tmp_path) == 2
    report(store, 9)
    plain, keyed = wait_published(cluster, {(slot(7), 1), (slot(8), 1), (slot(9), 1)})
    assert all(plain[(slot(h), 1)] == 1 and keyed[(key(h), 1)] == 1 for h in (7, 8, 9))
    assert any("catalog reachable again" in triggerer_log(cluster, n) for n in ("triggerer-1", "triggerer-2"))


def test_a_triggerer_killed_while_its_watcher_publishes_loses_no_event_and_doubles_none(watching):
    cluster, _server, store = watching
    for hour in range(10, 16):
        report(store, hour)
    wait_published(cluster, {(slot(10), 1)})  # the watcher is publishing the burst
    holder = published_by(cluster, 10)
    survivor = "triggerer-2" if holder == "triggerer-1" else "triggerer-1"
    before = starts(cluster, survivor)
    cluster.kill(holder)
    for hour in range(16, 19):  # completed while no watcher runs
        report(store, hour)
    cluster.wait_until(lambda: starts(cluster, survivor) > before, TIMEOUT, f"{survivor} to take the watcher over")
    plain, keyed = wait_published(cluster, {(slot(h), 1) for h in range(10, 19)})
    assert {n for n in plain.values()} == {1}, plain
    assert {n for n in keyed.values()} == {1}, keyed
    assert len(keyed) == len(plain)


def test_the_partners_command_line_reports_complete_the_day_and_the_daily_rollup_runs_once(watching):
    cluster, _server, store = watching
    reported = {h for h in range(24) if published(cluster)[0][(slot(h), 1)]}
    for hour in sorted(set(range(24)) - reported):
        cluster.run_leastaction(
            "catalog", "report", "partner_feed", "--project", "partners", "--slot", slot(hour), "--cron", "0 * * * *"
        )
    wait_published(cluster, {(slot(h), 1) for h in range(24)})
    runs = cluster.wait_until(
        lambda: [r for r in cluster.runs("partner_feed_daily") if r["state"] == "success"],
        TIMEOUT,
        "partner_feed_daily to roll the day up",
    )
    assert [r["partition_key"] for r in runs] == ["2026-11-16"]
    # The catalog's cursor of the bridge (the UI's, and the resume point without a state store) follows
    # each commit: it reaches the last event Airflow recorded.
    last = max(
        (Cursor.decode(e["extra"]["payload"]["cursor"]) for e in asset_events(cluster)), key=lambda c: (c.seq, c.slot)
    )
    bridges = AssetBridges(store.engine)
    cluster.wait_until(
        lambda: [b.cursor for b in bridges.bridges([PARTNER_FEED])] == [last], TIMEOUT, "the catalog's cursor"
    )
    # The cursor a watcher resumes from is in the asset's state store, written with the last event.
    assert stored_cursor(cluster) == last


def stored_cursor(cluster: AirflowCluster) -> Cursor | None:
    query = text(
        "SELECT s.value FROM asset_state_store s JOIN asset a ON a.id = s.asset_id "
        "WHERE a.name = :name AND s.key = 'leastaction.cursor'"
    )
    with cluster.metadata.connect() as conn:
        value = conn.execute(query, {"name": ASSET}).scalar()
    return Cursor.decode(json.loads(value)) if value else None


#: Each step boundary of publishing one watcher event, and the hour of the next day a test reports there.
EMISSION_POINTS = {
    "asset_emission.cursor_staged": 1,
    "asset_emission.writes_staged": 3,
    "asset_emission.committed": 5,
    "asset_emission.catalog_cursor_moved": 7,
}
NEXT_DAY = 24


@pytest.mark.parametrize("point", list(EMISSION_POINTS))
def test_a_triggerer_killed_at_each_step_of_a_publication_publishes_the_slot_once(watching, point):
    """The only triggerer left runs the watcher with ``point`` armed and dies there while it publishes a
    slot; restarted, the triggerers publish it exactly once (and its partitioned twin once), then the next
    slot, and the catalog's cursor catches up with the last event."""
    cluster, _server, store = watching
    hour = NEXT_DAY + EMISSION_POINTS[point]
    for name in ("triggerer-1", "triggerer-2"):
        cluster.kill(name)
    armed_one = cluster.restart("triggerer-1", env=armed(point))
    report(store, hour)
    cluster.wait_until(lambda: armed_one.process.poll() is not None, TIMEOUT, f"triggerer-1 to die at {point}")
    assert armed_one.process.returncode == -9, f"triggerer-1 exited {armed_one.process.returncode}, not at {point}"
    cluster.kill("triggerer-1")  # what the dead process started goes with it
    for name in ("triggerer-1", "triggerer-2"):
        cluster.restart(name)
    report(store, hour + 1)
    plain, keyed = wait_published(cluster, {(slot(hour), 1), (slot(hour + 1), 1)})
    assert [plain[(slot(h), 1)] for h in (hour, hour + 1)] == [1, 1], plain
    assert [keyed[(key(h), 1)] for h in (hour, hour + 1)] == [1, 1], keyed
    last = max(
        (Cursor.decode(e["extra"]["payload"]["cursor"]) for e in asset_events(cluster)), key=lambda c: (c.seq, c.slot)
    )
    bridges = AssetBridges(store.engine)
    cluster.wait_until(
        lambda: [b.cursor for b in bridges.bridges([PARTNER_FEED])] == [last], TIMEOUT, "the catalog's cursor"
    )
