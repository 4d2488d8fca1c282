"""What a DAG author declares: a task's dependencies, each with a type, under a run condition. Pure."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.engine import ALL, DependencyType, RunCondition
from airflow_leastaction.gating.fallback import Fallback, fallback_deadline
from airflow_leastaction.identity import TaskIdentity

#: The task id of a DAG's run gate: it judges the DAG's dependencies on other pipelines once per run, and
#: its decisions are the run's (see :func:`airflow_leastaction.run_conditions.dag_run_condition`).
DAG_GATE_TASK_ID = "leastaction_dag_gate"

#: The suffix of a run-condition gate's task id (``<gated task>__gate``).
GATE_SUFFIX = "__gate"


def gate_task_id(task_id: str) -> str:
    """The task id of the run-condition gate that admits ``task_id``: ``<task_id>__gate``."""
    if not isinstance(task_id, str) or not task_id:
        raise ValueError(f"a run-condition gate admits a task: task id {task_id!r} is not one")
    return task_id + GATE_SUFFIX


def gated_task_id(task_id: str | None) -> str | None:
    """The task a run-condition gate admits, for a gate's task id (the inverse of :func:`gate_task_id`); None
    for any other task id. A bare ``__gate`` is a task of its own: no gate is made from an empty task id."""
    if not task_id or not task_id.endswith(GATE_SUFFIX) or task_id == GATE_SUFFIX:
        return None
    return task_id[: -len(GATE_SUFFIX)]


def is_gate_task_id(task_id: str | None) -> bool:
    """Whether ``task_id`` is written as a run-condition gate's task id (see :func:`gated_task_id`)."""
    return gated_task_id(task_id) is not None


#: How the key of a dependency on a task of the same run starts (``task:<task_id>``); a catalog task's key
#: is its identity's (:attr:`~airflow_leastaction.identity.TaskIdentity.key`, ``catalog:...``).
TASK_KEY_PREFIX = "task:"


def task_key(task_id: str) -> str:
    """The key of a dependency on ``task_id``, a task of the same run: ``task:<task_id>``. Gate decisions are
    recorded under it, and the DAG graph names the task's node with it."""
    return TASK_KEY_PREFIX + task_id


def task_of_key(key: str | None) -> str | None:
    """The task id of a same-run dependency's key (the inverse of :func:`task_key`); None for any other key."""
    if not key or not key.startswith(TASK_KEY_PREFIX) or key == TASK_KEY_PREFIX:
        return None
    return key[len(TASK_KEY_PREFIX) :]


@dataclass(frozen=True)
class Dependency:
    """One dependency of a gated task.

    :param upstream: a task id of the same DAG, or the catalog identity of a task in another DAG or system.
    :param type: SUCCESS (default), FAILURE, ALWAYS or HAS_DATA.
    :param consume_repairs: for a task in another DAG: a higher output revision of a run already consumed
        (a repair) counts as new output (default). False: only a newer run counts.
    """

    upstream: str | TaskIdentity
    type: DependencyType = DependencyType.SUCCESS
    consume_repairs: bool = True

    def __post_init__(self):
        object.__setattr__(self, "type", DependencyType.parse(self.type))
        if not isinstance(self.upstream, (str, TaskIdentity)) or self.upstream == "":
            raise ConfigurationError(f"dependency upstream {self.upstream!r} must be a task id or a TaskIdentity")
        # Derived once: a gate reads them for every dependency on every look.
        in_run = isinstance(self.upstream, str)
        object.__setattr__(self, "in_run", in_run)
        object.__setattr__(self, "whole_interval", not in_run and self.upstream.coverage == "interval")
        object.__setattr__(self, "key", task_key(self.upstream) if in_run else self.upstream.key)

    #: True for a task of the same DAG run; False for a catalog task elsewhere.
    in_run: bool = field(init=False, repr=False, compare=False)
    #: A catalog task judged on every slot inside the run's data interval (``coverage="interval"``) rather
    #: than by its latest run.
    whole_interval: bool = field(init=False, repr=False, compare=False)
    #: The dependency label in gate decisions: ``task:<task_id>`` or the catalog identity's key.
    key: str = field(init=False, repr=False, compare=False)

    @property
    def label(self) -> str:
        return str(self.upstream)

    def as_dict(self) -> dict:
        upstream = self.upstream if self.in_run else self.upstream.as_dict()
        if self.whole_interval:
            upstream["coverage"] = "interval"
        return {"upstream": upstream, "type": self.type.value, "consume_repairs": self.consume_repairs}

    @classmethod
    def from_dict(cls, data: dict) -> Dependency:
        up = data["upstream"]
        return cls(
            up if isinstance(up, str) else TaskIdentity.from_dict(up),
            data.get("type", "SUCCESS"),
            bool(data.get("consume_repairs", True)),
        )


@dataclass(frozen=True)
class GateSpec:
    """The run condition of one task: its dependencies, ALL/ANY/N, and whether it is active."""

    task_id: str
    dependencies: tuple[Dependency, ...] = ()
    condition: RunCondition = ALL
    active: bool = True
    gate_task_id: str | None = None
    extra: dict = field(default_factory=dict, compare=False)
    #: The DAG's run gate, when the DAG has one: nothing is judged before it admitted the run.
    run_gate: str | None = None
    #: Run degraded at a deadline with at least ``fallback.require`` dependencies satisfied.
    fallback: Fallback | None = None
    #: The DAG's timezone: the fallback's deadline is read on its clock.
    timezone: str = "UTC"

    def deadline(self, slot: dt.datetime) -> dt.datetime | None:
        """The fallback's deadline for the run whose slot is ``slot`` (None: no fallback)."""
        return None if self.fallback is None else fallback_deadline(self.fallback.at, slot, self.timezone)

    @property
    def in_run(self) -> tuple[Dependency, ...]:
        return tuple(d for d in self.dependencies if d.in_run)

    @property
    def elsewhere(self) -> tuple[Dependency, ...]:
        return tuple(d for d in self.dependencies if not d.in_run)
