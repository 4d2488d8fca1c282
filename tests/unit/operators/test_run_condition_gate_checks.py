"""A ``RunConditionGate`` built directly gets the checks ``run_condition()`` makes, with the same exceptions.

The oracle is ``run_condition()`` itself, the documented way to declare a run condition: for any
declaration, building the gate directly raises the same exception class, or neither raises.
"""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import (
    InvalidCountError,
    MissingDataIntervalError,
    SelfDependencyError,
    UnknownDependencyTypeError,
    UnknownTaskError,
)
from airflow_leastaction.operators.run_condition import RunConditionGate, run_slot
from airflow_leastaction.run_conditions import depends_on, run_condition
from airflow_leastaction.run_conditions.model import Dependency

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def dag_with(*task_ids: str, dag_id: str = "rc_direct") -> DAG:
    dag = DAG(dag_id, schedule=None, start_date=START)
    for task_id in task_ids:
        EmptyOperator(task_id=task_id, dag=dag)
    return dag


def direct_gate(dag: DAG | None, dependencies, **kwargs) -> RunConditionGate:
    return RunConditionGate(task_id="t__gate", gated_task_id="t", dependencies=dependencies, dag=dag, **kwargs)


class TestAGateBuiltDirectly:
    def test_a_count_above_the_number_of_dependencies_is_refused(self):
        dag = dag_with("a", "b", "t")
        with pytest.raises(InvalidCountError, match="only 2"):
            direct_gate(dag, [Dependency("a"), Dependency("b")], condition="N", count=5)

    def test_a_self_dependency_is_refused_with_or_without_a_dag(self):
        with pytest.raises(SelfDependencyError, match="'t'"):
            direct_gate(dag_with("t"), [Dependency("t")])
        with pytest.raises(SelfDependencyError):
            direct_gate(None, [Dependency("t")])

    def test_a_dependency_on_a_task_its_dag_does_not_have_is_refused(self):
        with pytest.raises(UnknownTaskError, match="'ghost'"):
            direct_gate(dag_with("a", "t"), [Dependency("a"), Dependency("ghost")])

    def test_an_unknown_dependency_type_raises_the_documented_exception(self):
        with pytest.raises(UnknownDependencyTypeError, match="MAYBE"):
            direct_gate(dag_with("a", "t"), [{"upstream": "a", "type": "MAYBE"}])

    def test_a_run_without_any_instant_is_a_missing_data_interval_error_naming_the_task(self):
        with pytest.raises(MissingDataIntervalError, match="run 'manual__1'"):
            run_slot({"run_id": "manual__1", "dag_run": None, "ti": None})


TYPES = st.sampled_from(["SUCCESS", "failure", "ALWAYS", "has_data", "MAYBE"])
UPSTREAMS = st.sampled_from(["a", "b", "c", "t"])


@settings(max_examples=60, deadline=None)
@given(
    deps=st.lists(st.tuples(UPSTREAMS, TYPES), max_size=4, unique_by=lambda d: d[0]),
    when=st.sampled_from(["ALL", "ANY", "N", "SOME"]),
    count=st.one_of(st.none(), st.integers(-1, 6)),
)
def test_building_the_gate_directly_raises_what_run_condition_raises(deps, when, count):
    def outcome(build):
        try:
            build()
        except Exception as exc:  # the class is what is compared
            return type(exc)
        return None

    def declared():
        dag = dag_with("a", "b", "c", dag_id="rc_declared")
        run_condition(
            dag.get_task("c"),
            *(depends_on(dag.get_task(u) if u != "t" else "c", t) for u, t in deps),
            when=when,
            count=count,
        )

    def direct():
        dag = dag_with("a", "b", "c", dag_id="rc_direct")
        gate = RunConditionGate(
            task_id="c__gate",
            gated_task_id="c",
            dependencies=[{"upstream": u if u != "t" else "c", "type": t} for u, t in deps],
            condition=when,
            count=count,
            dag=dag,
        )
        return gate

    assert outcome(direct) == outcome(declared)
