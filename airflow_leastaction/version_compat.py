"""What the installed Airflow can do, as the product asks it: the one place that reads Airflow's version.

The package supports every Airflow 3 minor from 3.1. Callers ask for a capability (``TRIGGERER_STARTS_TASKS``),
never compare versions themselves; where a minor lacks a mechanism, the product takes the path that works
there and says so once per process in the log (:func:`starts_in_triggerer`).
"""

from __future__ import annotations

import logging

from packaging.version import Version

__all__ = [
    "AIRFLOW_V_3_2_PLUS",
    "AIRFLOW_V_3_3_PLUS",
    "ASSET_EVENT_LISTENER",
    "OLDEST_SUPPORTED",
    "PARTITIONED_ASSETS",
    "PARTITION_ROLLUPS",
    "RUNTIME_PARTITIONS",
    "TASK_RETRY_POLICIES",
    "TRIGGERER_QUEUES",
    "TRIGGERER_STARTS_TASKS",
    "WALL_CLOCK_PARTITION_KEYS",
    "WATCHER_STATE_STORE",
    "AirflowFailException",
    "AirflowRescheduleException",
    "AirflowSensorTimeout",
    "AirflowSkipException",
    "airflow_version",
    "dag_bag_class",
    "deadline_callback_classes",
    "dag_serializer_class",
    "custom_secrets_backend",
    "latest_serialized_dags",
    "say_once",
    "starts_in_triggerer",
    "aconnection_from_supervisor",
    "ask_supervisor_task_states",
    "chain_pre_execute",
    "connection_from_supervisor",
    "in_process_supervisor",
    "is_execution_api_backend",
    "loaded_secrets_backends",
    "serialized_partition_mapper",
    "skip_downstream_tasks",
    "structlog_logger_factory",
    "supervisor_comms",
    "supervisor_task_states",
    "supervisor_ti_count",
]

log = logging.getLogger(__name__)


def airflow_version() -> tuple[int, int, int]:
    """The installed Airflow's release as (major, minor, micro); pre-releases count as their release."""
    from airflow import __version__

    release = Version(__version__)
    return release.major, release.minor, release.micro


#: The oldest Airflow minor the package supports (``pyproject.toml`` declares the same).
OLDEST_SUPPORTED = (3, 1)

AIRFLOW_V_3_2_PLUS: bool = airflow_version() >= (3, 2, 0)
AIRFLOW_V_3_3_PLUS: bool = airflow_version() >= (3, 3, 0)

# The task control-flow exceptions moved into the Task SDK in 3.2 (Airflow core's names are deprecated
# aliases there); 3.1's task runner raises and catches Airflow core's classes.
if AIRFLOW_V_3_2_PLUS:
    from airflow.sdk.exceptions import (
        AirflowFailException,
        AirflowRescheduleException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )
else:
    from airflow.exceptions import (  # type: ignore[no-redef]
        AirflowFailException,
        AirflowRescheduleException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )

#: The scheduler honours ``start_from_trigger``: a task can start (and end) in the triggerer without a
#: worker. Airflow 3.0 to 3.2 carry the operator attributes but their scheduler never reads them (the
#: task runs on a worker), so there a gate starts on a worker and defers.
TRIGGERER_STARTS_TASKS: bool = AIRFLOW_V_3_3_PLUS

#: Triggerer queues: with ``[triggerer] queues_enabled`` a task deferred from a worker gives its trigger
#: the task's ``queue``, and ``airflow triggerer --queues`` runs only those queues' triggers (3.2). A task
#: the scheduler starts in the triggerer gets no queue on any release so far.
TRIGGERER_QUEUES: bool = AIRFLOW_V_3_2_PLUS

#: A task can carry a retry policy (``retry_policy=ExceptionRetryPolicy(...)``) that decides, per raised
#: exception, whether Airflow retries it: Airflow 3.3. The catalog listener records whatever Airflow
#: decided; the flag says which DAGs may use it.
TASK_RETRY_POLICIES: bool = AIRFLOW_V_3_3_PLUS

