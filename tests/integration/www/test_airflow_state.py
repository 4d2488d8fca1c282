"""What the pages read of Airflow's own records: the tasks a DAG declares, from its latest serialized version."""

from __future__ import annotations

import textwrap

import pytest

from airflow_leastaction.www import airflow_state

DAG_FILE = """
import pendulum
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator

with DAG("la_state_probe", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    {tasks}
"""


@pytest.fixture
def serialize(airflow_db, tmp_path, monkeypatch):
    """``serialize(*task_ids)``: a DAG file with these tasks, parsed and written to Airflow's database as
    the DAG processor writes it (a new version each time it changes: no 30 s between writes here)."""
    monkeypatch.setenv("AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL", "0")
    from airflow import settings

    # Airflow 3.1 reads the option once, when airflow.settings is imported.
    monkeypatch.setattr(settings, "MIN_SERIALIZED_DAG_UPDATE_INTERVAL", 0, raising=False)
    from importlib import import_module

    from airflow.models.dagbundle import DagBundleModel
    from airflow.utils.session import create_session

    from airflow_leastaction.version_compat import dag_bag_class

    DagBag = dag_bag_class()
    sync_bag_to_db = import_module(DagBag.__module__).sync_bag_to_db  # beside DagBag on every minor

    with create_session() as session:
        if session.get(DagBundleModel, "la-state-probe") is None:
            session.add(DagBundleModel(name="la-state-probe"))

    def write(*task_ids: str) -> None:
        body = "\n    ".join(f'EmptyOperator(task_id="{t}")' for t in task_ids)
        (tmp_path / "probe.py").write_text(textwrap.dedent(DAG_FILE).format(tasks=body))
        bag = DagBag(str(tmp_path))
        assert not bag.import_errors, bag.import_errors
        sync_bag_to_db(bag, "la-state-probe", None)

    return write


def test_a_dags_tasks_are_read_from_its_latest_serialized_version(serialize):
    serialize("extract", "load")
    assert sorted(airflow_state.declared_tasks(["la_state_probe"])["la_state_probe"]) == ["extract", "load"]
    serialize("extract", "load", "report")  # a new version of the DAG: read anew, not from the parsed one
    for _ in range(2):
        found = airflow_state.declared_tasks(["la_state_probe", "no_such_dag"])
        assert set(found) == {"la_state_probe"}
        assert sorted(found["la_state_probe"]) == ["extract", "load", "report"]
