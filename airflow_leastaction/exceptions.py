"""Exceptions. One base class per family; messages name the DAG, task, parent or model at fault."""

from __future__ import annotations


class LeastActionError(Exception):
    """Base class of every error this provider raises."""


class ConfigurationError(LeastActionError, ValueError):
    """A DAG author's or operator's input is wrong; raised at DAG parse time where possible."""


class InvalidCronError(ConfigurationError):
    """A cron expression the interval check cannot read (not five fields, hashed or random fields, no slot)."""

    def __init__(self, cron: object, why: str):
        self.cron = cron
        super().__init__(f"invalid cron expression {cron!r}: {why}")


class InvalidTimezoneError(ConfigurationError):
    """A time zone that is not an IANA name."""

    def __init__(self, timezone: object):
        self.timezone = timezone
        super().__init__(f"unknown timezone {timezone!r}: use an IANA name such as 'UTC' or 'Europe/Paris'")


class DuplicateParentError(ConfigurationError):
    """A sensor names the same parent twice."""

    def __init__(self, task_id: str, parent: str):
        super().__init__(f"task {task_id!r} names parent {parent} more than once")


class InvalidCoverageError(ConfigurationError):
    """A parent's ``coverage`` other than ``slot`` or ``interval``."""

    def __init__(self, owner: str, value: object):
        self.value = value
        super().__init__(
            f"{owner}: coverage={value!r}; expected 'slot' (the parent slot covering the child's "
            "interval, the default) or 'interval' (every parent slot inside the child's interval)"
        )


class MissingDataIntervalError(ConfigurationError):
    """A run gives a sensor or a gate no instant to judge (no data interval, logical date or ``run_after``)."""

    def __init__(self, dag_id: str, task_id: str, run_id: str, remedy: str | None = None):
        self.dag_id, self.task_id, self.run_id = dag_id, task_id, run_id
        remedy = remedy or "pass child_interval= or schedule the DAG with a timetable that has data intervals"
        super().__init__(f"task {task_id!r} of DAG {dag_id!r} (run {run_id!r}) has no data interval: {remedy}")


class AssetBridgeError(ConfigurationError):
    """A catalog task published as an asset in a way that cannot work; found at DAG parse time. Each
    message names both sides: the catalog task and the asset, or the asset and the DAG's mapper."""


class BridgeConflictError(AssetBridgeError):
    """One catalog task bridged to two assets (or twice to one asset, differently)."""

    def __init__(self, task: str, first: str, second: str):
        self.task = task
        super().__init__(f"catalog task {task} is already published as {first}; it cannot also be {second}")


class AssetNameCollisionError(AssetBridgeError):
    """An asset name (or URI) that another catalog task's bridge or another asset already uses."""

    def __init__(self, what: str, value: str, first: str, second: str, dag_id: str | None = None):
        self.value = value
        self.dag_id = dag_id
        where = f"DAG {dag_id!r}: " if dag_id is not None else ""
        super().__init__(f"{where}asset {what} {value!r} names two things: {first}, and {second}")


class UnreadablePartitionKeyError(AssetBridgeError):
    """A partition-aware DAG's mapper cannot read the partition keys a catalog asset's events carry."""

    def __init__(self, asset: str, task: str, key: str, key_format: str, mapper: str, why: str):
        self.asset = asset
        super().__init__(
            f"{mapper} cannot read the partition keys of asset {asset!r} (catalog task {task} writes keys like "
            f"{key!r}, key_format {key_format!r}): {why}; give the mapper input_format={key_format!r}, or give "
            "catalog_asset() the key_format the mapper reads"
        )


class CatalogError(LeastActionError):
    """The catalog database cannot be reached or configured."""


class UnknownConnectionError(CatalogError, ConfigurationError):
    """The catalog connection a component asks for is not defined (and no fallback applies)."""

    def __init__(self, conn_id: str, detail: str = "", configured: str | None = None):
        self.conn_id = conn_id
        extra = f": {detail}" if detail else ""
        setting = f" ([leastaction] catalog_conn_id = {configured!r})" if configured else ""
        super().__init__(
            f"catalog connection {conn_id!r} is not defined{extra}{setting}; create it (type "
            "'leastaction_catalog'), or set [leastaction] catalog_conn_id to the catalog every component "
            "uses; only a deployment that names no catalog connection uses [leastaction] catalog_url or the "
            "embedded SQLite catalog"
        )