#: Asset events carry partition keys; partition-aware DAGs (``PartitionedAssetTimetable``,
#: ``CronPartitionTimetable``) and the temporal partition mappers (``StartOfDayMapper``, ...) exist.
PARTITIONED_ASSETS: bool = AIRFLOW_V_3_2_PLUS

#: ``CronPartitionTimetable`` writes a run's key as its wall-clock time in the timetable's timezone, as
#: the catalog writes a slot's key; 3.2 writes the run's UTC time whatever the timezone.
WALL_CLOCK_PARTITION_KEYS: bool = AIRFLOW_V_3_3_PLUS

#: Partition roll-ups: ``RollupMapper`` with its windows (``DayWindow``, ...), a downstream partition
#: made of every upstream partition in its window.
PARTITION_ROLLUPS: bool = AIRFLOW_V_3_3_PLUS

#: A task names its run's partitions when it runs: ``PartitionedAtRuntime`` and
#: ``outlet_events[asset].add_partitions(...)``.
RUNTIME_PARTITIONS: bool = AIRFLOW_V_3_3_PLUS

#: Airflow calls ``on_asset_event_emitted`` with the event (its extra and partition key).
ASSET_EVENT_LISTENER: bool = AIRFLOW_V_3_2_PLUS

#: A watcher in the triggerer reads its asset's state store, which the listener writes in the event's
#: transaction.
WATCHER_STATE_STORE: bool = AIRFLOW_V_3_3_PLUS


def dag_bag_class() -> type:
    """Airflow's ``DagBag`` (parses a DAGs folder or file): ``airflow.models.dagbag`` on 3.1,
    ``airflow.dag_processing.dagbag`` from 3.2. Imported when asked: it pulls in Airflow's models."""
    if AIRFLOW_V_3_2_PLUS:
        from airflow.dag_processing.dagbag import DagBag
    else:
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]
    return DagBag


def deadline_callback_classes() -> tuple[type, type]:
    """Airflow's deadline callbacks, ``(AsyncCallback, SyncCallback)``: exported by ``airflow.sdk`` from 3.2,
    defined in ``airflow.sdk.definitions.deadline`` on 3.1 (whose ``DeadlineAlert`` takes only the first).
    Imported when asked."""
    if AIRFLOW_V_3_2_PLUS:
        from airflow.sdk import AsyncCallback, SyncCallback
    else:
        from airflow.sdk.definitions.deadline import AsyncCallback, SyncCallback  # type: ignore[no-redef]
    return AsyncCallback, SyncCallback


def dag_serializer_class() -> type:
    """The class that turns a DAG into the JSON the DAG processor stores (``to_dict``) and back:
    ``DagSerialization`` from 3.2, ``SerializedDAG`` on 3.1. Imported when asked."""
    if AIRFLOW_V_3_2_PLUS:
        from airflow.serialization.serialized_objects import DagSerialization
    else:
        from airflow.serialization.serialized_objects import SerializedDAG as DagSerialization
    return DagSerialization


def custom_secrets_backend(worker_mode: bool):
    """The ``[secrets] backend`` (``worker_mode``: ``[workers] secrets_backend``) class, built, or None:
    ``airflow.sdk.configuration`` from 3.2, ``airflow.configuration`` on 3.1. Imported when asked."""
    if AIRFLOW_V_3_2_PLUS:
        from airflow.sdk.configuration import get_custom_secret_backend
    else:
        from airflow.configuration import get_custom_secret_backend  # type: ignore[no-redef]
    return get_custom_secret_backend(worker_mode)


