"""One withholding policy: a task of a DAG the reader may not read is left out wherever a page would show
it (the graph, a consumption row's upstream with its current revision and staleness, a catalog row's
declared parents), on SQLite and PostgreSQL."""

from __future__ import annotations

from airflow_leastaction.catalog.store import AttemptKey
from airflow_leastaction.www.lineage import build_lineage
from airflow_leastaction.www.queries import CatalogFilter, ConsumptionFilter, DagScope
from airflow_leastaction.www.reads import CatalogReads
from tests.helpers import www_scenario as scenario

FINANCE = DagScope(frozenset({"finance_weekly"}))


def _story(store):
    story = scenario.build(store)
    meta = scenario.airflow_meta(scenario.ROLLUP, "0 5 * * 1")
    who = AttemptKey("finance_weekly", "rollup", "scheduled__2024-01-01T05:00:00+00:00", -1, 1)
    scenario.gate(store, who, [scenario.REPORT], scenario.day(1), scenario.day(1, 6))
    store.record_success(
        scenario.ROLLUP, scenario.day(1), meta=meta, run_id=who.run_id, at=scenario.day(1, 7), consumer=who
    )
    # sales_daily's report of the 1st is repaired: the roll-up's consumption of it is now stale.
    rerun = AttemptKey("sales_daily", "build_report", "scheduled__2024-01-01T03:00:00+00:00", -1, 2)
    report = scenario.airflow_meta(scenario.REPORT)
    store.record_running(
        scenario.REPORT, scenario.day(1), meta=report, run_id=rerun.run_id, attempt=2, at=scenario.day(1, 8)
    )
    store.record_success(
        scenario.REPORT, scenario.day(1), meta=report, run_id=rerun.run_id, attempt=2, at=scenario.day(1, 9)
    )
    return story


def test_a_consumption_row_withholds_an_upstream_of_a_dag_the_reader_may_not_read(store):
    _story(store)
    reads = CatalogReads(store.engine)
    everyone = reads.consumption(ConsumptionFilter(dag_id="finance_weekly"), None, 50).rows
    assert [(r["upstream_name"], r["stale"], r["withheld"]) for r in everyone] == [(scenario.REPORT.name, True, False)]
    mine = reads.consumption(ConsumptionFilter(dag_id="finance_weekly"), None, 50, FINANCE).rows
    assert len(mine) == 1 and mine[0]["withheld"]
    shown = ("upstream_name", "current_revision", "stale", "dependency", "upstream_task_pk")
    assert [mine[0][k] for k in shown] == [None, None, False, "", None]
    # Nor is it chosen by its staleness.
    assert reads.consumption(ConsumptionFilter(stale_only=True), None, 50, FINANCE).rows == []
    assert reads.consumption(ConsumptionFilter(stale_only=True), None, 50).rows


def test_the_catalog_withholds_the_declared_parents_the_graph_withholds(store):
    _story(store)
    reads = CatalogReads(store.engine)
    (row,) = reads.catalog(CatalogFilter(dag_id="finance_weekly"), None, 50, FINANCE).rows
    assert row.parents == [scenario.MISSING] and row.withheld == 1  # not in the catalog: belongs to no DAG
    (everything,) = reads.catalog(CatalogFilter(dag_id="finance_weekly"), None, 50).rows
    assert sorted(everything.parents) == sorted([scenario.REPORT, scenario.MISSING]) and everything.withheld == 0
    graph = build_lineage(
        store.engine, [row.task], scenario.day(2), up=1, down=0, visible=lambda r: FINANCE.allows(r["dag_id"])
    )
    assert {e.parent for e in graph.edges} == set(row.parents) and graph.withheld == row.withheld
