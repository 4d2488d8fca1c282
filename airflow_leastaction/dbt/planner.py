"""Resolve a dbt selector into model identities by asking dbt (``dbt ls``), never by walking the graph."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_leastaction.dbt.policy import TierPolicy, exclusions_key
from airflow_leastaction.exceptions import DbtInvocationError, DbtPlanningError

if TYPE_CHECKING:  # the planner asks the runner it is given; the queue store reads its plans without dbt
    from airflow_leastaction.dbt.runner import DbtRunner

DEFAULT_EXCLUDED = ("view",)


@dataclass(frozen=True)
class PlannedModel:
    """One model identity a selector resolved to."""

    unique_id: str
    name: str
    fqn: str  # dotted fully qualified name, what the worker passes to ``--select``
    materialized: str
    tier: str


@dataclass(frozen=True)
class Plan:
    """The models to queue for one selector, and the ones the exclusions removed."""

    selector: str
    models: tuple[PlannedModel, ...]
    excluded: tuple[PlannedModel, ...] = field(default=())
    exclusions: str = "view"

    @property
    def is_noop(self) -> bool:
        """True when the selector matched models but every one was excluded (a successful no-op)."""
        return not self.models


def validate_selector(selector: object) -> str:
    if not isinstance(selector, str) or not selector.strip():
        raise DbtPlanningError(str(selector), "a selector must be a non-empty string, e.g. 'source:shop.orders+'")
    return selector.strip()


def _no_nodes(output: str) -> bool:
    return "does not match any enabled nodes" in output or "NoNodesForSelectionCriteria" in output


def plan_from_listing(selector: str, listing: Iterable[dict], exclude: Sequence[str], tiers: TierPolicy) -> Plan:
    """Turn ``dbt ls`` JSON lines into a plan (pure: tested without dbt)."""
    excluded_mats = exclusions_key(exclude)
    keep, dropped = [], []
    for node in listing:
        config = node.get("config") or {}
        if config.get("enabled") is False:
            continue
        model = PlannedModel(
            unique_id=node["unique_id"],
            name=node["name"],
            fqn=".".join(node["fqn"]),
            materialized=str(config.get("materialized") or "table"),
            tier=tiers.tier_for(node["unique_id"], node["name"], config.get("meta")),
        )
        (dropped if model.materialized.lower() in excluded_mats.split(",") else keep).append(model)
    keep.sort(key=lambda m: m.unique_id)
    dropped.sort(key=lambda m: m.unique_id)
    return Plan(selector, tuple(keep), tuple(dropped), excluded_mats)


class Planner:
    """Resolve selectors with ``dbt ls`` and apply the queue's exclusions.

    :param runner: the project's dbt runner.
    :param exclude: materializations left out of the queue (default: views; they need no rebuild when
        data changes).
    :param tiers: tier policy read from each model's ``meta.tier``.
    """

    def __init__(self, runner: DbtRunner, exclude: Sequence[str] = DEFAULT_EXCLUDED, tiers: TierPolicy | None = None):
        self.runner = runner
        self.exclude = tuple(exclude)
        self.tiers = tiers or TierPolicy()

    def plan(self, selector: str, *, exclude: str = "", resource_type: str = "model") -> Plan:
        """Resolve ``selector`` (less dbt's ``exclude`` selector) into nodes of ``resource_type``. Raises
        :class:`DbtPlanningError` when it matches no enabled node."""
        selector = validate_selector(selector)
        with self.runner.session() as session:
            try:
                listing = session.list_models(selector, exclude=exclude, resource_type=resource_type)
            except DbtInvocationError as exc:
                why = "it matches no enabled dbt node" if _no_nodes(exc.output) else f"dbt ls failed: {exc}"
                raise DbtPlanningError(selector, why) from exc
        return plan_from_listing(selector, listing, self.exclude, self.tiers)
