"""What a drain does around each batch's dbt command: read the manifest once, decide which models to build
and which to reuse (:mod:`~airflow_leastaction.dbt.state`), and record every model in the catalog
(:mod:`~airflow_leastaction.dbt.model_tasks`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.dbt.manifest import ProjectGraph, file_checksums
from airflow_leastaction.dbt.model_tasks import ModelTasks
from airflow_leastaction.dbt.policy import ModelOutcome
from airflow_leastaction.dbt.queue_settle import PassRecord
from airflow_leastaction.dbt.queue_store import Batch, ClaimedRow, QueueStore
from airflow_leastaction.dbt.runner import DbtRunner, DbtSession
from airflow_leastaction.dbt.state import InputState, Judged
from airflow_leastaction.exceptions import ConfigurationError, DbtInvocationError
from airflow_leastaction.identity import TaskIdentity

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PassOptions:
    """How a drain treats the models it claims.

    :param state_aware: reuse a model whose code and inputs have not changed since its last build.
    :param record_catalog: record each model as a catalog task (built, reused or failed).
    :param source_tasks: source (``source_name.table`` or unique id) -> the catalog task loading it; wins
        over the source's ``meta.leastaction``.
    :param catalog_project: the catalog project of the models (default: the dbt project's name).
    :param default_project: the catalog project of a source mapping that names none.
    :param model_cron: each pass completes this cron's slot covering its request's slot (default: the
        request's slot itself).
    :param model_timezone: the timezone ``model_cron`` is read in.
    """

    state_aware: bool = True
    record_catalog: bool = True
    source_tasks: Mapping[str, TaskIdentity] = field(default_factory=dict)
    catalog_project: str | None = None
    default_project: str = "airflow"
    model_cron: str | None = None
    model_timezone: str = "UTC"

    def __post_init__(self):
        for source, task in self.source_tasks.items():
            if not isinstance(task, TaskIdentity):
                raise ConfigurationError(
                    f"source_tasks[{source!r}] must name a catalog task (airflow_task(...) or external_task(...)), "
                    f"got {task!r}"
                )


class Passes:
    """One drain's passes: :meth:`load` once, then :meth:`judge`, :meth:`started` and :meth:`settled` per batch."""

    def __init__(self, store: QueueStore, runner: DbtRunner, options: PassOptions):
        self.store, self.runner, self.options = store, runner, options
        self.state: InputState | None = None
        self.tasks: ModelTasks | None = None

    def load(self) -> None:
        """Read the manifest (``dbt parse``): a project dbt cannot parse fails the drain before any claim."""
        if not (self.options.state_aware or self.options.record_catalog):
            return
        with self.runner.session() as session:
            manifest = session.manifest()
        graph = ProjectGraph(manifest, self.runner.project_vars(), file_checksums(manifest))
        state = InputState(
            self.store.engine,
            graph,
            source_tasks=self.options.source_tasks,
            default_project=self.options.default_project,
            env=self.runner.environment(),
        )
        self.state = state if self.options.state_aware else None
        if self.options.record_catalog:
            mapped = {s: state.mapping(s).task for s in graph.all_sources}
            self.tasks = ModelTasks(
                CatalogStore(self.store.engine),
                graph,
                project=self.options.catalog_project,
                cron=self.options.model_cron,
                timezone=self.options.model_timezone,
                source_parents={s: t for s, t in mapped.items() if t is not None},
            )

    def judge(self, batch: Batch, session: DbtSession, steps: list[str]) -> Judged | None:
        """The reuse decisions of ``batch`` (None: every model is built). A command that writes nothing
        (``test``) is never reused."""
        if self.state is None or not batch.key.writes:
            return None
        loaded = {}
        wanted = self.state.freshness_sources(batch)
        if wanted:
            steps.append("source freshness")
            try:
                loaded = session.source_freshness(wanted)
            except DbtInvocationError as exc:  # its sources stay unknown: their models are built
                log.warning("dbt source freshness failed; models reading %s are built: %s", wanted, exc)
        judged = self.state.decide(batch, loaded)
        for uid, decision in sorted(judged.decisions.items()):
            log.info("%s %s: %s", "build" if decision.build else "reuse", uid, decision.reason)
        return judged

    def settle_reused(self, batch: Batch, judged: Judged | None) -> list[str]:
        """Settle the models that stand on an earlier build; returns their unique ids."""
        if judged is None or not judged.reused:
            return []
        self.store.settle_reused(batch, records(judged, judged.reused))
        return judged.reused

    def started(self, rows: Sequence[ClaimedRow]) -> None:
        if self.tasks is not None and rows:
            self.tasks.started(rows)

    def settled(self, batch: Batch, outcomes: Mapping[str, ModelOutcome], judged: Judged | None) -> None:
        if self.tasks is not None:
            reused = dict.fromkeys(judged.reused if judged else (), ModelOutcome.SUCCESS)
            self.tasks.settled(batch, {**outcomes, **reused}, judged.decisions if judged else {})


def records(judged: Judged | None, unique_ids) -> dict[str, PassRecord]:
    """The pass records of ``unique_ids`` (none without decisions)."""
    if judged is None:
        return {}
    return {u: PassRecord.of(judged.decisions[u], judged.codes.get(u)) for u in unique_ids if u in judged.decisions}
