"""A small simulated day through the state-aware queue, on real dbt-duckdb builds: every pass in the history
is checked against the builds the day needs, counted from the manifest and the day's changes alone."""

from __future__ import annotations

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.identity import TaskIdentity
from tests.helpers import dbt_day

pytestmark = [pytest.mark.dbt, pytest.mark.slow, pytest.mark.no_airflow]


def test_no_model_is_built_whose_inputs_were_unchanged_and_none_skipped_whose_inputs_changed(catalog_url, tmp_path):
    project = dbt_day.write_project(tmp_path, sources=6, layers=(6, 4, 3, 2), fanin=(1, 2, 2, 2))
    runner = DbtRunner(project)
    with runner.session() as session:
        session.invoke(["build"]).raise_for_exit()
        manifest = session.manifest()
    ids = dbt_day.source_ids(manifest)
    plan = dbt_day.plan_day(ids, hours=4, pipelines=4, schedules=(1, 2), share=0.34, seed=11)
    queue = QueueStore(get_engine(catalog_url))
    catalog = CatalogStore(queue.engine)
    dbt_day.before_the_day(queue, runner, catalog, manifest, state_aware=True)
    built = reused = 0
    for hour in range(plan.hours):
        for row, source in enumerate(plan.changes[hour]):
            dbt_day.land(project, source, hour, 100 * hour + row)
            catalog.report_completion(TaskIdentity(*dbt_day.loader(source)), dbt_day.slot(hour))
        if dbt_day.request_hour(queue, manifest, plan, hour):
            report = dbt_day.worker(queue, runner, state_aware=True).drain().as_dict()
            built, reused = built + len(report["built"]), reused + len(report["reused"])

    needed = dbt_day.minimum_builds(plan, manifest["parent_map"], ids)
    passes = dbt_day.day_passes(queue)
    assert dbt_day.wrong_decisions(passes, needed, dbt_day.hour_of) == {"built_unchanged": [], "skipped_changed": []}
    assert built == len(needed) > 0 and reused > 0  # the day both built and reused, so each check had work
    assert {r["decision"] for r in passes} == {"built", "reused"} and all(r["reason"] for r in passes)
