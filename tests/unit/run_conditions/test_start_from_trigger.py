"""What a gate hands Airflow to start it in the triggerer, through the DAG's serialization: the scheduler
defers the deserialized task to its trigger, and the triggerer inflates the trigger from the stored kwargs."""

from __future__ import annotations

import pendulum
import pytest
from airflow.models.trigger import Trigger
from airflow.sdk import DAG, task

from airflow_leastaction.airflow_seam.run_tasks import run_structure
from airflow_leastaction.exceptions import RunConditionError
from airflow_leastaction.refs import airflow_dag
from airflow_leastaction.run_conditions import dag_run_condition, failure, run_condition, success
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from airflow_leastaction.version_compat import TRIGGERER_STARTS_TASKS

pytestmark = pytest.mark.skipif(
    not TRIGGERER_STARTS_TASKS, reason="Airflow before 3.3 never starts a task in the triggerer (start_from_trigger)"
)


@pytest.fixture(scope="module")
def dag():
    with DAG("sft_gates", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")) as dag:

        @task
        def up():
            return 1

        @task
        def child():
            return 2

        @task
        def on_worker():
            return 3

        @task
        def inactive():
            return 4

        loaded = up()
        run_condition(child(), success(loaded))
        run_condition(on_worker(), failure(loaded), start_from_trigger=False)
        run_condition(inactive(), success(loaded), active=False)
        dag_run_condition(dag, success(airflow_dag("sft_elsewhere")))
    return dag


@pytest.fixture(scope="module")
def deserialized(dag):
    from airflow.serialization.serialized_objects import DagSerialization  # 3.2's and later: skipped before 3.3

    return DagSerialization.from_dict(DagSerialization.to_dict(dag))


def stored_trigger(args) -> RunConditionTrigger:
    """The trigger as the triggerer builds it: from the kwargs of the trigger row the scheduler wrote."""
    from airflow.serialization.decoders import smart_decode_trigger_kwargs  # 3.2's and later

    row = Trigger(classpath=args.trigger_cls, kwargs=args.trigger_kwargs)
    kwargs = {k: smart_decode_trigger_kwargs(v) for k, v in Trigger._decrypt_kwargs(row.encrypted_kwargs).items()}
    return RunConditionTrigger(**kwargs)


def test_a_gate_starts_in_the_triggerer_by_default_and_resumes_a_worker_at_execute_complete(dag, deserialized):
    gate = deserialized.get_task("child__gate")
    assert gate.start_from_trigger is True
    args = gate.start_trigger_args
    assert (args.trigger_cls, args.next_method) == (
        "airflow_leastaction.triggers.run_condition.RunConditionTrigger",
        "execute_complete",
    )
    trigger = stored_trigger(args)
    assert trigger.serialize() == (args.trigger_cls, dag.get_task("child__gate").start_trigger_args.trigger_kwargs)
    assert (trigger.end_from_trigger, trigger.run_id, trigger.slot, trigger.upstream) == (True, None, None, None)
    assert trigger.run_gate == "leastaction_dag_gate"


def test_an_inactive_gate_starts_in_the_triggerer_and_its_trigger_knows_it_is_inactive(deserialized):
    trigger = stored_trigger(deserialized.get_task("inactive__gate").start_trigger_args)
    assert (trigger.active, trigger.end_from_trigger) == (False, True)


def test_start_from_trigger_false_keeps_the_worker_path(deserialized):
    gate = deserialized.get_task("on_worker__gate")
    assert (gate.start_from_trigger, gate.start_trigger_args) == (False, None)


def test_deferrable_false_implies_the_worker_path(dag):
    from airflow_leastaction.operators.run_condition import RunConditionGate

    gate = RunConditionGate(
        task_id="sft_plain__gate", gated_task_id="sft_plain", dependencies=[], deferrable=False, dag=DAG("sft_other")
    )
    assert (gate.start_from_trigger, gate.start_trigger_args) == (False, None)


def test_the_run_gate_of_a_dag_starts_on_a_worker(deserialized):
    gate = deserialized.get_task("leastaction_dag_gate")
    assert (gate.start_from_trigger, gate.start_trigger_args) == (False, None)


def test_the_run_structure_of_the_deserialized_dag_is_the_written_one(dag, deserialized):
    upstream, waiting = run_structure(deserialized)
    assert (upstream, waiting) == run_structure(dag)
    assert waiting == [
        "child__gate",
        "inactive__gate",
        "leastaction_dag_gate",
        "leastaction_run_outcome",
        "on_worker__gate",
    ]


def test_the_run_gate_of_a_dag_rejects_start_from_trigger_naming_the_dag():
    with DAG("sft_run_gate", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")) as dag:
        task(lambda: 1, task_id="only")()
        with pytest.raises(RunConditionError, match="'sft_run_gate'.*start_from_trigger=True is not supported"):
            dag_run_condition(dag, success(airflow_dag("sft_elsewhere")), start_from_trigger=True)