class ConnectionLookupError(CatalogError):
    """A connection could not be read: a secrets backend failed (raised, timed out) while it was looked up.
    Never taken for an undefined connection: waiting, or fixing the backend, cures it."""

    def __init__(self, conn_id: str, detail: str):
        self.conn_id = conn_id
        super().__init__(
            f"cannot read connection {conn_id!r}: {detail} (a look-up that fails is not taken for a "
            "connection that is not defined)"
        )


class InvalidRetentionCutoffError(ConfigurationError):
    """``db prune`` was given a cutoff it cannot use (no UTC offset, in the future) or a bad batch size."""

    exit_status = 2

    def __init__(self, cutoff: object, why: str):
        self.cutoff = cutoff
        shown = cutoff.isoformat() if hasattr(cutoff, "isoformat") else repr(cutoff)
        super().__init__(f"cannot prune before {shown}: {why}")


class InvalidArgumentError(ConfigurationError):
    """A command-line value that is well formed but cannot be used with the others; nothing was done."""

    exit_status = 2

    def __init__(self, option: str, value: object, why: str):
        self.option = option
        self.value = value
        super().__init__(f"argument {option}: {value!r} {why}")


class InvalidReportError(ConfigurationError):
    """An external report the catalog cannot take (nothing is written): a slot without an offset, a
    negative row count, a name longer than the catalog holds."""

    exit_status = 2

    def __init__(self, task: object, why: str):
        self.task = task
        super().__init__(f"cannot report {task}: {why}")


class TaskOwnedByDagError(InvalidReportError):
    """A report names a task of an Airflow DAG: only that DAG's listener records its outcomes."""

    def __init__(self, task: object, dag_id: str):
        self.dag_id = dag_id
        super().__init__(
            task,
            f"it is a task of DAG {dag_id!r}, whose outcomes only Airflow records; report under your own "
            "system's project",
        )


class UnappliableOutcomeError(LeastActionError):
    """A task outcome the catalog can never store (it is quarantined, not spooled or retried)."""

    def __init__(self, outcome: str, why: str):
        self.outcome = outcome
        super().__init__(f"{outcome}: {why}")


class ParentFailedError(LeastActionError):
    """A parent's covering slot failed and the sensor was told to fail rather than wait."""


class DbtQueueError(LeastActionError):
    """The dbt model queue could not plan, enqueue or build."""


class DbtPlanningError(DbtQueueError, ConfigurationError):
    """dbt cannot resolve a selector (empty, or matching no enabled node)."""

    def __init__(self, selector: str, why: str):
        self.selector = selector
        super().__init__(f"dbt selector {selector!r} cannot be planned: {why}")


class DbtRequestError(DbtQueueError, ConfigurationError):
    """A request asks dbt for something it would refuse (``--full-refresh`` with ``test``, ``--vars`` that are
    not an object...): refused before anything is recorded."""

    exit_status = 2


class DbtCheckError(DbtQueueError):
    """``dbt check`` found sources the catalog cannot follow: each is listed, this sums them up."""

    exit_status = 3


class DbtInvocationError(DbtQueueError):
    """A dbt subprocess failed; carries dbt's exit code and output."""

    def __init__(self, command: list[str], exit_code: int, output: str):
        self.command = command
        self.exit_code = exit_code
        self.output = output
        tail = "\n".join(output.strip().splitlines()[-15:])
        super().__init__(f"`{' '.join(command)}` exited {exit_code}:\n{tail}")


class DbtProjectError(DbtQueueError, ConfigurationError):
    """A dbt project that cannot be used: no ``dbt`` executable, no ``dbt_project.yml``, no profile."""

    def __init__(self, path: object, why: str):
        self.path = path
        super().__init__(f"dbt project {str(path)!r}: {why}")


class DbtLeaseLostError(DbtQueueError):
    """A drain no longer owns its environment: another worker took the lease (or it could not be renewed)."""

    def __init__(self, environment: str, owner: str):
        self.environment = environment
        self.owner = owner
        super().__init__(f"dbt queue {environment!r}: worker {owner!r} no longer holds the environment's lease")


