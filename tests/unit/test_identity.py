"""Airflow task names: every (DAG id, task id) pair Airflow accepts has a catalog name of its own."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from airflow_leastaction.identity import TaskIdentity, airflow_task_ids, airflow_task_name

# Airflow's key rule (letters, digits, "_", "-", "."); a small alphabet makes clashes likely to be tried.
AIRFLOW_KEY = re.compile(r"^[\w.-]+$")
ids = st.text(alphabet="ab.-_", min_size=1, max_size=6)


@given(ids, ids, ids, ids)
@example("a.b", "c", "a", "b.c")  # the reported clash: a dotted DAG id against a task-group task id
@example("a.", "b", "a", ".b")
@example("a", "b", "a", "b")
def test_two_different_airflow_tasks_never_share_a_catalog_name(dag1, task1, dag2, task2):
    assert AIRFLOW_KEY.match(dag1) and AIRFLOW_KEY.match(task1)
    same_task = (dag1, task1) == (dag2, task2)
    assert (airflow_task_name(dag1, task1) == airflow_task_name(dag2, task2)) == same_task


@given(ids, ids)
def test_a_catalog_name_gives_back_the_dag_and_task_it_was_made_from(dag_id, task_id):
    assert airflow_task_ids(airflow_task_name(dag_id, task_id)) == (dag_id, task_id)


def test_dag_ids_without_a_dot_keep_the_dotted_name():
    assert airflow_task_name("orders", "group.load") == "orders.group.load"
    assert airflow_task_name("sales.daily", "load") == "sales.daily:load"


def test_an_identity_is_read_the_same_from_a_mapping_row_and_an_attribute_row():
    from types import SimpleNamespace

    mapping = {"name": "orders", "project": "sales", "account": None, "partition": "eu"}
    assert (
        TaskIdentity.from_row(mapping)
        == TaskIdentity.from_row(SimpleNamespace(**mapping))
        == TaskIdentity("orders", "sales", "", "eu")
    )
