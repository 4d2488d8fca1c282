"""A task instance of a finished ``dag.test()`` run cleared and run again in the same run, as a person
clearing it in the UI and the scheduler running it would: Airflow archives the try, gives the task
instance a new id and the next try number, and the task runs through the same in-process execution API
as ``dag.test()`` (its outlets, asset events and listeners included)."""

from __future__ import annotations

from sqlalchemy import select


def clear_and_rerun(dag, run_id: str, task_id: str):
    """Clear ``task_id`` of run ``run_id`` and run its next try; returns the task instance afterwards."""
    from airflow import settings
    from airflow.models.taskinstance import TaskInstance, clear_task_instances
    from airflow.sdk.definitions.dag import _run_task
    from airflow.utils.state import TaskInstanceState

    which = select(TaskInstance).where(
        TaskInstance.dag_id == dag.dag_id, TaskInstance.run_id == run_id, TaskInstance.task_id == task_id
    )
    session = settings.Session()
    ti = session.scalar(which)
    clear_task_instances([ti], session)
    ti.try_number += 1  # what the scheduler does when it schedules the cleared task
    ti.state = TaskInstanceState.SCHEDULED
    session.commit()
    _run_task(ti=ti, task=dag.task_dict[task_id])
    session.expire_all()
    return session.scalar(which)
