"""What a DAG declares, read from the form Airflow stores it in (its serialized DAG). Pure.

The API server has no DAG files: it reads each DAG as the DAG processor serialized it. A gate started in
the triggerer (the default for run-condition gates and ``ParentIntervalSensor``) is serialized with its
trigger's arguments (``start_trigger_args``): its run condition, dependencies, ``max_wait`` and timeout;
so is one that asked to but runs where Airflow cannot start a task in the triggerer (before 3.3).
A gate that starts on a worker (``start_from_trigger=False``, a DAG's run gate) keeps those in its
DAG file only: its condition shows as not known, and its dependencies are the Airflow edges into it plus
whatever its decisions name. A native run condition has no gate task: its decisions, recorded under the
task's own id, name its dependencies, and its trigger rule its condition (see
:mod:`airflow_leastaction.run_conditions.native`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from airflow_leastaction.gating.engine import ALL, RunCondition
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import (
    DAG_GATE_TASK_ID,
    Dependency,
    gated_task_id,
    is_gate_task_id,
    task_of_key,
)
from airflow_leastaction.run_conditions.native import TRIGGER_RULES

#: The task types (class names) of the provider's gates, as Airflow's serialized DAG names them.
RUN_CONDITION_GATE = "RunConditionGate"
RUN_GATE = "DagRunGate"
SENSOR = "ParentIntervalSensor"
RUN_OUTCOME = "RunOutcome"
DBT_ENQUEUE = "DbtEnqueueOperator"
DBT_DRAIN = "DbtDrainOperator"

#: Trigger rule -> the native condition it stands for (the inverse of the native table).
_NATIVE_CONDITIONS = {rule: RunCondition(kind) for (kind, _type), rule in TRIGGER_RULES.items()}


@dataclass(frozen=True)
class DeclaredTask:
    """One task of a serialized DAG, with what the pages need of it."""

    task_id: str
    task_type: str
    trigger_rule: str = "all_success"
    upstream: tuple[str, ...] = ()
    downstream: tuple[str, ...] = ()
    #: The trigger arguments a gate started in the triggerer was serialized with (else empty).
    trigger_kwargs: Mapping = field(default_factory=dict)
    #: Template fields Airflow kept (a dbt operator's selector and environment).
    fields: Mapping = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        """The provider's own plumbing: gates, the run-outcome task, the run gate."""
        return self.task_type in (RUN_CONDITION_GATE, RUN_OUTCOME, RUN_GATE) or is_gate_task_id(self.task_id)


@dataclass(frozen=True)
class Gate:
    """A gate: a task whose attempts record decisions that admit ``gated`` tasks.

    :param kind: ``gate`` (a run-condition gate), ``run gate`` (a DAG's), ``sensor``, or ``native``.
    :param condition: ALL / ANY / N; None when the serialized DAG does not say.
    :param dependencies: declared dependencies, in order (empty when not known).
    :param max_wait: seconds a check waits for a run in progress elsewhere (gates).
    :param timeout: seconds a sensor waits in all.
    """

    kind: str
    task_id: str
    gated: tuple[str, ...]
    condition: RunCondition | None = None
    dependencies: tuple[Dependency, ...] = ()
    max_wait: float | None = None
    timeout: float | None = None

    @property
    def condition_text(self) -> str:
        """``ALL``, ``ANY``, ``N = 2 of 3``; ``condition not known`` when the DAG does not say."""
        if self.condition is None:
            return "condition not known"
        total = len(self.dependencies)
        if self.condition.kind == "N":
            return f"N = {self.condition.count} of {total}" if total else f"N = {self.condition.count}"
        return f"{self.condition.kind} of {total}" if total else self.condition.kind


