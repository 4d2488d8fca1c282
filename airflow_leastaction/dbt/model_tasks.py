"""dbt models as catalog tasks: each model a drain builds or reuses completes a slot of its catalog task, so a
``ParentIntervalSensor`` or a run condition can wait on it, and declares its inputs as its parents, so the
lineage shows dbt models among the catalog's tasks.

* **Identity**: ``(<model name>, <catalog project>)``; the catalog project defaults to the dbt project's
  name (a model of another package is ``<package>.<name>``).
* **Slot**: the newest slot its requests asked for (an enqueue in an Airflow run asks for its run's slot;
  one without a slot, for the time it was made); with a ``cron``, that cron's slot covering it.
* **Revision**: a build completes its slot with a new output revision (1 the first time, +1 when the slot
  is completed again: a repair). A **reuse completes its slot too**, as an output of the build it stands
  on: a slot that build already completed keeps its revision (the output has not changed), any other slot
  is completed like a build's. A failed pass fails its slot; a model being built runs its slot.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping

from airflow_leastaction.catalog.store import CatalogStore, TaskMeta, utcnow
from airflow_leastaction.dbt.manifest import ProjectGraph
from airflow_leastaction.dbt.policy import ModelOutcome
from airflow_leastaction.dbt.queue_store import Batch, ClaimedRow
from airflow_leastaction.dbt.reuse import Decision
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.slots import expected_slot

log = logging.getLogger(__name__)
#: The catalog ``source`` of a dbt model's task.
DBT_SOURCE = "dbt"
#: A pass's catalog state, by its outcome (a success completes the slot; not_run leaves it running).
SLOT_STATES = {
    ModelOutcome.TEST_FAILED: "failed",
    ModelOutcome.ERROR: "failed",
    ModelOutcome.UPSTREAM_FAILED: "upstream_failed",
}


def build_run_id(build_ref: int) -> str:
    """The catalog run of a model's slot completed by build ``build_ref`` (or by a reuse of it)."""
    return f"dbt-build:{build_ref}"


class ModelTasks:
    """Records a batch's models in the catalog.

    :param store: the catalog store.
    :param graph: the project's manifest (names and declared parents); None: names only, no parents.
    :param project: the catalog project of the models (default: the dbt project's name).
    :param cron: the models' schedule: each pass completes the slot of this cron covering its request's slot.
    :param timezone: the timezone ``cron`` is read in.
    :param source_parents: source unique id -> the catalog task loading it (declared as a parent).
    """

    def __init__(
        self,
        store: CatalogStore,
        graph: ProjectGraph | None,
        *,
        project: str | None = None,
        cron: str | None = None,
        timezone: str = "UTC",
        source_parents: Mapping[str, TaskIdentity] | None = None,
    ):
        self.store, self.graph = store, graph
        self.project = project or (graph.project_name if graph else "") or "dbt"
        self.meta = TaskMeta(cron=cron, timezone=timezone, source=DBT_SOURCE)
        self.source_parents = dict(source_parents or {})

    def identity(self, unique_id: str) -> TaskIdentity:
        name = self.graph.catalog_name(unique_id) if self.graph else unique_id.split(".", 2)[-1]
        return TaskIdentity(name, self.project)

    def slot(self, row: ClaimedRow, at: dt.datetime) -> dt.datetime:
        wanted = row.request_slot or at
        if self.meta.cron is None:
            return wanted
        return expected_slot(self.meta.cron, wanted, timezone=self.meta.timezone)

    def parents(self, unique_id: str) -> list[TaskIdentity]:
        if self.graph is None or unique_id not in self.graph.nodes:
            return []
        found = []
        for i in self.graph.inputs(unique_id):
            if i in self.graph.nodes:
                found.append(self.identity(i))
            elif i in self.source_parents:
                found.append(self.source_parents[i])
        return sorted(set(found))

    def started(self, rows: Iterable[ClaimedRow], *, at: dt.datetime | None = None) -> None:
        at = at or utcnow()
        for row in rows:
            self.store.record_running(self.identity(row.unique_id), self.slot(row, at), meta=self.meta, at=at)

    def settled(
        self,
        batch: Batch,
        outcomes: Mapping[str, ModelOutcome],
        decisions: Mapping[str, Decision],
        *,
        at: dt.datetime | None = None,
    ) -> None:
        """Record each settled model of ``batch``: ``outcomes`` of the built ones, ``decisions`` of all."""
        at = at or utcnow()
        for row in batch.rows:
            outcome = outcomes.get(row.unique_id)
            if outcome is None or outcome is ModelOutcome.NOT_RUN:
                continue
            identity, slot = self.identity(row.unique_id), self.slot(row, at)
            self.store.declare_parents(identity, self.meta, self.parents(row.unique_id))
            if outcome is ModelOutcome.SUCCESS:
                decision = decisions.get(row.unique_id)
                build_ref = decision.build_ref if decision else row.id
                self.store.record_success(identity, slot, meta=self.meta, run_id=build_run_id(build_ref), at=at)
            else:
                self.store.record_finished(
                    identity, slot, SLOT_STATES[outcome], meta=self.meta, run_id=build_run_id(row.id), at=at
                )
