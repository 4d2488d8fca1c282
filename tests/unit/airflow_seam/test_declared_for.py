"""The parents declared for a task behind several sensors: every sensor declares the same union, so the
catalog's graph keeps every parent whichever sensor declares last."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.airflow_seam.child_interval import declarations_of, declared_for
from airflow_leastaction.catalog.declared_parents import declaration
from airflow_leastaction.identity import TaskIdentity

parents = st.builds(
    TaskIdentity,
    st.sampled_from(["orders", "rates", "fx", "ledger"]),
    st.sampled_from(["sales", "finance"]),
    coverage=st.sampled_from([None, "interval"]),
)


def sensor(task_id: str, consumers: list[str], own: list[TaskIdentity]):
    return SimpleNamespace(task_id=task_id, catalog_parents_for=lambda consumer: own if consumer in consumers else [])


@given(st.lists(st.tuples(st.lists(parents, max_size=3), st.booleans()), min_size=1, max_size=4))
def test_every_sensor_of_a_task_declares_the_union_of_what_its_sensors_wait_on(gates):
    tasks = [
        sensor(f"wait_{n}", ["report"] if gates_report else ["other"], own)
        for n, (own, gates_report) in enumerate(gates)
    ]
    dag = SimpleNamespace(tasks=[*tasks, SimpleNamespace(task_id="report")])
    union = {declaration([p]) for own, gates_report in gates if gates_report for p in own}
    answers = [declared_for(dag, "report", own) for own, gates_report in gates if gates_report]
    for answer in answers:
        assert [declaration([p]) for p in answer] == sorted(union)  # the same text from each, each parent once
    for own, gates_report in gates:
        if not gates_report:
            assert {declaration([p]) for p in declared_for(dag, "other", own)} == {
                declaration([p]) for o, g in gates if not g for p in o
            }


def test_without_its_dag_a_sensor_declares_its_own_parents():
    own = [TaskIdentity("orders", "sales"), TaskIdentity("rates", "finance", coverage="interval")]
    assert {declaration([p]) for p in declared_for(None, "report", own)} == {declaration([p]) for p in own}


def test_the_triggers_form_keeps_each_parents_coverage():
    own = [TaskIdentity("rates", "finance", coverage="interval")]
    [declared] = declarations_of(None, ["report"], own)["report"]
    assert TaskIdentity.from_dict(declared).coverage == "interval"