def parse_tasks(serialized: Mapping) -> dict[str, DeclaredTask]:
    """The tasks of a serialized DAG (the ``data`` Airflow keeps for it), by task id."""
    dag = serialized.get("dag", serialized)
    tasks = {}
    for entry in dag.get("tasks", ()):
        raw = entry.get("__var", entry)
        tasks[raw["task_id"]] = _task(raw)
    for t in list(tasks.values()):  # Airflow serializes downstream ids only; upstream ones are derived
        for child in t.downstream:
            if child in tasks:
                c = tasks[child]
                tasks[child] = DeclaredTask(
                    c.task_id, c.task_type, c.trigger_rule, (*c.upstream, t.task_id), c.downstream,
                    c.trigger_kwargs, c.fields,
                )  # fmt: skip
    return tasks


def _task(raw: Mapping) -> DeclaredTask:
    start = raw.get("start_trigger_args") or {}
    kwargs = _plain(start.get("trigger_kwargs") or {}) if isinstance(start, Mapping) else {}
    fields = {k: _plain(raw[k]) for k in raw.get("template_fields") or () if k in raw}
    return DeclaredTask(
        task_id=raw["task_id"],
        task_type=str(raw.get("task_type") or raw.get("_task_type") or ""),
        trigger_rule=str(raw.get("trigger_rule") or "all_success"),
        downstream=tuple(sorted(raw.get("downstream_task_ids") or ())),
        trigger_kwargs=kwargs,
        fields=fields,
    )


def _plain(value):
    """Airflow's ``{"__type": ..., "__var": ...}`` encoding, unwrapped into plain dicts and lists."""
    if isinstance(value, Mapping):
        if "__var" in value and "__type" in value:
            return _plain(value["__var"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def gates_of(tasks: Mapping[str, DeclaredTask]) -> dict[str, Gate]:
    """Every gate of a DAG by the task id its decisions are recorded under (natives excepted: see
    :func:`native_gate`)."""
    gates = {}
    for t in tasks.values():
        gate = _gate(t, tasks)
        if gate is not None:
            gates[t.task_id] = gate
    return gates


def _gate(t: DeclaredTask, tasks: Mapping[str, DeclaredTask]) -> Gate | None:
    kw = t.trigger_kwargs
    if t.task_type == SENSOR:
        parents = tuple(Dependency(TaskIdentity.from_dict(p)) for p in kw.get("parents") or ())
        gated = tuple(kw.get("consumers") or t.downstream or (t.task_id,))
        return Gate("sensor", t.task_id, gated, ALL, parents, timeout=_seconds(kw.get("timeout")))
    if t.task_type == RUN_GATE or t.task_id == DAG_GATE_TASK_ID:
        roots = tuple(sorted(d for d in t.downstream if d in tasks))
        return Gate("run gate", t.task_id, roots or ("the whole run",))
    if t.task_type != RUN_CONDITION_GATE:
        return None
    gated = kw.get("task_id") or gated_task_id(t.task_id)
    gated_ids = (gated,) if gated else t.downstream
    if not kw:  # started on a worker: only the edges into the gate are known
        deps = tuple(Dependency(u) for u in t.upstream if u != DAG_GATE_TASK_ID)
        return Gate("gate", t.task_id, gated_ids, None, deps)
    deps = tuple(Dependency.from_dict(d) for d in kw.get("dependencies") or ())
    condition = RunCondition(kw.get("condition") or "ALL", kw.get("count"))
    return Gate("gate", t.task_id, gated_ids, condition, deps, max_wait=_seconds(kw.get("max_wait")))


def native_gate(task: DeclaredTask, recorded: Iterable[tuple[str, str]] = ()) -> Gate:
    """A task that records its own decisions (a native run condition): its condition from its trigger
    rule, its dependencies from ``recorded`` (dependency key, type) pairs of its decisions."""
    deps = []
    for key, kind in recorded:
        upstream = task_of_key(key)
        if upstream is not None:
            deps.append(Dependency(upstream, kind))
    return Gate("native", task.task_id, (task.task_id,), _NATIVE_CONDITIONS.get(task.trigger_rule), tuple(deps))


def _seconds(value) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


__all__ = [
    "DeclaredTask",
    "Gate",
    "gates_of",
    "native_gate",
    "parse_tasks",
]