class DbtBuildFailedError(DbtQueueError):
    """A drained batch left models failed; the queue has recorded each one's outcome."""

    def __init__(self, environment: str, failed: list[str]):
        self.environment = environment
        self.failed = failed
        super().__init__(
            f"dbt queue {environment!r}: {len(failed)} model(s) failed: {', '.join(failed)} "
            "(see `airflow-leastaction queue history`)"
        )


class RunConditionError(ConfigurationError):
    """A run condition or its dependencies are invalid; found at DAG parse time.

    Each subclass has its own ``exit_status``, the exit status of ``airflow-leastaction graph``.
    """

    exit_status = 10

    def __init__(self, dag_id: str | None, task_id: str | None, why: str):
        self.dag_id = dag_id
        self.task_id = task_id
        where = f"DAG {dag_id!r} task {task_id!r}" if dag_id else f"task {task_id!r}" if task_id else "run condition"
        super().__init__(f"{where}: {why}")


class SelfDependencyError(RunConditionError):
    """A task depends on itself."""

    exit_status = 11


class UnknownTaskError(RunConditionError):
    """A dependency names a task the DAG does not have."""

    exit_status = 12


class DependencyCycleError(RunConditionError):
    """The run conditions of a DAG form a cycle."""

    exit_status = 13


class InvalidCountError(RunConditionError):
    """A count below 1, or above the number of dependencies (the task could never start)."""

    exit_status = 14


class CountWithoutNError(RunConditionError):
    """A count given with a run condition other than ``N``."""

    exit_status = 15


class UnknownDependencyTypeError(RunConditionError):
    """A dependency type other than SUCCESS, FAILURE, ALWAYS or HAS_DATA."""

    exit_status = 16


class InactiveDependencyError(RunConditionError):
    """An active task depends on an inactive one of the same DAG: it could never run."""

    exit_status = 17


class InvalidFallbackError(RunConditionError):
    """A fallback that could never apply: ``require`` of 0 or above the number of dependencies, a deadline
    after the gate's ``max_wait`` or the sensor's ``timeout``, a FAILURE or ALWAYS dependency."""

    exit_status = 18


class InvalidDeadlineError(RunConditionError):
    """A gate's ``deadline=`` that could never warn in time: neither an offset of zero or more nor a local
    time of day, after the gate's ``max_wait`` or the sensor's ``timeout``, or a ``deadline_callback``
    that is not one of Airflow's deadline callbacks."""

    exit_status = 19


class AirflowApiError(LeastActionError):
    """Airflow's REST API answered a call of the provider with an error (or cannot be called at all)."""


class AirflowApiUnreachableError(AirflowApiError):
    """Airflow's API server cannot be reached, or refused the login: nothing was asked of it."""

    def __init__(self, base_url: str, why: str):
        self.base_url = base_url
        super().__init__(f"Airflow's API at {base_url} cannot be reached: {why}")


class RunStatesUnreadableError(LeastActionError):
    """Airflow could not tell a run's task states to a waiting gate (its API or database away): the gate
    keeps waiting, as for a catalog outage."""


class RowsUnreadableError(LeastActionError):
    """A task's rows written could not be read from its XCom (Airflow's API or the supervisor away): its
    success is recorded with the rows unknown for this reason, which HAS_DATA never reads as "no rows"."""

    def __init__(self, task: str, why: str):
        self.task = task
        self.why = why
        super().__init__(f"the rows written by {task} could not be read: {why}")


class RowsUnreadableWaitError(LeastActionError):
    """A gate's wait (``max_wait``) ran out while a HAS_DATA dependency waited on a success whose rows
    written could not be read: the gate fails, loudly, rather than skip its task because of an error."""

    def __init__(self, task_id: str, reasons: list[str]):
        self.task_id = task_id
        self.reasons = reasons
        super().__init__(
            f"task {task_id!r} waited its max_wait for rows written that could not be read; it fails rather "
            "than skip on an error (a re-run of the upstream records a new success with its rows): "
            + "; ".join(reasons)
        )


class PlanError(ConfigurationError):
    """A re-run plan was asked for something it cannot plan (``airflow-leastaction plan``: exit 2)."""

    exit_status = 2


class PlanApplyError(LeastActionError):
    """A re-run plan cannot be carried out in order, or stopped part way (``airflow-leastaction plan``:
    exit 1): tasks that consume from each other both ways, a wave whose backfill finished with failed runs."""

    exit_status = 1
