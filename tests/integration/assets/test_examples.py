"""The assets → catalog example (``dags_examples/orders_on_assets.py``) in real runs: the hourly landing's
asset event is a slot record of ``airflow_asset("orders_landed")`` with the rows of its extra, and the
asset-triggered ``orders_on_landing`` enriches once the week of FX rates covering its run is done."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select

from airflow_leastaction.catalog.schema import identity_clause, task, task_run
from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.refs import airflow_asset
from airflow_leastaction.version_compat import ASSET_EVENT_LISTENER, PARTITION_ROLLUPS, PARTITIONED_ASSETS
from tests.helpers.airflow_minors import needs
from tests.helpers.paths import EXAMPLES
from tests.helpers.run_conditions import states

MONDAY = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)


@needs(
    ASSET_EVENT_LISTENER, "the on_asset_event_emitted listener hook (Airflow 3.2): orders_on_assets.py defines no DAG"
)
def test_the_landing_is_recorded_and_the_asset_triggered_dag_waits_for_its_catalog_parent(catalog, run_dag):
    hour = MONDAY + dt.timedelta(hours=9)
    assert run_dag("orders_landing", hour).state == "success"
    with catalog.engine.connect() as conn:
        [record] = conn.execute(
            select(task_run.c.slot, task_run.c.rows_written, task.c.cron)
            .join(task, task.c.id == task_run.c.task_pk)
            .where(*identity_clause(airflow_asset("orders_landed")))
        ).all()
    assert (record.slot, record.rows_written, record.cron) == (hour, 1200, "0 * * * *")
    assert run_dag("fx_rates_weekly", MONDAY).state == "success"
    # Asset-triggered: the run has no logical date; it is judged at its run_after, in the week of the 16th.
    admitted = run_dag("orders_on_landing", None, run_after=hour + dt.timedelta(hours=1))
    assert states(admitted) == {"wait_for_weekly_rates": "success", "enrich_orders": "success"}
    [decision] = catalog.audit.decisions_for(
        AttemptKey("orders_on_landing", "wait_for_weekly_rates", admitted.run_id, -1, 1)
    )
    assert (decision["result"], decision["upstream_slot"]) == ("SATISFIED", MONDAY)


#: The example DAGs that need a mechanism of a later minor than 3.1, and whether this Airflow has it.
NEWER = {
    "orders_landing": ASSET_EVENT_LISTENER,
    "orders_on_landing": ASSET_EVENT_LISTENER,
    "orders_landed_daily": ASSET_EVENT_LISTENER,
    "partner_feed_hourly": PARTITIONED_ASSETS,
    "partner_feed_daily": PARTITION_ROLLUPS,
}


def test_an_example_file_defines_what_this_airflow_runs_and_names_in_one_line_what_it_leaves_out(caplog):
    import logging

    from airflow_leastaction.version_compat import dag_bag_class

    with caplog.at_level(logging.WARNING):
        bag = dag_bag_class()(str(EXAMPLES))
    assert not bag.import_errors, bag.import_errors
    assert {d for d in NEWER if d in bag.dags} == {d for d, there in NEWER.items() if there}
    said = [r.getMessage() for r in caplog.records if "not defined" in r.getMessage()]
    for dag_id, there in NEWER.items():
        assert there or sum(dag_id in line for line in said) == 1, (dag_id, said)
