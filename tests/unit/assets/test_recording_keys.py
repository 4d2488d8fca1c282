"""The run id a recorded asset event's slot record carries: the producing run and the try that produced
it, within the column's width however long the DAG, run and task ids are."""

from __future__ import annotations

import pytest
from airflow.sdk import Asset

from airflow_leastaction.assets.recording import RUN_ID_WIDTH, ProducingTry, _run_id

# The asset-event listener and its event type: Airflow 3.2 on.
AssetEvent = pytest.importorskip(
    "airflow.listeners.types", reason="no asset-event listener before Airflow 3.2"
).AssetEvent

FIRST = ProducingTry("01a2491b-2068-791a-9824-a379aa67590d", 1)
SECOND = ProducingTry("01a2491b-52b5-78a7-a23b-3cd7fbc5e4e0", 2)


def event(dag_id: str = "d", run_id: str = "r", task_id: str = "t", map_index: int = -1) -> AssetEvent:
    return AssetEvent(
        asset=Asset("a"),
        extra={},
        source_dag_id=dag_id,
        source_task_id=task_id,
        source_run_id=run_id,
        source_map_index=map_index,
        source_aliases=[],
        partition_key=None,
    )


@pytest.mark.parametrize("length", [1, 100, 200, 250, 1000])
def test_the_run_id_fits_its_column_and_ends_with_the_try(length):
    long = event("d" * length, "r" * length, "t" * length)
    for produced_by in (FIRST, SECOND):
        run_id = _run_id(long, "2026-11-16", produced_by)
        assert len(run_id) <= RUN_ID_WIDTH
        assert run_id.endswith(f"@{produced_by.ti_id}")
    assert _run_id(long, None, FIRST) != _run_id(long, None, SECOND)


def test_the_same_try_gives_the_same_run_id_and_an_unknown_try_a_new_one_each_time():
    assert _run_id(event(), None, FIRST) == _run_id(event(), None, FIRST) == f"d/r/t@{FIRST.ti_id}"
    assert _run_id(event(map_index=3), "k", FIRST) == f"d/r/t/3#k@{FIRST.ti_id}"
    unknown = {_run_id(event(), None, None) for _ in range(3)}
    assert len(unknown) == 3 and all(len(u) <= RUN_ID_WIDTH and "@unknown-" in u for u in unknown)
