"""Where a gate waits, chosen when its DAG is parsed: ``[leastaction] trigger_queues``, ``trigger_queue=``,
``queue=``; nothing changes without triggerer queues (Airflow 3.1, or ``[triggerer] queues_enabled`` off)."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_leastaction import version_compat
from airflow_leastaction.airflow_seam import trigger_queue
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.trigger_queues import choose_queue, own_queue
from airflow_leastaction.refs import airflow_task, external_task
from airflow_leastaction.run_conditions import run_condition
from airflow_leastaction.sensors import ParentIntervalSensor

QUEUES = ["eu", "us", "apac"]
PARENTS = [external_task(f"raw_{i}", "sales") for i in range(5)]


@pytest.fixture
def queues(monkeypatch):
    """Turn triggerer queues on with ``listed`` as ``[leastaction] trigger_queues``."""

    def turn_on(listed: str = ",".join(QUEUES), enabled: bool = True):
        monkeypatch.setenv("AIRFLOW__LEASTACTION__TRIGGER_QUEUES", listed)
        monkeypatch.setenv("AIRFLOW__TRIGGERER__QUEUES_ENABLED", str(enabled))
        monkeypatch.setattr(trigger_queue, "TRIGGERER_QUEUES", True)

    return turn_on


def sensor(**kwargs):
    with DAG("child", schedule="@daily", start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC)):
        return ParentIntervalSensor(task_id="wait", parents=PARENTS, **kwargs)


def gate(**kwargs):
    with DAG("gated", schedule="@daily", start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC)) as dag:
        prep, load = EmptyOperator(task_id="prep"), EmptyOperator(task_id="load")
        run_condition(load, prep, *PARENTS[:2], **kwargs)
    return dag.get_task("load__gate")


class TestChosenAtParse:
    def test_without_trigger_queues_a_gate_keeps_its_queue_and_starts_in_the_triggerer(self, queues):
        queues("")
        task = sensor()
        assert task.queue == EmptyOperator(task_id="x").queue
        assert task.start_from_trigger is version_compat.TRIGGERER_STARTS_TASKS

    def test_a_sensor_goes_where_most_of_its_parents_hash_and_starts_on_a_worker_there(self, queues):
        queues()
        task = sensor()
        assert task.queue == choose_queue(PARENTS, QUEUES)
        assert task.start_from_trigger is False  # Airflow starts a trigger without its task's queue

    def test_a_run_condition_gate_hashes_its_dependencies_elsewhere_and_its_upstreams_of_the_run(self, queues):
        queues()
        task = gate()
        watched = [*PARENTS[:2], airflow_task("gated", "prep")]
        assert task.queue == choose_queue(watched, QUEUES)
        assert task.start_from_trigger is False

    def test_a_gate_without_catalog_parents_hashes_its_own_task_so_a_dags_gates_spread(self, queues):
        queues()
        with DAG("lone", schedule="@daily", start_date=dt.datetime(2026, 11, 1, tzinfo=dt.UTC)):
            tasks = [EmptyOperator(task_id=f"t{i}") for i in range(30)]
        chosen = [trigger_queue.trigger_queue_of(t, [], None, None, deferrable=True) for t in tasks]
        assert chosen == [own_queue(airflow_task("lone", t.task_id), QUEUES) for t in tasks]
        assert [t.queue for t in tasks] == chosen
        assert set(chosen) == set(QUEUES)  # one project, yet not one queue

    def test_trigger_queue_names_the_queue_and_wins_over_the_hash(self, queues):
        queues()
        assert sensor(trigger_queue="team_b").queue == "team_b"
        assert gate(trigger_queue="team_b").queue == "team_b"

    def test_the_authors_queue_wins_over_the_hash(self, queues):
        queues()
        assert sensor(queue="finance").queue == "finance"

    def test_queue_and_trigger_queue_that_differ_are_an_error_naming_the_task(self, queues):
        queues()
        with pytest.raises(ConfigurationError, match=r"task 'wait': queue='a' and trigger_queue='b' differ"):
            sensor(queue="a", trigger_queue="b")

    def test_a_bad_trigger_queue_is_an_error_naming_the_argument(self, queues):
        queues()
        with pytest.raises(ConfigurationError, match=r"task 'wait': trigger_queue: 'no spaces' is not a queue"):
            sensor(trigger_queue="no spaces")

    def test_a_bad_trigger_queues_entry_fails_the_dag_at_parse_naming_the_setting(self, queues):
        queues("eu,,us")
        with pytest.raises(ConfigurationError, match=r"\[leastaction\] trigger_queues: '' is not a queue name"):
            sensor()

    def test_a_sensor_that_does_not_defer_has_no_trigger_to_route(self, queues):
        queues()
        assert sensor(deferrable=False).queue == EmptyOperator(task_id="x").queue


class TestWithoutTriggererQueues:
    def test_with_queues_enabled_off_nothing_changes_and_the_log_says_so_once(self, queues, caplog, monkeypatch):
        queues(enabled=False)
        monkeypatch.setattr(version_compat, "_said", set())
        with caplog.at_level(logging.WARNING, logger=version_compat.__name__):
            first, second = sensor(), sensor()
        assert first.queue == second.queue == EmptyOperator(task_id="x").queue
        said = [r.getMessage() for r in caplog.records if "queues_enabled" in r.getMessage()]
        assert len(said) == 1

    def test_on_an_airflow_without_triggerer_queues_nothing_changes_and_the_log_says_so_once(
        self, queues, caplog, monkeypatch
    ):
        queues()
        monkeypatch.setattr(trigger_queue, "TRIGGERER_QUEUES", False)
        monkeypatch.setattr(version_compat, "_said", set())
        with caplog.at_level(logging.WARNING, logger=version_compat.__name__):
            first, second = sensor(trigger_queue="team_b"), sensor()
        assert first.queue == second.queue == EmptyOperator(task_id="x").queue
        assert first.start_from_trigger is version_compat.TRIGGERER_STARTS_TASKS
        said = [r.getMessage() for r in caplog.records if "need Airflow 3.2" in r.getMessage()]
        assert len(said) == 1
