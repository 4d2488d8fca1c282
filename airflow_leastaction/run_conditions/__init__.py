"""Run conditions for DAG authors: per-dependency types and ALL / ANY / N, enforced by a gate task.

::

    from airflow_leastaction.run_conditions import run_condition, success, has_data, failure

    run_condition(report, has_data(load_orders), success(load_refunds), when="ANY")
    run_condition(alert, failure(load_orders))

Each declaration is checked at DAG parse time (see :mod:`~airflow_leastaction.run_conditions.waves`) and
adds a gate task ``<task_id>__gate`` between the dependencies and the task, so the graph view shows every dependency as
an edge and the waiting as a deferred gate with its reasons in the log. The first declaration in a DAG
also adds ``leastaction_run_outcome``, which ends the run FAILED when a task of it failed.

A whole DAG may depend on other pipelines with :func:`dag_run_condition`: judged once per run, before
any of its tasks starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_leastaction.exceptions import ConfigurationError, InvalidDeadlineError, InvalidFallbackError
from airflow_leastaction.gating.engine import ALL, ANY, DependencyType, RunCondition, check_condition
from airflow_leastaction.gating.fallback import Fallback
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import check_coverage
from airflow_leastaction.run_conditions.model import DAG_GATE_TASK_ID, Dependency, GateSpec, gate_task_id
from airflow_leastaction.run_conditions.native import make_native, native_spec, native_trigger_rule
from airflow_leastaction.run_conditions.run_outcome import RUN_OUTCOME_TASK_ID
from airflow_leastaction.run_conditions.waves import (
    Node,
    check_type,
    check_upstreams,
    validate_addition,
)

SUCCESS, FAILURE, ALWAYS, HAS_DATA = (
    DependencyType.SUCCESS,
    DependencyType.FAILURE,
    DependencyType.ALWAYS,
    DependencyType.HAS_DATA,
)


@dataclass(frozen=True)
class Declared:
    """A dependency as written in a DAG file, checked by :func:`run_condition`."""

    upstream: Any
    type: Any = "SUCCESS"
    consume_repairs: bool = True


def depends_on(upstream, type: DependencyType | str = "SUCCESS", *, consume_repairs: bool = True) -> Declared:
    """A dependency on ``upstream`` (a task, its id, or a catalog identity of a task elsewhere)."""
    return Declared(upstream, type, consume_repairs)


def success(upstream, **kw) -> Declared:
    """Satisfied when ``upstream`` succeeded."""
    return Declared(upstream, "SUCCESS", **kw)


def failure(upstream, **kw) -> Declared:
    """Satisfied when ``upstream`` failed (an alert, a fallback)."""
    return Declared(upstream, "FAILURE", **kw)


def always(upstream, **kw) -> Declared:
    """Satisfied when ``upstream`` finished in any way: succeeded, failed or skipped."""
    return Declared(upstream, "ALWAYS", **kw)


def has_data(upstream, **kw) -> Declared:
    """Satisfied when ``upstream`` succeeded and reported at least one row written."""
    return Declared(upstream, "HAS_DATA", **kw)


def _upstream_key(value: Any) -> str | TaskIdentity:
    if isinstance(value, (str, TaskIdentity)):
        return value
    operator = getattr(value, "operator", value)  # an XComArg from a @task call
    task_id = getattr(operator, "task_id", None)
    if not isinstance(task_id, str):
        raise ConfigurationError(f"{value!r} is not a task, a task id or a catalog TaskIdentity")
    return task_id


def _check_coverage(dag_id: str, task_id: str, dep: Dependency) -> None:
    # Whole-interval coverage asks "did every slot of my interval complete": a SUCCESS question only.
    if dep.in_run:
        return
    owner = f"DAG {dag_id!r} task {task_id!r} dependency {dep.upstream}"
    check_coverage(dep.upstream.coverage, owner)
    if dep.whole_interval and dep.type is not SUCCESS:
        raise ConfigurationError(
            f"{owner}: coverage='interval' applies to SUCCESS dependencies only, not {dep.type.value}"
        )


def run_condition(
    task,
    *dependencies,
    when: RunCondition | str = "ALL",
    count: int | None = None,
    active: bool = True,
    native: bool = False,
    fallback: Fallback | None = None,
    deadline=None,
    deadline_callback=None,
    **gate_kwargs,
):
    """Declare when ``task`` starts: its dependencies, a type each, and ALL (default), ANY or N.

    :param task: the gated task (an operator, or the result of calling a ``@task`` function).
    :param dependencies: :func:`success`, :func:`failure`, :func:`always`, :func:`has_data` or
        :func:`depends_on` of a task of this DAG or of a catalog identity
        (:func:`~airflow_leastaction.refs.airflow_task`, :func:`~airflow_leastaction.refs.external_task`);
        a bare task means SUCCESS.
    :param when: ``ALL``, ``ANY`` or ``N``.
    :param count: with ``N``: how many dependencies must be satisfied.
    :param active: ``False`` marks the task inactive: it never runs and its dependencies are ignored; an
        active task may not depend on it.
    :param native: start the task by the Airflow trigger rule that means the same condition, with no gate
        task (ALL or ANY of SUCCESS, ALL of ALWAYS, on tasks of this DAG only; see
        :mod:`~airflow_leastaction.run_conditions.native`): it starts as soon as Airflow's own rule would,
        and records its decisions when it starts.
    :param fallback: :class:`~airflow_leastaction.gating.fallback.Fallback`: at its deadline, run the task
        *degraded* with at least ``require`` dependencies satisfied, recording the others MISSING (not
        with ``native``).
    :param deadline: warn early (once per run) when the p90 of the task's expected completion passes this
        deadline, as a fallback's ``at`` is written (not with ``native``).
    :param deadline_callback: whom the warning tells: Airflow's ``AsyncCallback`` or ``SyncCallback``.
    :param gate_kwargs: passed to :class:`~airflow_leastaction.operators.run_condition.RunConditionGate`
        (``max_wait``, ``max_looks``, ``poll_interval``, ``catalog_conn_id``, ``deferrable``...); with
        ``native``, ``catalog_conn_id`` and ``poll_interval`` only.
    :return: the gate task (with ``native``: the task itself).
    """
    from airflow_leastaction.operators.run_condition import RunConditionGate

    operator = getattr(task, "operator", task)
    dag = operator.dag if operator.has_dag() else None
    if dag is None:
        raise ConfigurationError(f"task {operator.task_id!r}: declare its run condition inside its DAG")
    dag_id, task_id = dag.dag_id, operator.task_id
    declared = [d if isinstance(d, Declared) else Declared(d) for d in dependencies]
    types = [check_type(dag_id, task_id, d.type) for d in declared]
    kind = when.kind if isinstance(when, RunCondition) else when
    count = when.count if isinstance(when, RunCondition) else count
    kind, count = check_condition(dag_id, task_id, kind, count, len(declared))
    deps = tuple(
        Dependency(_upstream_key(d.upstream), t, d.consume_repairs) for d, t in zip(declared, types, strict=True)
    )
    for dep in deps:
        _check_coverage(dag_id, task_id, dep)
    check_upstreams(dag_id, task_id, [d.upstream for d in deps if d.in_run], dag.task_dict)
    gate_id = gate_task_id(task_id)
    if gate_id in dag.task_dict or native_spec(operator) is not None:
        raise ConfigurationError(f"DAG {dag_id!r} task {task_id!r}: its run condition is already declared")
    run_gate = dag.task_dict.get(DAG_GATE_TASK_ID)
    if native and fallback is not None:
        raise InvalidFallbackError(
            dag_id, task_id, "a native run condition starts by Airflow's trigger rule and cannot wait for a deadline"
        )
    if native and (deadline, deadline_callback) != (None, None):
        raise InvalidDeadlineError(dag_id, task_id, "a native run condition has no gate that waits and warns")
    if native:  # refused before anything is wired
        native_trigger_rule(dag_id, GateSpec(task_id, deps, RunCondition(kind, count), active), run_gate=bool(run_gate))
    if run_gate is not None and operator.task_id in run_gate.downstream_task_ids:
        # A root the run gate holds: from now on its own gate holds it, and the run gate holds that gate.
        run_gate.downstream_task_ids.discard(operator.task_id)
        operator.upstream_task_ids.discard(DAG_GATE_TASK_ID)
    others = sorted(operator.upstream_task_ids)
    if others:
        raise ConfigurationError(
            f"DAG {dag_id!r} task {task_id!r}: it already has upstream tasks {others}; declare "
            "all its dependencies in run_condition() instead of with >>"
        )
    new = Node(task_id, tuple(d.upstream for d in deps if d.in_run), kind, active)
    validate_addition(dag_id, new, lambda t: task_node(dag, t), lambda t: dependents(dag, t))
    mapped = sorted(d.upstream for d in deps if d.in_run and getattr(dag.get_task(d.upstream), "is_mapped", False))
    if mapped or getattr(operator, "is_mapped", False):
        raise ConfigurationError(
            f"DAG {dag_id!r} task {task_id!r}: run conditions do not apply to mapped tasks "
            f"({', '.join(mapped) or task_id}); gate the task that reduces them instead"
        )
    if native:
        spec = GateSpec(task_id, deps, RunCondition(kind, count), active)
        make_native(dag, operator, spec, run_gate=run_gate is not None, options=gate_kwargs)
        _add_run_outcome(dag, gate_kwargs)
        return operator
    # The gate sits in the root group, so its id is the gated task's full id (group prefix included).
    gate = RunConditionGate(
        task_id=gate_id,
        gated_task_id=task_id,
        dependencies=deps,
        condition=kind,
        count=count,
        active=active,
        fallback=fallback,
        deadline=deadline,
        deadline_callback=deadline_callback,
        dag=dag,
        **gate_kwargs,
    )
    for dep in deps:
        if dep.in_run:
            dag.get_task(dep.upstream) >> gate
    gate >> operator
    if run_gate is not None:
        gate.run_gate = DAG_GATE_TASK_ID
        if not gate.upstream_task_ids:
            run_gate >> gate
    _add_run_outcome(dag, gate_kwargs)
    return gate


def _add_run_outcome(dag, gate_kwargs: dict) -> None:
    from airflow_leastaction.operators.run_outcome import RunOutcome

    if RUN_OUTCOME_TASK_ID not in dag.task_dict:
        RunOutcome(task_id=RUN_OUTCOME_TASK_ID, dag=dag, poll_interval=gate_kwargs.get("poll_interval"))


def dag_run_condition(
    dag,
    *dependencies,
    when: RunCondition | str = "ALL",
    count: int | None = None,
    fallback: Fallback | None = None,
    deadline=None,
    deadline_callback=None,
    **gate_kwargs,
):
    """Declare the DAG's dependencies on other pipelines: judged once per run, before any task starts.

    Adds the run gate ``leastaction_dag_gate`` (a
    :class:`~airflow_leastaction.operators.dag_run_condition.DagRunGate`) upstream of every task declared so
    far that has no upstream, and holds every run-condition gate of the DAG until it admitted the run:
    declare it after the DAG's tasks. When the dependencies can never be met, every task of the run is
    skipped and the run gate's decisions say why. A retried or cleared run resumes with its decisions.

    :param dag: the DAG.
    :param dependencies: :func:`success`, :func:`failure`, :func:`always`, :func:`has_data` or
        :func:`depends_on` of another DAG (:func:`~airflow_leastaction.refs.airflow_dag`) or a catalog task
        (:func:`~airflow_leastaction.refs.airflow_task`, :func:`~airflow_leastaction.refs.external_task`);
        a bare identity means SUCCESS.
    :param when: ``ALL``, ``ANY`` or ``N``.
    :param count: with ``N``: how many dependencies must be satisfied.
    :param fallback: :class:`~airflow_leastaction.gating.fallback.Fallback`: at its deadline, admit the run
        *degraded* with at least ``require`` dependencies satisfied (the others recorded MISSING).
    :param deadline: warn early (once per run) when the p90 of the run's expected completion passes it.
    :param deadline_callback: whom the warning tells: Airflow's ``AsyncCallback`` or ``SyncCallback``.
    :param gate_kwargs: passed to the run gate (``max_wait``, ``max_looks``, ``poll_interval``,
        ``catalog_conn_id``, ``deferrable``...).
    :return: the run gate.
    """
    from airflow_leastaction.exceptions import RunConditionError
    from airflow_leastaction.operators.dag_run_condition import DagRunGate
    from airflow_leastaction.operators.run_condition import RunConditionGate

    dag_id = dag.dag_id
    declared = _pipeline_dependencies(dag_id, dependencies)
    types = [check_type(dag_id, DAG_GATE_TASK_ID, d.type) for d in declared]
    kind = when.kind if isinstance(when, RunCondition) else when
    count = when.count if isinstance(when, RunCondition) else count
    kind, count = check_condition(dag_id, DAG_GATE_TASK_ID, kind, count, len(declared))
    if DAG_GATE_TASK_ID in dag.task_dict:
        raise RunConditionError(dag_id, DAG_GATE_TASK_ID, "the DAG's run condition is already declared")
    natives = sorted(t.task_id for t in dag.tasks if native_spec(t) is not None)
    if natives:
        raise RunConditionError(
            dag_id,
            DAG_GATE_TASK_ID,
            f"{', '.join(natives)} {'has' if len(natives) == 1 else 'have'} a native run condition, which a "
            "trigger rule cannot hold for the run's own: declare them without native=True",
        )
    deps = tuple(Dependency(d.upstream, t, d.consume_repairs) for d, t in zip(declared, types, strict=True))
    roots = [t for t in dag.tasks if not t.upstream_task_ids and t.task_id != RUN_OUTCOME_TASK_ID]
    warn = dict(deadline=deadline, deadline_callback=deadline_callback)
    gate = DagRunGate(dependencies=deps, condition=kind, count=count, fallback=fallback, dag=dag, **warn, **gate_kwargs)
    for task in roots:
        gate >> task
    for task in dag.tasks:
        if isinstance(task, RunConditionGate) and task is not gate:
            task.run_gate = DAG_GATE_TASK_ID
    return gate


def _pipeline_dependencies(dag_id: str, dependencies) -> list[Declared]:
    """The dependencies of a DAG run condition: at least one, each on another pipeline."""
    from airflow_leastaction.exceptions import RunConditionError, SelfDependencyError
    from airflow_leastaction.refs import airflow_dag

    declared = [d if isinstance(d, Declared) else Declared(d) for d in dependencies]
    if not declared:
        raise RunConditionError(dag_id, DAG_GATE_TASK_ID, "dag_run_condition() needs at least one dependency")
    for d in declared:
        if not isinstance(d.upstream, TaskIdentity):
            raise RunConditionError(
                dag_id,
                DAG_GATE_TASK_ID,
                f"{_upstream_key(d.upstream)!r} is a task of this "
                "DAG, not another pipeline: a DAG run condition names other DAGs (airflow_dag) "
                "or catalog tasks (airflow_task, external_task); declare dependencies on this "
                "DAG's tasks with run_condition()",
            )
        if d.upstream == airflow_dag(dag_id):
            # Its own run is in progress while it is judged: the gate would wait for itself.
            raise SelfDependencyError(dag_id, DAG_GATE_TASK_ID, "the DAG depends on its own runs")
    return declared


def gate_specs(dag) -> dict[str, GateSpec]:
    """The run conditions declared in ``dag``, by gated task id."""
    from airflow_leastaction.operators.run_condition import RunConditionGate

    specs = {t.gated_task_id: t.spec for t in dag.tasks if isinstance(t, RunConditionGate)}
    specs.update((t.task_id, spec) for t in dag.tasks if (spec := native_spec(t)) is not None)
    return specs


def dag_nodes(dag) -> dict[str, Node]:
    """The DAG's tasks as graph nodes (see :func:`task_node`); gates and the run-outcome task are left out."""
    from airflow_leastaction.operators.waiting import _Waiting

    return {t.task_id: task_node(dag, t.task_id) for t in dag.tasks if not isinstance(t, _Waiting)}


