"""HAS_DATA out of process: rows written reach the catalog when the task's code ran in another process
(``@task.external_python``: a real second interpreter) or when a task only pushes the XCom
``leastaction_rows_written``. Real DAG runs (``dag.test()``) on a real SQLite catalog."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from airflow_leastaction.refs import airflow_task

DAY = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)


@pytest.fixture
def catalog(sqlite_url, use_catalog, tmp_path, monkeypatch):
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore

    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("LX_MARKERS", str(tmp_path / "markers"))
    get_engine(sqlite_url, migrate=True)
    use_catalog(sqlite_url)
    return CatalogStore(get_engine(sqlite_url))


def recorded(store, dag_id: str, map_index: int = -1):
    identity = airflow_task(dag_id, "load", map_index=map_index)
    _, slots = store.snapshot([(identity, DAY)])
    return [(s.state, s.rows_written) for s in slots]


def states(run) -> dict[str, str]:
    return {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in run.get_task_instances()}


def test_rows_pushed_by_a_task_in_another_interpreter_satisfy_has_data(catalog, run_dag):
    run = run_dag("lx_rows_external_python", DAY)
    [load] = [ti for ti in run.get_task_instances() if ti.task_id == "load"]
    assert load.xcom_pull(task_ids="load", key="pid") != os.getpid()  # the code ran in its own process
    assert recorded(catalog, "lx_rows_external_python") == [("success", 7)]
    assert states(run)["publish"] == "success"


def test_a_plain_xcom_push_of_rows_written_satisfies_has_data(catalog, run_dag):
    run = run_dag("lx_rows_xcom_push", DAY)
    assert recorded(catalog, "lx_rows_xcom_push") == [("success", 4)]
    assert states(run)["publish"] == "success"


def test_an_xcom_that_is_not_a_count_leaves_rows_written_unknown(catalog, run_dag):
    run = run_dag("lx_rows_xcom_not_a_count", DAY)
    assert recorded(catalog, "lx_rows_xcom_not_a_count") == [("success", None)]
    assert states(run)["publish"] == "skipped"


def test_each_map_index_reads_its_own_pushed_rows(catalog, run_dag):
    assert run_dag("lx_rows_mapped", DAY).state == "success"
    assert [recorded(catalog, "lx_rows_mapped", i) for i in (0, 1)] == [[("success", 2)], [("success", 0)]]


def test_a_task_that_reports_no_rows_leaves_no_error_in_the_logs(catalog, run_dag, capfd):
    # Airflow logs a missing XCom read one at a time as an error ("XCom not found"); the listener reads a
    # task's rows as a sequence, which is simply empty, so a task that reports nothing logs nothing.
    run = run_dag("lx_rows_xcom_push", DAY)
    assert states(run)["publish"] == "success"
    identity = airflow_task("lx_rows_xcom_push", "publish")
    _, slots = catalog.snapshot([(identity, DAY)])
    assert [(s.state, s.rows_written) for s in slots] == [("success", None)]  # reported nothing: unknown
    out, err = capfd.readouterr()
    assert "XCom not found" not in out + err
