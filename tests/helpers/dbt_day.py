"""A simulated day of dbt demand, shared by the state-aware benchmark (bench/bench_dbt_state.py) and its test.

* :func:`write_project`: a generated dbt-duckdb project, a layer of staging models (one per source), then
  layers that each read ``fanin`` models of the layer before; every model a table; each source a CSV file
  whose ``meta.leastaction`` names the catalog task that loads it.
* :func:`plan_day`: which sources receive new data each hour, and the pipelines: each requests the models
  downstream of a few sources (``source:x+``) on its own schedule (every N hours, from an offset).
* :func:`minimum_builds`: what must be built, from the manifest's parents and the day's changes alone: a
  requested model is built when one of its inputs changed since its last build (a source got new data, or
  a parent was built since). :func:`downstream_of_changes` counts the coarser "downstream of a source that
  changed since the model's last build".
* :func:`wrong_decisions`: every pass of the queue's history checked against :func:`minimum_builds`: a
  model built whose inputs had not changed, or reused whose inputs had.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

LAYERS = ("staging", "intermediate", "marts", "reports")
LOADER_PROJECT = "bench_ingest"
T0 = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)


def slot(hour: int) -> dt.datetime:
    return T0 + dt.timedelta(hours=hour)


def loader(source: str) -> tuple[str, str]:
    """(name, project) of the catalog task that loads ``source``."""
    return f"load_{source}", LOADER_PROJECT


def write_project(root: Path, *, sources: int = 20, layers=(20, 12, 8, 4), fanin=(1, 2, 2, 2), seed: int = 3) -> Path:
    """Write the project under ``root`` (``day/``); returns its directory."""
    rnd = random.Random(seed)
    project = root / "day"
    (project / "data").mkdir(parents=True)
    names = [f"s{i:02d}" for i in range(sources)]
    tables = []
    for name in names:
        (project / "data" / f"{name}.csv").write_text("id,value,loaded_hour\n0,1,-1\n")
        task, loader_project = loader(name)
        tables.append(
            f"      - name: {name}\n        meta:\n"
            f"          external_location: \"read_csv_auto('data/{name}.csv', header=true)\"\n"
            f"          leastaction: {{task: {task}, project: {loader_project}}}\n"
        )
    (project / "models" / "staging").mkdir(parents=True)
    (project / "models" / "staging" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: raw\n    tables:\n" + "".join(tables)
    )
    previous: list[str] = []
    for depth, (layer, count, reads) in enumerate(zip(LAYERS, layers, fanin, strict=True)):
        folder = project / "models" / layer
        folder.mkdir(parents=True, exist_ok=True)
        current = []
        for i in range(count):
            model = f"{layer[:3]}_{i:02d}"
            if depth == 0:
                body = f"select id, value, loaded_hour from {{{{ source('raw', '{names[i % sources]}') }}}}"
            else:
                parents = rnd.sample(previous, min(reads, len(previous)))
                body = "\nunion all\n".join(f"select id, value, loaded_hour from {{{{ ref('{p}') }}}}" for p in parents)
            (folder / f"{model}.sql").write_text(body + "\n")
            current.append(model)
        previous = current
    (project / "dbt_project.yml").write_text(
        'name: day\nversion: "1.0.0"\nconfig-version: 2\nprofile: day\nmodel-paths: ["models"]\n'
        "models:\n  day:\n    +materialized: table\n"
    )
    (project / "profiles.yml").write_text(
        "day:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      path: day.duckdb\n      threads: 4\n"
    )
    return project


def land(project: Path, source: str, hour: int, row_id: int) -> None:
    """New data in ``source``'s file: one row, loaded in ``hour``."""
    with (project / "data" / f"{source}.csv").open("a") as f:
        f.write(f"{row_id},{row_id % 97},{hour}\n")


@dataclass(frozen=True)
class Pipeline:
    name: str
    sources: tuple[str, ...]
    every: int  # hours
    offset: int

    def due(self, hour: int) -> bool:
        return hour >= self.offset and (hour - self.offset) % self.every == 0

    @property
    def selector(self) -> str:
        return " ".join(f"source:raw.{s}+" for s in self.sources)


@dataclass
class DayPlan:
    hours: int
    changes: dict[int, list[str]]  # hour -> the sources that receive new data in it
    pipelines: list[Pipeline] = field(default_factory=list)

    def due(self, hour: int) -> list[Pipeline]:
        return [p for p in self.pipelines if p.due(hour)]


def plan_day(
    sources: Iterable[str], *, hours: int = 24, pipelines: int = 20, schedules=(2, 3, 4, 6), share: float = 0.1,
    per_pipeline=(2, 3), seed: int = 7,
) -> DayPlan:  # fmt: skip
    """A day: ``share`` of the sources receive new data each hour; pipelines on ``schedules`` (hours)."""
    rnd = random.Random(seed)
    names = sorted(sources)
    changed = max(1, round(len(names) * share))
    plan = DayPlan(hours, {h: sorted(rnd.sample(names, changed)) for h in range(hours)})
    for i in range(pipelines):
        every = schedules[i % len(schedules)]
        chosen = tuple(sorted(rnd.sample(names, min(rnd.choice(per_pipeline), len(names)))))
        plan.pipelines.append(Pipeline(f"pipeline_{i:02d}", chosen, every, rnd.randrange(every)))
    return plan


def downstream(parents: Mapping[str, Iterable[str]], sources: Iterable[str]) -> set[str]:
    """The models downstream of ``sources`` (unique ids), from the manifest's parent map."""
    children: dict[str, set[str]] = {}
    for child, ps in parents.items():
        for p in ps:
            children.setdefault(p, set()).add(child)
    found, stack = set(), list(sources)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found and child.startswith("model."):
                found.add(child)
                stack.append(child)
    return found


