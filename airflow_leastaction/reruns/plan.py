"""Planning a re-run before anything runs: which task runs re-running some slots of a task makes stale,
transitively, and in which waves they can re-run. Pure logic, no Airflow import.

The plan follows the catalog's own record of who used what: consumption records (a consumer run, its
downstream slot, the upstream slot it consumed), and for tasks outside Airflow, which record no
consumption, the parents they declared and the parent slot covering each of their slots. Each consumer run
reached re-publishes its slot when it re-runs, so its own consumers are stale in turn. The waves are the
run-condition validation's (:func:`~airflow_leastaction.run_conditions.waves.waves`) over the tasks of
the plan: a task re-runs after every task of the plan it consumed from, parents first.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from airflow_leastaction.exceptions import DependencyCycleError, PlanApplyError
from airflow_leastaction.identity import TASK_SOURCES, TaskIdentity
from airflow_leastaction.run_conditions.waves import Node, waves

#: Where a plan says a task not in a DAG re-runs, by its kind (:attr:`PlannedTask.kind`).
WHERE = {"outside": "outside Airflow", "dbt": "dbt model", "asset": "asset, updated by its producer"}
#: The tasks whose commands a plan prints, by kind: their key in the JSON, and the heading of the text.
RUN_BY = {
    "outside": ("owner_runs", "outside Airflow, their owners re-run them and then publish each slot:"),
    "dbt": ("queue_runs", "dbt models, built again through the model queue (run in the dbt project's directory):"),
}


@dataclass(frozen=True)
class PlannedTask:
    """A catalog task as the plan names it: its identity, and the Airflow DAG and task it is, if any."""

    pk: int
    identity: TaskIdentity
    source: str = "airflow"
    dag_id: str | None = None
    task_id: str | None = None
    cron: str | None = None
    timezone: str = "UTC"

    @property
    def kind(self) -> str:
        """How the task re-runs: ``dag`` (a backfill of its Airflow DAG), ``dbt`` (a dbt model: a forced
        build through the model queue), ``asset`` (an asset's events: whoever updates the asset, listed
        only) or ``outside`` (its owner re-runs it and reports the slot again). Sources as the catalog
        records them (:data:`~airflow_leastaction.identity.TASK_SOURCES`)."""
        if self.source == "airflow" and self.dag_id is not None:
            return "dag"
        return self.source if self.source in TASK_SOURCES[2:] else "outside"

    @property
    def external(self) -> bool:
        """Not a task of an Airflow DAG: nothing of it is sent to Airflow."""
        return self.kind != "dag"

    def rerun_command(self, slot: dt.datetime) -> str | None:
        """What re-runs ``slot`` of a task not in a DAG, as one shell line (None for an asset: listed)."""
        if self.kind == "outside":
            return self.report_command(slot)
        if self.kind == "dbt":
            args = ["airflow-leastaction", "queue", "enqueue", self.identity.name, "--force", "--slot"]
            return shlex.join([*args, slot.isoformat(), "--project-dir", "."])
        return None

    def report_arguments(self, slot: dt.datetime) -> list[str]:
        """The command the owner of an external task runs once it re-ran ``slot``: publish the new revision
        (``--repair``: the slot's default run id is already recorded, so a plain report would change
        nothing; the task's schedule is kept, as no ``--cron`` is given)."""
        i = self.identity
        # A value that starts with "-" would be read as an option: a name then comes after "--", and an
        # option's value is attached with "=".
        dashed = i.name.startswith("-")
        args = ["airflow-leastaction", "catalog", "report", *([] if dashed else [i.name])]
        for flag, value in (("--project", i.project), ("--account", i.account), ("--partition", i.partition)):
            if value:
                args += [f"{flag}={value}"] if value.startswith("-") else [flag, value]
        return [*args, "--slot", slot.isoformat(), "--repair", *(["--", i.name] if dashed else [])]

    def report_command(self, slot: dt.datetime) -> str:
        """:meth:`report_arguments` as one shell line, every argument quoted (catalog names are anybody's text)."""
        return shlex.join(self.report_arguments(slot))


@dataclass(frozen=True)
class Consumed:
    """One use of an upstream slot by a downstream run (a consumption record, or an external task's slot
    whose declared parent's covering slot it is)."""

    upstream_pk: int
    upstream_slot: dt.datetime
    downstream_pk: int
    downstream_slot: dt.datetime


@dataclass
class RerunPlan:
    """What re-running ``root``'s slots in ``[start, end]`` touches."""

    root: PlannedTask
    start: dt.datetime
    end: dt.datetime
    tasks: dict[int, PlannedTask] = field(default_factory=dict)
    #: Per task, the slots of its runs that re-run (the root's own, then every consumer run reached).
    runs: dict[int, list[dt.datetime]] = field(default_factory=dict)
    #: Per task, the tasks of the plan it consumed from.
    upstream: dict[int, set[int]] = field(default_factory=dict)
    #: Task pks, wave by wave: each wave consumed only from earlier ones.
    waves: list[list[int]] = field(default_factory=list)

    @property
    def count(self) -> int:
        """How many task runs re-run, the root's included."""
        return sum(len(slots) for slots in self.runs.values())

    @property
    def stale(self) -> int:
        """How many consumer runs become stale (every run of the plan but the root's)."""
        return self.count - len(self.runs.get(self.root.pk, []))

    def as_dict(self) -> dict:
        def named(pk: int) -> dict:
            t = self.tasks[pk]
            entry = {
                "task": str(t.identity),
                "dag_id": t.dag_id,
                "task_id": t.task_id,
                "external": t.external,
                "slots": [s.isoformat() for s in self.runs[pk]],
                "consumes": sorted(str(self.tasks[u].identity) for u in self.upstream.get(pk, ())),
            }
            entry["kind"] = t.kind
            if pk != self.root.pk and t.kind in RUN_BY:
                entry[RUN_BY[t.kind][0]] = [t.rerun_command(s) for s in self.runs[pk]]
            return entry

        return {
            "task": str(self.root.identity),
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "task_runs": self.count,
            "stale_runs": self.stale,
            "waves": [[named(pk) for pk in wave] for wave in self.waves],
        }

    def format(self) -> str:
        """The plan as a person reads it: one line per task of each wave, then the owners' commands."""
        lines = [
            f"re-running {self.root.identity} from {self.start.isoformat()} to {self.end.isoformat()}: "
            f"{self.count} task runs in {len(self.waves)} waves ({len(self.runs.get(self.root.pk, []))} of "
            f"{self.root.identity}, {self.stale} stale consumer runs)"
        ]
        for n, wave in enumerate(self.waves, 1):
            lines.append(f"wave {n}:")
            for pk in wave:
                t, slots = self.tasks[pk], self.runs[pk]
                where = f"DAG {t.dag_id}" if t.kind == "dag" else WHERE[t.kind]
                span = slots[0].isoformat() if len(slots) == 1 else f"{slots[0].isoformat()} .. {slots[-1].isoformat()}"
                lines.append(f"  {t.identity} ({where}): {len(slots)} run(s), {span}")
        for kind, (_, heading) in RUN_BY.items():
            pks = [pk for wave in self.waves for pk in wave if self.tasks[pk].kind == kind and pk != self.root.pk]
            if pks:
                lines.append(heading)
                lines += [f"  {self.tasks[pk].rerun_command(s)}" for pk in pks for s in self.runs[pk]]
        return "\n".join(lines)


def plan_rerun(
    root: PlannedTask,
    start: dt.datetime,
    end: dt.datetime,
    root_slots: Iterable[dt.datetime],
    consumers: Callable[[Mapping[int, set[dt.datetime]]], Iterable[Consumed]],
    describe: Callable[[Iterable[int]], Mapping[int, PlannedTask]],
) -> RerunPlan:
    """The plan of re-running ``root_slots`` of ``root``.

    :param consumers: the uses of a frontier of runs (task pk -> slots): what consumed them.
    :param describe: the catalog tasks of some pks.
    """
    plan = RerunPlan(root, start, end, {root.pk: root})
    runs: dict[int, set[dt.datetime]] = {root.pk: set(root_slots)}
    frontier = {root.pk: set(runs[root.pk])}
    while frontier:
        reached: dict[int, set[dt.datetime]] = {}
        for use in consumers(frontier):
            if use.downstream_pk == use.upstream_pk and use.downstream_slot <= use.upstream_slot:
                continue  # a task's use of its own earlier run does not reach back
            plan.upstream.setdefault(use.downstream_pk, set()).add(use.upstream_pk)
            if use.downstream_slot not in runs.setdefault(use.downstream_pk, set()):
                runs[use.downstream_pk].add(use.downstream_slot)
                reached.setdefault(use.downstream_pk, set()).add(use.downstream_slot)
        frontier = reached
    plan.tasks.update(describe([pk for pk in runs if pk != root.pk]))
    plan.runs = {pk: sorted(slots) for pk, slots in runs.items() if slots}
    # The waves of the run-condition validation, over the plan's tasks named by their identities.
    name = {pk: str(plan.tasks[pk].identity) for pk in plan.runs}
    pk_of = {n: pk for pk, n in name.items()}
    nodes = {
        name[pk]: Node(name[pk], tuple(sorted(name[u] for u in plan.upstream.get(pk, ()) if u != pk and u in name)))
        for pk in plan.runs
    }
    try:
        plan.waves = [[pk_of[n] for n in wave] for wave in waves(nodes)]
    except DependencyCycleError as exc:  # each consumed the other's runs of different slots
        raise PlanApplyError(f"the plan's tasks cannot re-run one after another: {exc}") from None
    return plan


def backfill_ranges(slots: list[dt.datetime], schedule: list[dt.datetime]) -> list[tuple[dt.datetime, dt.datetime]]:
    """``slots`` (sorted) as the fewest ranges that hold no other slot of ``schedule`` (every slot of the
    task's schedule from the first to the last of ``slots``): a backfill re-runs every run of its range,
    so each range covers affected runs only."""
    wanted = set(slots)
    ranges: list[list[dt.datetime]] = []
    open_range = False
    for slot in sorted(set(schedule) | wanted):
        if slot in wanted:
            if open_range:
                ranges[-1][1] = slot
            else:
                ranges.append([slot, slot])
            open_range = True
        else:
            open_range = False
    return [(a, b) for a, b in ranges]
