"""The gate-id rule: a run-condition gate's task id is ``<gated task>__gate``, and only such an id reads back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.run_conditions.model import GATE_SUFFIX, gate_task_id, gated_task_id, is_gate_task_id

#: Airflow task ids: letters, digits, ``_``, ``-`` and ``.``.
TASK_IDS = st.text(alphabet="abcz_-.09", min_size=1, max_size=20)


@given(TASK_IDS)
def test_a_gate_id_reads_back_as_the_task_it_was_made_for(task_id):
    gate = gate_task_id(task_id)
    assert gate == f"{task_id}__gate"
    assert gated_task_id(gate) == task_id
    assert is_gate_task_id(gate)


@given(st.one_of(st.none(), st.text(alphabet="abcz_-.09g", max_size=20)))
def test_the_inverse_refuses_every_id_the_rule_did_not_build(task_id):
    # Oracle from the rule's words: an id is a gate's when it is some non-empty task id followed by the suffix.
    made = bool(task_id) and task_id.endswith("__gate") and len(task_id) > len("__gate")
    assert is_gate_task_id(task_id) is made
    if made:
        assert gate_task_id(gated_task_id(task_id)) == task_id
    else:
        assert gated_task_id(task_id) is None


def test_a_task_named_only_the_suffix_is_a_task_of_its_own_not_a_gate():
    assert gated_task_id(GATE_SUFFIX) is None
    assert not is_gate_task_id("__gate")


def test_a_gate_of_a_task_whose_id_ends_like_a_gate_reads_back_whole():
    assert gated_task_id(gate_task_id("load__gate")) == "load__gate"


@pytest.mark.parametrize("task_id", ["", None, 3])
def test_no_gate_id_is_made_from_something_that_is_not_a_task_id(task_id):
    with pytest.raises(ValueError, match="gate admits a task"):
        gate_task_id(task_id)