def requested(plan: DayPlan, parents: Mapping[str, Iterable[str]], source_ids: Mapping[str, str], hour: int) -> set:
    return set().union(*(downstream(parents, [source_ids[s] for s in p.sources]) for p in plan.due(hour)))


def _upstream_first(models: set[str], parents: Mapping[str, Iterable[str]]) -> list[str]:
    order, done = [], set()

    def visit(m):
        if m in done:
            return
        done.add(m)
        for p in parents.get(m, ()):
            if p in models:
                visit(p)
        order.append(m)

    for m in sorted(models):
        visit(m)
    return order


def minimum_builds(plan: DayPlan, parents: Mapping[str, Iterable[str]], source_ids: Mapping[str, str]) -> set:
    """(hour, model) for every build the day needs: the model was requested that hour and one of its inputs
    (a source with new data, a parent built since) changed since its last build. Every model was built
    before the day."""
    version: dict[str, int] = {}  # input -> the hour it last changed (-1: before the day)
    consumed: dict[str, dict[str, int]] = {}
    needed = set()
    for hour in range(plan.hours):
        for s in plan.changes[hour]:
            version[source_ids[s]] = hour
        for model in _upstream_first(requested(plan, parents, source_ids, hour), parents):
            now = {p: version.get(p, -1) for p in parents.get(model, ())}
            if now != consumed.get(model, {p: -1 for p in now}):
                needed.add((hour, model))
                version[model] = hour
                consumed[model] = now
    return needed


def downstream_of_changes(plan: DayPlan, parents: Mapping[str, Iterable[str]], source_ids: Mapping[str, str]) -> int:
    """Requested models downstream of a source that changed since the model was last built (coarser: it
    counts a model whose changed source reaches it only through a model nobody requested)."""
    last_change = {s: -1 for s in source_ids.values()}
    built = {}
    count = 0
    for hour in range(plan.hours):
        for s in plan.changes[hour]:
            last_change[source_ids[s]] = hour
        for model in requested(plan, parents, source_ids, hour):
            upstream = [s for s in last_change if model in downstream(parents, [s])]
            if any(last_change[s] > built.get(model, -1) for s in upstream):
                built[model] = hour
                count += 1
    return count


def wrong_decisions(passes: Iterable[Mapping], needed: set, hour_of) -> dict[str, list]:
    """The queue's passes of the day against :func:`minimum_builds`: ``built_unchanged`` (built though its
    inputs had not changed) and ``skipped_changed`` (needed, but no pass built it: reused, or never
    passed). ``hour_of(row)`` is a pass's hour."""
    built = {(hour_of(r), r["unique_id"]) for r in passes if r["decision"] == "built"}
    return {"built_unchanged": sorted(built - needed), "skipped_changed": sorted(needed - built)}


# -- driving a queue through the day --------------------------------------------------------------------
KEY_ENVIRONMENT = "day"


def planned(manifest: Mapping, unique_ids: Iterable[str]) -> list:
    """The queue's model identities of ``unique_ids`` (what ``dbt ls`` of their selector resolves to)."""
    from airflow_leastaction.dbt.planner import PlannedModel

    nodes = manifest["nodes"]
    return [
        PlannedModel(u, nodes[u]["name"], ".".join(nodes[u]["fqn"]), "table", "standard") for u in sorted(unique_ids)
    ]


def worker(queue, runner, *, state_aware: bool):
    """A drain of the day's queue: no tier holds anything back; the dedup-only queue records no catalog."""
    from airflow_leastaction.dbt.passes import PassOptions
    from airflow_leastaction.dbt.policy import Tier, TierPolicy
    from airflow_leastaction.dbt.worker import QueueWorker

    options = PassOptions(state_aware=state_aware, record_catalog=state_aware)
    policy = TierPolicy(tiers=[Tier("standard", 20)])
    return QueueWorker(queue, runner, KEY_ENVIRONMENT, policy=policy, heartbeat_interval=5.0, passes=options)


def before_the_day(queue, runner, catalog, manifest: Mapping, *, state_aware: bool) -> None:
    """Every loader has reported, and the queue has built every model once."""
    from airflow_leastaction.dbt.policy import BatchKey
    from airflow_leastaction.identity import TaskIdentity

    for source in manifest["sources"].values():
        catalog.report_completion(TaskIdentity(*loader(source["name"])), slot(-1))
    models = [u for u in manifest["nodes"] if u.startswith("model.")]
    queue.enqueue(BatchKey(KEY_ENVIRONMENT), planned(manifest, models), "warm-up", slot=slot(-1))
    worker(queue, runner, state_aware=state_aware).drain()


def request_hour(queue, manifest: Mapping, plan: DayPlan, hour: int) -> int:
    """The requests of the pipelines due in ``hour``; returns how many."""
    from airflow_leastaction.dbt.policy import BatchKey

    parents, ids = manifest["parent_map"], source_ids(manifest)
    due = plan.due(hour)
    for pipeline in due:
        models = downstream(parents, [ids[s] for s in pipeline.sources])
        queue.enqueue(BatchKey(KEY_ENVIRONMENT), planned(manifest, models), pipeline.selector, slot=slot(hour))
    return len(due)


def source_ids(manifest: Mapping) -> dict[str, str]:
    """Source table name -> its unique id."""
    return {s["name"]: u for u, s in manifest["sources"].items()}


def hour_of(row: Mapping) -> int:
    """The hour of the day a pass served (its request's slot)."""
    return int((row["request_slot"] - T0) / dt.timedelta(hours=1))


def day_passes(queue) -> list[dict]:
    """The queue's finished passes of the day (not the ones before it)."""
    return [r for r in queue.history(KEY_ENVIRONMENT, limit=1_000_000) if r["request_slot"] >= T0]