def latest_serialized_dags(dag_ids: list[str]):
    """A select of each DAG's latest serialized version (``SerializedDagModel`` rows), by version number.

    Airflow 3.3's own choice (``_latest_by_version_select``); 3.1 and 3.2 have none to reuse (their
    ``get_latest_serialized_dags`` runs the query and compares ``created_at``, which two versions can
    share), so there the same query is built here."""
    from airflow.models.serialized_dag import SerializedDagModel as SDM

    if AIRFLOW_V_3_3_PLUS:
        return SDM._latest_by_version_select(dag_ids)
    from airflow.models.dag_version import DagVersion
    from sqlalchemy import func, select

    newest = (
        select(DagVersion.dag_id, func.max(DagVersion.version_number).label("version_number"))
        .join(SDM, SDM.dag_version_id == DagVersion.id)
        .where(DagVersion.dag_id.in_(dag_ids))
        .group_by(DagVersion.dag_id)
        .subquery()
    )
    return (
        select(SDM)
        .join(DagVersion, SDM.dag_version_id == DagVersion.id)
        .join(
            newest,
            (DagVersion.dag_id == newest.c.dag_id) & (DagVersion.version_number == newest.c.version_number),
        )
    )


_said: set[str] = set()


def _say_once(topic: str, message: str, *args, level: int = logging.INFO) -> None:
    if topic not in _said:
        _said.add(topic)
        log.log(level, message, *args)


def say_once(what: str) -> None:
    """Log, once per process, that a mechanism this Airflow lacks is degraded, and how."""
    _say_once(what, "Airflow %s: %s", ".".join(map(str, airflow_version())), what, level=logging.WARNING)


def starts_in_triggerer(requested: bool, queue: str | None = None) -> bool:
    """Whether a task asked to start in the triggerer (``start_from_trigger``) does so on this Airflow.

    Where the scheduler cannot start a task in the triggerer the task starts on a worker and defers to
    the same trigger: the wait still takes no worker slot, only the first check and the decision do. So
    does a task that waits in a triggerer ``queue``: the scheduler starts a trigger without its task's queue.
    """
    if requested and queue is not None:
        _say_once(
            "trigger_queue",
            "Airflow starts a task in the triggerer without its queue: leastaction's gates with a triggerer "
            "queue start on a worker of that queue, check once and defer to the triggerer serving it",
        )
        return False
    if requested and not TRIGGERER_STARTS_TASKS:
        _say_once(
            "start_from_trigger",
            "Airflow %s cannot start a task in the triggerer (start_from_trigger needs Airflow 3.3): "
            "leastaction's gates start on a worker, check once and defer to the triggerer to wait",
            ".".join(map(str, airflow_version())),
        )
        return False
    return requested


# -- Airflow's internals ------------------------------------------------------------------------------------
# What the provider reaches below Airflow's public interfaces: the task runner's channel to its supervisor,
# its task instance's class methods, the serialization encoders, structlog's logger factory, the private
# attributes it sets or reads. Each has one function here, so a change in a minor is mended in one place.


def supervisor_comms():
    """The task runner's channel to its supervisor (``SUPERVISOR_COMMS``), or None outside a task and a
    triggerer."""
    from airflow.sdk.execution_time import task_runner

    return getattr(task_runner, "SUPERVISOR_COMMS", None)


def in_process_supervisor() -> bool:
    """Whether this process's supervisor is ``dag.test()``'s own, which runs a trigger inline."""
    return type(supervisor_comms()).__name__ == "InProcessSupervisorComms"


def _send(message):
    comms = supervisor_comms()
    if comms is None:
        raise RuntimeError("no supervisor to ask (not in a task or a triggerer)")
    return comms.send(message)


def skip_downstream_tasks(task_ids: list[str]) -> None:
    """Ask the supervisor to skip ``task_ids`` of the running task's run."""
    from airflow.sdk.execution_time.comms import SkipDownstreamTasks

    _send(SkipDownstreamTasks(tasks=task_ids))


def supervisor_task_states(**where) -> dict[str, dict]:
    """The task states the supervisor tells (``RuntimeTaskInstance.get_task_states``): by run id, by task."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    return RuntimeTaskInstance.get_task_states(**where)


def supervisor_ti_count(**where) -> int:
    """How many task instances match ``where`` (``RuntimeTaskInstance.get_ti_count``)."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    return RuntimeTaskInstance.get_ti_count(**where)


