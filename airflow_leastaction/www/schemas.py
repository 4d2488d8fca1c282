"""Response models of the UI's JSON endpoints (one module, as the pages render the same data)."""

from __future__ import annotations

import datetime as dt
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel

T = TypeVar("T")

DecisionResultLiteral = Literal["SATISFIED", "UNSATISFIED", "BYPASSED", "MISSING"]


class Listing(BaseModel, Generic[T]):
    """One page of a list, newest first; pass ``next_cursor`` back as ``cursor`` for the next page."""

    items: list[T]
    next_cursor: str | None = None


class _AttemptRecord(BaseModel):
    """What decisions and consumption records share: the downstream attempt and the dependency."""

    id: int
    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    attempt: int
    downstream_slot: dt.datetime | None
    dependency: str


class Decision(_AttemptRecord):
    dependency_type: str
    upstream_task_pk: int | None
    upstream_run_pk: int | None
    upstream_slot: dt.datetime | None
    upstream_revision: int | None
    result: str
    reason: str
    decided_at: dt.datetime


class DeadlineWarning(BaseModel):
    """An early warning of the attempt's run: its expected p90 passed the gate's deadline while it waited."""

    deadline: dt.datetime
    #: warned | cleared (the expectation came back at or before the deadline)
    state: str
    expected_median: dt.datetime | None
    expected_p90: dt.datetime | None
    #: The tasks it waited on, nearest first: "feed_it, which waits on ingest".
    critical_path: str | None
    #: "called", "no callback", or the callback's error.
    callback_outcome: str | None
    warned_at: dt.datetime
    updated_at: dt.datetime


class Attempt(BaseModel):
    """One gate attempt with its verdict: the condition, how many dependencies were met, the outcome."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int
    attempt: int
    #: admitted | bypassed | degraded | skipped | decided | waiting | failed | not judged
    outcome: str
    headline: str
    condition: str
    met: int
    total: int
    at: dt.datetime | None
    since: dt.datetime | None
    deadline: dt.datetime | None
    next_look: dt.datetime | None
    why: str
    #: The tasks this attempt admits.
    gated: list[str]
    decisions: list[Decision]
    #: Early warnings of its run before the gate's deadline, newest deadline first.
    warnings: list[DeadlineWarning] = []


class Consumption(_AttemptRecord):
    decision_id: int
    upstream_task_pk: int | None
    upstream_name: str | None
    upstream_project: str | None
    upstream_slot: dt.datetime | None
    upstream_revision: int | None
    current_revision: int | None
    stale: bool
    consumed_at: dt.datetime
    #: The upstream belongs to a DAG the caller may not read: every upstream field is left empty.
    withheld: bool = False
    #: SATISFIED, or MISSING: the task ran degraded without this upstream slot (its revision then, 0).
    result: str = "SATISFIED"


class Identity(BaseModel):
    name: str
    project: str
    account: str = ""
    partition: str = ""


class Slot(BaseModel):
    slot: dt.datetime
    state: str
    attempt: int
    run_id: str | None
    output_revision: int
    repair_pending: bool
    rows_written: int | None
    #: Why ``rows_written`` is unknown: the task's count could not be read (None: read, or nothing reported).
    rows_error: str | None = None
    finished_at: dt.datetime | None


class PublishedAsset(BaseModel):
    """An asset a deployment publishes the task to, and the last slot its watcher published."""

    deployment: str
    name: str
    uri: str
    key_format: str
    last_slot: dt.datetime | None
    last_revision: int | None
    last_emitted_at: dt.datetime | None


class CatalogTask(BaseModel):
    id: int
    name: str
    project: str
    account: str
    partition: str
    source: str
    cron: str | None
    timezone: str
    granularity: str | None
    state: str | None
    logical_date: dt.datetime | None
    watermark: dt.datetime | None
    dag_id: str | None
    task_id: str | None
    parents: list[Identity]
    #: Declared parents left out: tasks of DAGs the caller may not read.
    withheld_parents: int = 0
    recent_slots: list[Slot]
    #: The assets the task is published to.
    assets: list[PublishedAsset] = []
    updated_at: dt.datetime


class GraphNode(BaseModel):
    task_pk: int | None
    identity: Identity
    label: str
    depth: int
    state: str
    in_catalog: bool
    source: str | None = None  # airflow, external, or dbt (a model the dbt queue builds)


class GraphEdge(BaseModel):
    parent: str
    child: str
    satisfied: bool
    rejected: bool
    reason: str


class Graph(BaseModel):
    interval: dt.datetime
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool
    #: How many tasks were left out because they belong to DAGs the caller may not read.
    withheld: int = 0


class QueueRow(BaseModel):
    id: int
    unique_id: str
    status: str
    tier: str
    request_count: int
    requested_while_running: bool
    first_requested_at: dt.datetime
    last_requested_at: dt.datetime
    batch_id: str | None
    owner: str | None
    heartbeat_at: dt.datetime | None


class OutcomeHour(BaseModel):
    hour: dt.datetime
    new_pending: int
    already_pending: int
    already_running: int


class QueueBatch(BaseModel):
    id: str
    status: str
    owner: str
    model_count: int
    claimed_at: dt.datetime
    heartbeat_at: dt.datetime
    finished_at: dt.datetime | None
    exit_code: int | None
    message: str | None
    built_count: int | None = None
    reused_count: int | None = None


class QueuePass(BaseModel):
    """A finished pass of a model: built or reused (the build it stands on), and why."""

    id: int
    unique_id: str
    status: str
    outcome: str | None
    decision: str | None
    reason: str | None
    message: str | None
    batch_id: str | None
    build_ref: int | None
    finished_at: dt.datetime | None


class RequestEvent(BaseModel):
    id: int
    request_id: str
    unique_id: str
    selector: str
    outcome: str
    requested_by: str | None
    requested_at: dt.datetime


class Queue(BaseModel):
    environments: list[str]
    environment: str | None
    active: list[QueueRow]
    outcomes: list[OutcomeHour]
    batches: list[QueueBatch]
    events: list[RequestEvent]
    passes: list[QueuePass] = []
    today: dict[str, int] = {}


class DagDependencyEdge(BaseModel):
    """One dependency of a DAG's graph: ``parent`` and ``child`` are node keys (``task:<task_id>``,
    ``catalog:<project>/<name>``, ``dbt:<environment>[:<selector>]``)."""

    parent: str
    child: str
    #: SUCCESS / FAILURE / ALWAYS / HAS_DATA, interval, requests / builds (dbt), airflow (a plain edge)
    kind: str
    #: the state in the judged run: a decision result, an Airflow state, or the catalog's judgement
    state: str | None
    reason: str


class DagDependencies(BaseModel):
    run_id: str | None
    slot: dt.datetime | None
    #: Plumbing tasks not drawn (gates, the run-outcome task); ``internal=true`` draws them.
    hidden: int
    edges: list[DagDependencyEdge]


class PathStep(BaseModel):
    """One step of an expectation's critical path: a task's slot not yet complete."""

    task: str
    slot: dt.datetime


class Eta(BaseModel):
    """When a task's slot is expected to be done (see the Expected times guide)."""

    task: str
    slot: dt.datetime
    #: complete | running | waiting | no_estimate
    status: str
    median: dt.datetime | None
    p90: dt.datetime | None
    reason: str
    #: The line the pages show, times of day in Airflow's default timezone.
    line: str
    critical_path: list[PathStep]
    runs: int
    skewed: int
