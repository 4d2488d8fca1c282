"""One attempt's rows: the five columns that name an attempt, matched the same way in every table keyed by one."""

from __future__ import annotations

import pytest

from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.catalog.audit_statements import ATTEMPT_COLUMNS, same_attempt
from airflow_leastaction.catalog.schema import consumption, gate_attempt, gate_decision

KEY = AttemptKey("shop", "load__gate", "scheduled__1", 3, 2)


@pytest.mark.parametrize("table", [gate_decision, gate_attempt, consumption], ids=lambda t: t.name)
def test_an_attempt_key_matches_each_of_its_five_columns_by_name(table):
    condition = same_attempt(table, KEY).compile()
    assert condition.params == {f"{name}_1": getattr(KEY, name) for name in ATTEMPT_COLUMNS}
    assert all(f"{table.name}.{name} = :{name}_1" in str(condition) for name in ATTEMPT_COLUMNS)


def test_the_key_fields_and_the_attempt_columns_are_in_the_same_order():
    assert tuple(AttemptKey.__dataclass_fields__) == ATTEMPT_COLUMNS
    assert str(same_attempt(gate_decision, tuple(getattr(KEY, n) for n in ATTEMPT_COLUMNS)).compile()) == str(
        same_attempt(gate_decision, KEY).compile()
    )


def test_values_that_do_not_name_a_whole_attempt_are_refused():
    with pytest.raises(ValueError):
        same_attempt(gate_decision, ("shop", "load__gate"))
