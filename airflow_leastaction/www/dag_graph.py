"""Every dependency of one DAG, drawn for one judged run. Pure.

Edges, each with its type and its state in the judged run:

* run conditions: a gate's dependencies on tasks of the same run and on catalog tasks elsewhere, drawn
  into the task the gate admits (the gate itself is plumbing, drawn only when asked for);
* a DAG's run condition (its run gate): the run's dependencies on other pipelines;
* sensors' parents (catalog tasks) into the sensor;
* catalog parents a task declares itself, and tasks elsewhere that name this DAG's tasks as parents;
* dbt: the models a task asks the queue for, and the queue a drain builds from;
* Airflow's own edges between the other tasks, in grey.

An edge's state is the decision recorded for it in the judged run when there is one (SATISFIED...), else
the upstream's state in that run, else the catalog's judgement for the run's slot. Boxes are coloured by
the task's state in the judged run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import is_gate_task_id, task_key, task_of_key
from airflow_leastaction.run_conditions.run_outcome import RUN_OUTCOME_TASK_ID
from airflow_leastaction.www.declared import (
    DBT_DRAIN,
    DBT_ENQUEUE,
    DeclaredTask,
    Gate,
    native_gate,
)
from airflow_leastaction.www.layout import Box, Canvas, Curve, depths, lay_out


@dataclass
class DagEdge:
    parent: str
    child: str
    #: SUCCESS / FAILURE / ALWAYS / HAS_DATA, ``interval`` (a catalog parent), ``requests`` / ``builds``
    #: (dbt), or ``airflow`` (a plain edge of the DAG).
    kind: str
    #: The state shown: a decision result, an Airflow state, or ``waiting`` / ``failed`` / ``success``.
    state: str | None = None
    reason: str = ""
    curve: Curve | None = None


@dataclass
class DagNode:
    key: str
    label: str
    sub: str
    state: str | None
    #: task (of this DAG), catalog (another DAG or system), dbt, gate (plumbing)
    kind: str = "task"
    task_id: str | None = None
    box: Box | None = None
    #: The run condition a gate admits this task under (``ANY of 3``), when it has one.
    condition: str | None = None


@dataclass
class DagGraph:
    nodes: dict[str, DagNode] = field(default_factory=dict)
    edges: list[DagEdge] = field(default_factory=list)
    canvas: Canvas = field(default_factory=Canvas)
    hidden: int = 0

    def node(self, key: str, label: str, sub: str, state: str | None, kind: str, task_id: str | None = None):
        self.nodes.setdefault(key, DagNode(key, label, sub, state, kind, task_id))

    def edge(self, parent: str, child: str, kind: str, state: str | None = None, reason: str = "") -> None:
        if any(e.parent == parent and e.child == child for e in self.edges):
            return
        self.edges.append(DagEdge(parent, child, kind, state, reason))

    @property
    def typed_edges(self) -> list[DagEdge]:
        """The dependencies (every edge but Airflow's plain ones)."""
        return [e for e in self.edges if e.kind != "airflow"]


@dataclass(frozen=True)
class JudgedRun:
    """What the judged run says: task states and the decisions recorded in it, by recording task."""

    states: Mapping[str, str | None]
    decisions: Mapping[str, Sequence[Mapping]]


def catalog_key(identity: TaskIdentity) -> str:
    """A catalog task's node key: its dependency label in gate decisions."""
    return identity.key


def build(
    tasks: Mapping[str, DeclaredTask],
    gates: Mapping[str, Gate],
    run: JudgedRun,
    lineage,
    *,
    dag_id: str,
    internal: bool = False,
    catalog_tasks: Mapping[str, str | None] | None = None,
) -> DagGraph:
    """The graph of one DAG. ``lineage``: the catalog lineage around its catalog tasks, judged for the run's
    slot (:class:`~airflow_leastaction.www.lineage.Lineage`, or None). ``catalog_tasks``: the DAG's tasks the
    catalog has, with their catalog state (drawn too when Airflow no longer has them, or never had)."""
    g = DagGraph()
    shown = {t for t, d in tasks.items() if internal or not _plumbing(d)}
    g.hidden = len(tasks) - len(shown)
    for task_id in shown:
        d = tasks[task_id]
        kind = "gate" if _plumbing(d) else "task"
        g.node(task_key(task_id), task_id, d.task_type, run.states.get(task_id), kind, task_id)
    for task_id, state in (catalog_tasks or {}).items():
        if task_id not in tasks and (internal or not is_gate_task_id(task_id)):
            g.node(task_key(task_id), task_id, "in the catalog", run.states.get(task_id, state), "task", task_id)
            shown.add(task_id)
    covered: set[tuple[str, str]] = set()
    for gate in gates.values():
        _gate_edges(g, gate, run, shown, covered, dag_id)
        for task_id in gate.gated:
            if task_key(task_id) in g.nodes and gate.condition is not None:
                g.nodes[task_key(task_id)].condition = gate.condition_text
    for task_id in shown & set(tasks):  # native run conditions: decisions under the task's own id
        if task_id not in gates and run.decisions.get(task_id):
            recorded = [(r["dependency"], r["dependency_type"]) for r in run.decisions[task_id]]
            _gate_edges(g, native_gate(tasks[task_id], recorded), run, shown, covered, dag_id)
    if lineage is not None:
        _catalog_edges(g, lineage, dag_id, shown, covered)
    _dbt_edges(g, tasks, shown & set(tasks), run)
    for task_id in shown & set(tasks):  # Airflow's own edges not already drawn as a dependency
        for child in tasks[task_id].downstream:
            if child in shown and (task_id, child) not in covered:
                g.edge(task_key(task_id), task_key(child), "airflow")
    _place(g)
    return g


def _plumbing(d: DeclaredTask) -> bool:
    return d.task_type != "DagRunGate" and (d.internal or d.task_id == RUN_OUTCOME_TASK_ID)


def _gate_edges(g: DagGraph, gate: Gate, run: JudgedRun, shown: set, covered: set, dag_id: str) -> None:
    """A gate's dependencies, into the tasks it admits (into the gate itself when it is drawn)."""
    recorded = {r["dependency"]: r for r in run.decisions.get(gate.task_id, ())}
    targets = [gate.task_id] if gate.task_id in shown else [t for t in gate.gated if t in shown]
    deps = list(gate.dependencies)
    known = {d.key for d in deps}
    extra = [r for key, r in recorded.items() if key not in known]  # a gate the DAG does not describe
    for target in targets:
        for dep in deps:
            parent = _dependency_node(g, dep.upstream, run)
            row = recorded.get(dep.key)
            state = row["result"] if row else _upstream_state(dep.upstream, run)
            kind = "interval" if gate.kind == "sensor" else dep.type.value
            g.edge(parent, task_key(target), kind, state, row["reason"] if row else "not judged in this run")
            if dep.in_run:
                covered.add((dep.upstream, target))
                covered.add((dep.upstream, gate.task_id))
        for row in extra:
            parent = _recorded_node(g, row, run)
            g.edge(parent, task_key(target), row["dependency_type"], row["result"], row["reason"])
        covered.add((gate.task_id, target))


def _dependency_node(g: DagGraph, upstream, run: JudgedRun) -> str:
    if isinstance(upstream, str):
        return task_key(upstream)
    key = catalog_key(upstream)
    g.node(key, upstream.name, upstream.project, None, "catalog")
    return key


def _recorded_node(g: DagGraph, row: Mapping, run: JudgedRun) -> str:
    dep = row["dependency"]
    if task_of_key(dep) is not None:
        return dep
    project, _, task_name = dep.removeprefix("catalog:").partition("/")
    g.node(dep, task_name or project, project if task_name else "", None, "catalog")
    return dep


def _upstream_state(upstream, run: JudgedRun) -> str | None:
    return run.states.get(upstream) if isinstance(upstream, str) else None


def _catalog_edges(g: DagGraph, lineage, dag_id: str, shown: set, covered: set) -> None:
    """Catalog parents declared by this DAG's tasks, and catalog children elsewhere naming them."""
    drawn = {(e.parent, e.child) for e in g.edges}

    def own(identity: TaskIdentity) -> str | None:  # the task id, for a catalog task of this DAG
        node = lineage.nodes.get(identity)
        row = node.row if node is not None else None
        return row["task_id"] if row is not None and row["dag_id"] == dag_id else None

    for e in lineage.edges:
        state = "success" if e.satisfied else ("failed" if e.rejected else "waiting")
        child_task, parent_task = own(e.child), own(e.parent)
        if child_task in shown and parent_task is None:
            parent = catalog_key(e.parent)
            if any(p == parent for p, _ in drawn):
                continue  # drawn already: a sensor's or a gate's parent
            g.node(parent, e.parent.name, e.parent.project, state, "catalog")
            g.edge(parent, task_key(child_task), "interval", state, e.reason)
        elif parent_task in shown and child_task is None:
            child = catalog_key(e.child)
            g.node(child, e.child.name, e.child.project, None, "catalog")
            g.edge(task_key(parent_task), child, "interval", state, e.reason)
        elif parent_task in shown and child_task in shown:
            covered.add((parent_task, child_task))
            g.edge(task_key(parent_task), task_key(child_task), "interval", state, e.reason)


def _dbt_edges(g: DagGraph, tasks: Mapping[str, DeclaredTask], shown: set, run: JudgedRun) -> None:
    for task_id in shown:
        d = tasks[task_id]
        env = str(d.fields.get("environment") or "")
        if d.task_type == DBT_ENQUEUE:
            key = f"dbt:{env}:{d.fields.get('selector')}"
            g.node(key, str(d.fields.get("selector") or "dbt models"), f"dbt models · queue {env}", None, "dbt")
            g.edge(task_key(task_id), key, "requests", run.states.get(task_id))
        elif d.task_type == DBT_DRAIN:
            key = f"dbt:{env}"
            g.node(key, f"dbt queue {env}", "models requested by any DAG", None, "dbt")
            g.edge(key, task_key(task_id), "builds", run.states.get(task_id))


#: Task types worth naming in a box (others are plain tasks: the box shows their state alone).
_NAMED_TYPES = {"ParentIntervalSensor": "sensor", "DagRunGate": "run condition", "RunConditionGate": "gate",
                "RunOutcome": "run outcome", DBT_ENQUEUE: "dbt enqueue", DBT_DRAIN: "dbt drain"}  # fmt: skip


def _second_line(n: DagNode) -> str:
    if n.kind in ("dbt", "catalog"):
        return n.sub if n.kind == "dbt" else f"{n.sub} · {n.state or 'not judged'}"
    kind = n.condition or _NAMED_TYPES.get(n.sub)
    state = n.state or "not run"
    return f"{kind} · {state}" if kind else state


def _place(g: DagGraph) -> None:
    links = [(e.parent, e.child) for e in g.edges]
    column = depths(g.nodes, links)
    boxes = [
        Box(key, column[key], (n.label, _second_line(n)), order=(n.kind != "task", n.label))
        for key, n in g.nodes.items()
    ]  # fmt: skip
    g.canvas, curves = lay_out(boxes, links)
    for n in g.nodes.values():
        n.box = g.canvas.boxes.get(n.key)
    by_link = {(c.parent, c.child): c for c in curves}
    for e in g.edges:
        e.curve = by_link.get((e.parent, e.child))