def task_node(dag, task_id: str) -> Node | None:
    """One task as a graph node: a gated task's upstreams are its declared same-run dependencies, any
    other task's are its Airflow upstreams; None for a gate or the run-outcome task."""
    from airflow_leastaction.operators.run_condition import RunConditionGate
    from airflow_leastaction.operators.waiting import _Waiting

    task = dag.task_dict[task_id]
    if isinstance(task, _Waiting):
        return None
    gate = dag.task_dict.get(gate_task_id(task_id))
    if isinstance(gate, RunConditionGate) and gate.gated_task_id == task_id:
        spec = gate.spec
        return Node(
            task_id,
            tuple(d.upstream for d in spec.in_run),
            str(spec.condition),
            spec.active,
            tuple(d.label for d in spec.elsewhere),
        )
    spec = native_spec(task)
    if spec is not None:
        return Node(task_id, tuple(d.upstream for d in spec.in_run), str(spec.condition), spec.active)
    ups = (u for u in task.upstream_task_ids if not isinstance(dag.task_dict[u], _Waiting))
    return Node(task_id, tuple(sorted(ups)))


def dependents(dag, task_id: str) -> list[str]:
    """The tasks that depend directly on ``task_id``, as graph nodes (a gate stands for its task)."""
    from airflow_leastaction.operators.run_condition import RunConditionGate
    from airflow_leastaction.operators.waiting import _Waiting

    out = []
    for down in dag.task_dict[task_id].downstream_task_ids:
        task = dag.task_dict[down]
        if isinstance(task, RunConditionGate):
            out.append(task.gated_task_id)
        elif not isinstance(task, _Waiting):
            out.append(down)
    return sorted(out)


__all__ = [
    "ALL",
    "ALWAYS",
    "ANY",
    "FAILURE",
    "HAS_DATA",
    "SUCCESS",
    "Dependency",
    "Fallback",
    "GateSpec",
    "RunCondition",
    "always",
    "dag_nodes",
    "dag_run_condition",
    "depends_on",
    "failure",
    "gate_specs",
    "has_data",
    "run_condition",
    "success",
]
