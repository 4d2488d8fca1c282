"""The key of a dependency on a task of the same run: ``task:<task_id>``, and only such a key reads back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.catalog.audit_statements import missing_identity
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import Dependency, task_key, task_of_key

TASK_IDS = st.text(alphabet="abz_-.09:", min_size=1, max_size=20)


@given(TASK_IDS)
def test_a_same_run_dependency_is_keyed_task_colon_its_task_id_and_reads_back(task_id):
    assert task_key(task_id) == f"task:{task_id}"
    assert Dependency(task_id).key == task_key(task_id)
    assert task_of_key(task_key(task_id)) == task_id


@given(st.one_of(st.none(), st.text(alphabet="atsk:/c", max_size=12)))
def test_the_inverse_refuses_every_key_the_rule_did_not_build(key):
    made = bool(key) and key.startswith("task:") and len(key) > len("task:")
    assert (task_of_key(key) is not None) is made
    if made:
        assert task_key(task_of_key(key)) == key


def test_a_catalog_task_key_is_not_a_same_run_task_key():
    identity = TaskIdentity("load", "shop")
    assert task_of_key(Dependency(identity).key) is None
    assert task_of_key("task:") is None


def test_a_missing_same_run_dependency_is_matched_on_the_catalog_identity_of_its_task():
    assert missing_identity(task_key("load"), ("shop_dag", "prod")) == "prod/shop_dag.load"
    assert missing_identity("catalog:prod/x", None) == "prod/x"
    assert missing_identity(task_key("load"), None) is None
    assert missing_identity("task:", ("shop_dag", "prod")) is None
