"""Demand: a selector becomes queued model identities, and every request ends in a recorded outcome.

Shared by the enqueue operator and the CLI: plan with dbt, then merge into the queue (or record the no-op
or the planning failure).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from airflow_leastaction.dbt.planner import Planner, validate_selector
from airflow_leastaction.dbt.policy import exclusions_key
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.request_key import RESOURCE_TYPES, request_key
from airflow_leastaction.exceptions import DbtPlanningError


@dataclass
class DemandReport:
    """What one request did: what XCom and the CLI show."""

    request_id: str
    environment: str
    selector: str
    status: str  # queued | noop
    merged: dict[str, list[str]] = field(default_factory=dict)  # outcome -> unique ids
    excluded: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "request_id": self.request_id,
            "environment": self.environment,
            "selector": self.selector,
            "status": self.status,
            "merged": self.merged,
            "excluded": self.excluded,
        }


def submit(
    planner: Planner,
    store: QueueStore,
    environment: str,
    selector: str,
    *,
    command: str = "build",
    full_refresh: bool = False,
    dbt_vars: Mapping | str | None = None,
    exclude_selector: str | None = None,
    force: bool = False,
    slot: dt.datetime | None = None,
    mode: str = "default",
    requested_by: str | None = None,
) -> DemandReport:
    """Resolve ``selector`` with dbt and merge the models into ``environment``'s queue under the request's
    demand key (command and flags; the target is the planner's runner's).

    A request dbt would refuse raises :class:`DbtRequestError` before anything is recorded; a planning
    failure is recorded, then re-raised as :class:`DbtPlanningError`.
    """
    selector = validate_selector(selector)
    key = request_key(
        environment,
        command=command,
        full_refresh=full_refresh,
        dbt_vars=dbt_vars,
        exclude=exclude_selector,
        target=planner.runner.target,
        exclusions=exclusions_key(planner.exclude),
        mode=mode,
    )
    try:
        plan = planner.plan(selector, exclude=key.exclude, resource_type=RESOURCE_TYPES[key.action])
    except DbtPlanningError as exc:
        store.record_planning_failure(environment, selector, str(exc), requested_by=requested_by)
        raise
    result = store.enqueue(
        key,
        plan.models,
        selector,
        requested_by=requested_by,
        excluded_count=len(plan.excluded),
        force=force,
        slot=slot,
    )
    return DemandReport(
        result.request_id,
        environment,
        selector,
        "noop" if plan.is_noop else "queued",
        result.by_outcome() if not plan.is_noop else {},
        [m.unique_id for m in plan.excluded],
    )
