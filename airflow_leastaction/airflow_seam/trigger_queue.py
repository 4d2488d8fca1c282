"""The triggerer queue a gate waits in, chosen when its DAG is parsed (``[leastaction] trigger_queues``).

Airflow (3.2 and later, with ``[triggerer] queues_enabled``) gives a trigger the ``queue`` of the task
that defers to it, and a triggerer started with ``--queues`` runs only those queues' triggers. A gate's
queue is therefore its task's ``queue``: named by its author (``queue=`` or ``trigger_queue=``), else
chosen from its parents' projects (:func:`~airflow_leastaction.gating.trigger_queues.choose_queue`; a gate
with no catalog parent: its own task, :func:`~airflow_leastaction.gating.trigger_queues.own_queue`). The queue is
fixed when the task defers: changing the setting moves no waiting gate.

Airflow starts a task in the triggerer (``start_from_trigger``) without its queue, so a gate with a queue
starts on a worker of that queue, checks once and defers there
(:func:`~airflow_leastaction.version_compat.starts_in_triggerer`). CeleryExecutor reads the same
``queue``: that worker must consume it.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.trigger_queues import check_queue, choose_queue, own_queue, parse_queues
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from airflow_leastaction.version_compat import TRIGGERER_QUEUES, say_once


def queues_enabled() -> bool:
    """Airflow's ``[triggerer] queues_enabled``: whether a deferred task's trigger carries its queue."""
    from airflow.configuration import conf

    return conf.getboolean("triggerer", "queues_enabled", fallback=False)


def trigger_queue_of(
    task, parents: Iterable[TaskIdentity], trigger_queue: str | None, given_queue: str | None, deferrable: bool
) -> str | None:
    """The triggerer queue ``task`` waits in, set as its ``queue``; None: it keeps its queue, as without
    queues (no queue configured or named, not deferrable, or this Airflow cannot route triggers).

    :param parents: what the gate waits on; none: the gate's own task hashes instead.
    :param trigger_queue: the author's ``trigger_queue=`` (wins over the hash).
    :param given_queue: the author's ``queue=`` (wins over the hash; must agree with ``trigger_queue``).
    """
    where = f"task {task.task_id!r}"
    if trigger_queue is not None:
        check_queue(trigger_queue, f"{where}: trigger_queue")
        if given_queue is not None and given_queue != trigger_queue:
            raise ConfigurationError(f"{where}: queue={given_queue!r} and trigger_queue={trigger_queue!r} differ")
    queues = parse_queues(setting("trigger_queues", ""))
    if not deferrable or (trigger_queue is None and not queues):
        return None
    if not TRIGGERER_QUEUES:
        say_once("triggerer queues need Airflow 3.2: [leastaction] trigger_queues and trigger_queue are ignored")
        return None
    if not queues_enabled():
        say_once("[triggerer] queues_enabled is off: gates keep their queue and wait in any triggerer")
        return None
    chosen = trigger_queue or given_queue
    if chosen is None:
        parents = list(parents)
        chosen = (
            choose_queue(parents, queues) if parents else own_queue(airflow_task(task.dag_id, task.task_id), queues)
        )
    task.queue = chosen
    return chosen


def say_queue(task) -> None:
    """Say in the task log which triggerer queue ``task`` is deferring to, where triggers have queues: a
    queue no triggerer serves leaves the gate waiting, and its log names the queue to serve."""
    if TRIGGERER_QUEUES and queues_enabled():
        task.log.info(
            "deferring to triggerer queue %r: a triggerer started with --queues %s runs its wait",
            task.queue,
            task.queue,
        )