async def ask_supervisor_task_states(dag_id: str, run_ids: list[str]) -> dict[str, dict]:
    """The states of every task of ``run_ids``, by run: one ``GetTaskStates`` message, sent with the comms'
    own ``asend`` (a comms without one: in a thread). Raises RuntimeError unless Airflow answers with them."""
    from airflow.sdk.execution_time.comms import GetTaskStates, TaskStatesResult
    from asgiref.sync import sync_to_async

    comms = supervisor_comms()
    if comms is None:
        raise RuntimeError("no supervisor to ask (not in a task or a triggerer)")
    question = GetTaskStates(dag_id=dag_id, run_ids=list(run_ids))
    asend = getattr(comms, "asend", None)
    answer = await asend(question) if asend is not None else await sync_to_async(comms.send)(question)
    if not isinstance(answer, TaskStatesResult):
        raise RuntimeError(f"Airflow answered {type(answer).__name__}, not the task states")
    return answer.task_states


def loaded_secrets_backends() -> list:
    """The secrets backends Airflow asks in this process, in its order, the configured custom backends
    (``[secrets] backend``, ``[workers] secrets_backend``) it may not ask here appended, each building the
    Task SDK's connections."""
    from airflow.sdk.definitions.connection import Connection
    from airflow.sdk.execution_time.supervisor import ensure_secrets_backend_loaded

    backends = list(ensure_secrets_backend_loaded())
    kinds = {type(b) for b in backends}
    for worker_mode in (False, True):
        custom = custom_secrets_backend(worker_mode)
        if custom is not None and type(custom) not in kinds:
            custom._set_connection_class(Connection)
            backends.append(custom)
            kinds.add(type(custom))
    return backends


def is_execution_api_backend(backend) -> bool:
    """Whether ``backend`` is the worker's Execution API backend (it asks the supervisor)."""
    return type(backend).__name__ == "ExecutionAPISecretsBackend"


def connection_from_supervisor(conn_id: str):
    """``conn_id`` as the supervisor tells it, or None when it is not defined (:func:`_connection_answer`)."""
    from airflow.sdk.execution_time.comms import GetConnection

    return _connection_answer(_send(GetConnection(conn_id=conn_id)))


async def aconnection_from_supervisor(conn_id: str):
    """:func:`connection_from_supervisor` from an event loop."""
    from airflow.sdk.execution_time.comms import GetConnection

    comms = supervisor_comms()
    if comms is None:
        raise RuntimeError("no supervisor to ask (not in a task or a triggerer)")
    return _connection_answer(await comms.asend(GetConnection(conn_id=conn_id)))


def _connection_answer(msg):
    """The Execution API's answer: a 404 is an absence, any other error a failed look-up."""
    from airflow.sdk.exceptions import ErrorType
    from airflow.sdk.execution_time.comms import ErrorResponse
    from airflow.sdk.execution_time.context import _process_connection_result_conn

    if isinstance(msg, ErrorResponse):
        if msg.error == ErrorType.CONNECTION_NOT_FOUND:
            return None
        raise RuntimeError(f"the execution API answered {msg.error.value} ({msg.detail})")
    return _process_connection_result_conn(msg) if msg is not None else None


def serialized_partition_mapper(mapper):
    """``mapper`` after the round trip through Airflow's serialization the scheduler reads it from."""
    from airflow.serialization.decoders import decode_partition_mapper
    from airflow.serialization.encoders import encode_partition_mapper

    return decode_partition_mapper(encode_partition_mapper(mapper))


def structlog_logger_factory():
    """The logger factory of Airflow's structured loggers (structlog's configured ``logger_factory``), once
    Airflow set its logging up (importing its settings does), or None."""
    try:
        import airflow.configuration
        import airflow.settings  # noqa: F401
        import structlog
    except ImportError:  # pragma: no cover - Airflow is a hard dependency
        return None
    return structlog.get_config().get("logger_factory")


def chain_pre_execute(operator, make_hook) -> None:
    """Run ``make_hook(previous)`` as ``operator``'s pre-execute hook, where ``previous`` is the hook it had
    (Airflow's private ``_pre_execute_hook``, which its task runner calls before ``execute``)."""
    operator._pre_execute_hook = make_hook(operator._pre_execute_hook)
