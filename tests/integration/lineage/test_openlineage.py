"""OpenLineage with Airflow's provider and the real OpenLineage client writing events to a file: a gated
task's run events carry the consumption facet (upstream, slot, revision, repairs marked), a dbt queue batch
is a run event naming the models it built (``tests/integration/dbt/test_dbt_lineage.py``), each validated
against the schema shipped in the package.
Without the provider nothing of OpenLineage is imported and runs go as before.

Each run is its own Python process: the provider reads its configuration once per process.
"""

from __future__ import annotations

import datetime as dt
import textwrap

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.store import CatalogStore
from tests.helpers.lineage import ROOT, catalog_env, lineage_env, read_events, run_python, validate, without_openlineage

DAY = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)


RUN_GATED = f"""
    import datetime as dt
    from airflow_leastaction.version_compat import dag_bag_class
    DagBag = dag_bag_class()
    bag = DagBag("{ROOT / "tests" / "dags" / "lineage_cases.py"}")
    assert not bag.import_errors, bag.import_errors
    run = bag.get_dag("lin_gated").test(logical_date=dt.datetime(2026, 11, 16, tzinfo=dt.timezone.utc))
    assert run.state == "success", run.state
"""


def test_a_gated_tasks_run_events_name_the_upstream_slot_and_revision_it_consumed(airflow_db, sqlite_url, tmp_path):
    store = CatalogStore(get_engine(sqlite_url, migrate=True))
    report_completion("lin_raw", "other-team", DAY, cron="0 0 * * *", run_id="first", store=store)
    report_completion("lin_raw", "other-team", DAY, cron="0 0 * * *", run_id="repaired", store=store)
    events = tmp_path / "events.jsonl"
    run_python(RUN_GATED, lineage_env(events, sqlite_url))
    found = read_events(events)
    work = [e for e in found if e["job"]["name"] == "lin_gated.work"]
    assert {e["eventType"] for e in work} == {"START", "COMPLETE"}
    for event in work:
        facet = event["run"]["facets"]["leastaction_consumption"]
        validate(facet, "LeastActionConsumptionRunFacet")
        [consumed] = facet["consumed"]
        assert consumed["upstream"] == {"name": "lin_raw", "project": "other-team", "account": "", "partition": ""}
        assert (consumed["slot"], consumed["revision"], consumed["repair"]) == (DAY.isoformat(), 2, True)
        assert (consumed["gate"], consumed["type"]) == ("wait", "SUCCESS")
    sensor = [e for e in found if e["job"]["name"] == "lin_gated.wait"]
    assert sensor and all(
        "leastaction_consumption" not in e["run"]["facets"] for e in sensor
    )  # a gate consumes nothing


def test_without_the_provider_nothing_of_openlineage_is_imported_and_runs_go_as_before(
    airflow_db, sqlite_url, tmp_path
):
    store = CatalogStore(get_engine(sqlite_url, migrate=True))
    report_completion("lin_raw", "other-team", DAY, cron="0 0 * * *", run_id="first", store=store)
    check = """
        import importlib, pkgutil, sys
        import airflow_leastaction
        from airflow_leastaction.lineage import openlineage_installed
        assert not openlineage_installed()
        for info in pkgutil.walk_packages(airflow_leastaction.__path__, "airflow_leastaction."):
            # Not the provider's own hook (never imported without it), nor a command line's entry point.
            if info.name != "airflow_leastaction.lineage.facets" and not info.name.endswith("__main__"):
                importlib.import_module(info.name)
        loaded = sorted(m for m in sys.modules if m.startswith(("openlineage", "airflow.providers.openlineage")))
        assert not loaded, loaded
    """
    site = without_openlineage(tmp_path / "site-packages")
    run_python(textwrap.dedent(RUN_GATED) + textwrap.dedent(check), catalog_env(sqlite_url), site_packages=site)
