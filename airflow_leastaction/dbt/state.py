"""What a claimed batch's models stand on, read from the queue's history and the catalog, and the reuse
rule's decision for each (:mod:`airflow_leastaction.dbt.reuse`).

* A model input's version is its last pass that wrote its relation, in the same environment and target:
  the build it stands on when that pass succeeded (a reuse stands on the build it reused), the pass itself
  when its own test failed (the relation was written), unknown when the pass errored or none exists.
* A source's version is the newest completion of the catalog task loading it (its slot and revision), or
  the ``max_loaded_at`` of dbt source freshness where that is configured instead, else unknown.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.schema import identity_clause, in_chunks, task, task_run
from airflow_leastaction.dbt.manifest import ProjectGraph, SourceMapping
from airflow_leastaction.dbt.policy import ModelOutcome
from airflow_leastaction.dbt.queue_store import Batch
from airflow_leastaction.dbt.request_key import WRITING_COMMANDS
from airflow_leastaction.dbt.reuse import FORCED, FULL_REFRESH, Decision, LastBuild, Version, Wanted, building, decide
from airflow_leastaction.dbt.schema import dbt_queue
from airflow_leastaction.identity import TaskIdentity

q = dbt_queue.c
#: Pass outcomes that may have written the relation: what a reader of it stands on.
WROTE = (ModelOutcome.SUCCESS.value, ModelOutcome.TEST_FAILED.value, ModelOutcome.ERROR.value)


@dataclass(frozen=True)
class Judged:
    """The decisions of one batch, with the code identity each model was judged with."""

    decisions: dict[str, Decision]
    codes: dict[str, str | None]

    @property
    def reused(self) -> list[str]:
        return sorted(u for u, d in self.decisions.items() if not d.build)


class InputState:
    """Reads what a batch's models stand on and decides which to build.

    :param engine: the catalog database (queue history and catalog tasks live there).
    :param graph: the project's manifest.
    :param source_tasks: source (``source_name.table`` or unique id) -> the catalog task loading it; wins
        over the source's ``meta``.
    :param default_project: the catalog project of a ``meta`` mapping that names none.
    :param env: the environment dbt runs with (the values of ``env_var()`` in the code identity).
    """

    def __init__(
        self,
        engine: Engine,
        graph: ProjectGraph,
        *,
        source_tasks: Mapping[str, TaskIdentity] | None = None,
        default_project: str = "airflow",
        env: Mapping[str, str] | None = None,
    ):
        self.engine, self.graph = engine, graph
        self.source_tasks, self.default_project = dict(source_tasks or {}), default_project
        self.env = dict(env or {})

    def mapping(self, source: str) -> SourceMapping:
        return self.graph.source_mapping(source, self.source_tasks, self.default_project)

    def freshness_sources(self, batch: Batch) -> list[str]:
        """The sources (``source_name.table``) whose version only dbt source freshness can tell."""
        sources = {i for r in batch.rows for i in self._inputs(r.unique_id) if i in self.graph.sources}
        return sorted(self.graph.source_name(s) for s in sources if self.mapping(s).freshness)

    def decide(self, batch: Batch, freshness: Mapping[str, str | None] | None = None) -> Judged:
        """The reuse decision of every model of ``batch``; ``freshness``: source unique id -> max_loaded_at."""
        key = batch.key
        codes = {
            r.unique_id: self.graph.code_identity(r.unique_id, key.variables(), self.env)
            if r.unique_id in self.graph.nodes
            else None
            for r in batch.rows
        }
        wanted = [
            Wanted(r.unique_id, r.id, codes[r.unique_id], self._inputs(r.unique_id), _forced(r.force, key.full_refresh))
            for r in batch.rows
        ]
        inputs = {i for w in wanted for i in w.inputs}
        nodes = (inputs - set(self.graph.sources)) | {w.unique_id for w in wanted}
        with self.engine.connect() as conn:
            passes = last_writes(conn, key.environment, key.target, nodes)
            versions = {n: _model_version(passes.get(n), key.target) for n in nodes}
            versions |= self._source_versions(conn, inputs & set(self.graph.sources), freshness or {})
        last = {w.unique_id: _last_build(passes[w.unique_id]) for w in wanted if w.unique_id in passes}
        return Judged(decide(wanted, versions, last), codes)

    def _inputs(self, unique_id: str) -> tuple[str, ...]:
        return self.graph.inputs(unique_id) if unique_id in self.graph.nodes else ()

    def _source_versions(self, conn: Connection, sources: Iterable[str], loaded: Mapping) -> dict[str, Version]:
        out = {}
        for source in sorted(sources):
            mapping = self.mapping(source)
            if mapping.task is not None:
                out[source] = task_version(conn, mapping.task)
            elif mapping.freshness and loaded.get(source):
                out[source] = Version(f"loaded {loaded[source]}")
            elif mapping.freshness:
                out[source] = Version(None, "dbt source freshness could not tell when it was loaded")
            else:
                out[source] = Version(None, mapping.origin)
        return out


def _forced(force: bool, full_refresh: bool) -> str | None:
    return FORCED if force else FULL_REFRESH if full_refresh else None


def last_writes(conn: Connection, environment: str, target: str, unique_ids: Iterable[str]) -> dict:
    """Each model's newest finished pass that wrote (or tried to write) its relation in ``target``."""
    out = {}
    for chunk in in_chunks(sorted(set(unique_ids)), 500):
        newest = func.row_number().over(partition_by=q.unique_id, order_by=(q.finished_at.desc(), q.id.desc()))
        ranked = (
            select(q.id, q.unique_id, q.outcome, q.build_ref, q.inputs, newest.label("n"))
            .where(
                q.environment == environment,
                q.target == target,
                q.unique_id.in_(chunk),
                q.action.in_(sorted(WRITING_COMMANDS)),
                q.status.in_(("done", "failed")),
                q.outcome.in_(WROTE),
            )
            .subquery()
        )
        out.update({r.unique_id: r for r in conn.execute(select(ranked).where(ranked.c.n == 1))})
    return out


def _model_version(row, target: str) -> Version:
    if row is None:
        return Version(None, f"never built by the queue in target {target or '(default)'}")
    if row.outcome == ModelOutcome.ERROR.value:
        return Version(None, f"its last build (pass {row.id}) failed")
    if row.outcome == ModelOutcome.TEST_FAILED.value:
        return Version(building(row.id))
    return Version(building(row.build_ref or row.id))


def _last_build(row) -> LastBuild:
    recorded = json.loads(row.inputs) if row.inputs else {}
    return LastBuild(
        row.build_ref or row.id,
        row.outcome == ModelOutcome.SUCCESS.value,
        recorded.get("code"),
        recorded.get("consumed") or {},
    )


def task_version(conn: Connection, identity: TaskIdentity) -> Version:
    """The newest completion of catalog task ``identity``: its slot and output revision."""
    pk = conn.execute(select(task.c.id).where(*identity_clause(identity))).scalar()
    if pk is None:
        return Version(None, f"mapped task {identity} is not in the catalog")
    run = conn.execute(
        select(task_run.c.slot, task_run.c.output_revision)
        .where(task_run.c.task_pk == pk, task_run.c.state == "success")
        .order_by(task_run.c.finished_at.desc(), task_run.c.id.desc())
        .limit(1)
    ).first()
    if run is None:
        return Version(None, f"mapped task {identity} has completed no slot")
    return Version(f"{identity} {run.slot.isoformat()} r{run.output_revision}")
