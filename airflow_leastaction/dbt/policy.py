"""Queue policy: how demand merges, which rows may share a batch, freshness tiers, failure classes.

Pure logic: no Airflow, no SQLAlchemy, no dbt. The store and the worker apply these rules.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from airflow_leastaction.dbt.request_key import BatchKey


class Outcome(str, enum.Enum):
    """What one model request did to the active queue."""

    NEW_PENDING = "new_pending"
    ALREADY_PENDING = "already_pending"
    ALREADY_RUNNING = "already_running"


def merge_outcome(active_status: str | None) -> Outcome:
    """The outcome of a request for a model whose active row has ``active_status`` (None: no active row)."""
    if active_status is None:
        return Outcome.NEW_PENDING
    if active_status == "pending":
        return Outcome.ALREADY_PENDING
    if active_status == "running":
        return Outcome.ALREADY_RUNNING
    raise ValueError(f"{active_status!r} is not an active queue status (pending or running)")


def outcome_after_upsert(request_count: int, status: str) -> Outcome:
    """Read the outcome back from an upsert's returned row.

    An inserted row has ``request_count == 1``; a merged one has more, and its status tells whether the
    model was waiting or already being built.
    """
    if request_count == 1 and status == "pending":
        return Outcome.NEW_PENDING
    return merge_outcome(status)


def exclusions_key(materializations: Iterable[str]) -> str:
    """Canonical text of the excluded materializations (order and case do not matter)."""
    return ",".join(sorted({m.strip().lower() for m in materializations if m.strip()}))


def compatible(a: BatchKey, b: BatchKey) -> bool:
    """Rows share one dbt command only when their demand keys are equal (see :mod:`request_key`)."""
    return a == b


# -- freshness tiers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    """A freshness tier.

    :param name: the tier name models carry in ``meta.tier``.
    :param priority: higher runs first.
    :param min_interval: a model is not rebuilt sooner than this after its last build.
    :param aging: every ``aging`` of waiting adds one priority point, so low tiers cannot starve.
    """

    name: str
    priority: int
    min_interval: dt.timedelta = dt.timedelta(0)
    aging: dt.timedelta = dt.timedelta(minutes=10)

    def __post_init__(self):
        if self.aging <= dt.timedelta(0):
            raise ValueError(f"tier {self.name!r}: aging must be positive, got {self.aging}")
        if self.min_interval < dt.timedelta(0):
            raise ValueError(f"tier {self.name!r}: min_interval must not be negative, got {self.min_interval}")


DEFAULT_TIERS = (
    Tier("fast", priority=30, min_interval=dt.timedelta(0), aging=dt.timedelta(minutes=5)),
    Tier("standard", priority=20, min_interval=dt.timedelta(minutes=5), aging=dt.timedelta(minutes=10)),
    Tier("historical", priority=10, min_interval=dt.timedelta(hours=1), aging=dt.timedelta(minutes=10)),
)


@dataclass(frozen=True)
class Candidate:
    """A pending row as the batch planner sees it."""

    id: int
    key: BatchKey
    tier: str
    first_requested_at: dt.datetime
    last_built_at: dt.datetime | None = None


@dataclass(frozen=True)
class TierPolicy:
    """Tier lookup plus the batch planner. ``mapping`` (model name or unique id -> tier) overrides meta."""

    tiers: Sequence[Tier] = DEFAULT_TIERS
    default: str = "standard"
    mapping: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        names = [t.name for t in self.tiers]
        if self.default not in names:
            raise ValueError(f"default tier {self.default!r} is not one of {names}")
        unknown = sorted(set(self.mapping.values()) - set(names))
        if unknown:
            raise ValueError(f"tier mapping names unknown tiers {unknown}; known: {names}")

    def tier(self, name: str) -> Tier:
        for t in self.tiers:
            if t.name == name:
                return t
        return self.tier(self.default)

    def tier_for(self, unique_id: str, name: str, meta: Mapping | None) -> str:
        """The tier of a model: the mapping first, then ``meta.tier``, then the default."""
        for key in (unique_id, name):
            if key in self.mapping:
                return self.mapping[key]
        wanted = (meta or {}).get("tier")
        return wanted if wanted in {t.name for t in self.tiers} else self.default

    def eligible_at(self, candidate: Candidate) -> dt.datetime | None:
        """When the candidate may run (None: now). Honors the tier's minimum interval."""
        if candidate.last_built_at is None:
            return None
        return candidate.last_built_at + self.tier(candidate.tier).min_interval

    def effective_priority(self, candidate: Candidate, now: dt.datetime) -> float:
        tier = self.tier(candidate.tier)
        waited = max((now - candidate.first_requested_at).total_seconds(), 0.0)
        return tier.priority + math.floor(waited / tier.aging.total_seconds())

    def plan_batch(self, candidates: Iterable[Candidate], now: dt.datetime, max_size: int) -> list[Candidate]:
        """Pick one batch: the most urgent eligible row and the compatible eligible rows behind it."""
        if max_size < 1:
            raise ValueError(f"max batch size must be at least 1, got {max_size}")
        eligible = [c for c in candidates if (self.eligible_at(c) or now) <= now]
        if not eligible:
            return []
        ranked = sorted(eligible, key=lambda c: (-self.effective_priority(c, now), c.first_requested_at, c.id))
        head = ranked[0]
        return [c for c in ranked if compatible(c.key, head.key)][:max_size]

    def next_eligible(self, candidates: Iterable[Candidate], now: dt.datetime) -> dt.datetime | None:
        """The earliest time a waiting candidate becomes eligible (None: nothing is waiting)."""
        times = [t for t in (self.eligible_at(c) for c in candidates) if t is not None and t > now]
        return min(times) if times else None


# -- results and failures -------------------------------------------------------------------------


class FailureKind(str, enum.Enum):
    CONFLICT = "conflict"  # another writer held or changed the table: rerun the selection
    OTHER = "other"  # anything else: dbt retry on the failed nodes


#: Messages of write conflicts: DuckDB's file lock, Delta Lake's optimistic-concurrency exceptions.
CONFLICT_PATTERNS = re.compile(
    r"Could not set lock on file|Conflicting lock is held"
    r"|ConcurrentAppendException|ConcurrentDeleteReadException"
    r"|ConcurrentDeleteDeleteException|ConcurrentTransactionException|MetadataChangedException"
    r"|ProtocolChangedException|concurrent (?:write|update|append)",
    re.IGNORECASE,
)


def classify_failure(messages: Iterable[str]) -> FailureKind:
    """CONFLICT when any message shows a concurrent-write or lock conflict, else OTHER."""
    return FailureKind.CONFLICT if any(CONFLICT_PATTERNS.search(m or "") for m in messages) else FailureKind.OTHER


class ModelOutcome(str, enum.Enum):
    """How one model of a batch ended."""

    SUCCESS = "success"
    TEST_FAILED = "test_failed"  # the model was built but one of its own tests failed (or errored)
    ERROR = "error"
    UPSTREAM_FAILED = "upstream_failed"  # dbt skipped it because something it depends on failed
    NOT_RUN = "not_run"  # the batch ended (crash, interruption) before dbt reached it


#: Outcomes that end a row's active life (it becomes history); the rest return to pending.
FINAL_OUTCOMES = frozenset(
    {ModelOutcome.SUCCESS, ModelOutcome.TEST_FAILED, ModelOutcome.ERROR, ModelOutcome.UPSTREAM_FAILED}
)


def model_outcomes(
    models: Iterable[str], statuses: Mapping[str, str], tests_of: Mapping[str, Sequence[str]]
) -> dict[str, ModelOutcome]:
    """Judge each model from dbt's node statuses.

    A model whose own test failed counts as TEST_FAILED: its table was written, but dbt build treats the
    test as a gate (its descendants are skipped), so the queue does not report it as built.

    :param models: unique ids of the batch's models.
    :param statuses: unique id -> dbt status (success, error, fail, warn, pass, skipped, ...).
    :param tests_of: model unique id -> unique ids of the tests attached to it.
    """
    result = {}
    for uid in models:
        status = statuses.get(uid)
        if status is None:
            result[uid] = ModelOutcome.NOT_RUN
        elif status == "error":
            result[uid] = ModelOutcome.ERROR
        elif status == "skipped":
            result[uid] = ModelOutcome.UPSTREAM_FAILED
        elif any(statuses.get(t) in ("fail", "error") for t in tests_of.get(uid, ())):
            result[uid] = ModelOutcome.TEST_FAILED
        else:
            result[uid] = ModelOutcome.SUCCESS
    return result


@dataclass(frozen=True)
class Settlement:
    """Where a claimed row goes after its batch.

    :param status: the row's new status: ``done`` or ``failed`` (history), or ``pending`` (claimed again).
    :param follow_up: requests arrived while the row was being built: a new pending row carries them,
        for exactly one more pass.
    """

    status: str
    follow_up: bool = False


def row_status_after(
    outcome: ModelOutcome, requested_while_running: bool, attempts: int = 1, max_attempts: int = 3
) -> Settlement:
    """Where a claimed row goes after its batch.

    A finished pass becomes history as it ended (done or failed), whatever arrived meanwhile: a failure is
    never hidden by a request that came during it. When requests arrived during the pass, one follow-up
    pass is owed (a new pending row), since the pass may not have seen their data. A row that did not
    finish returns to pending (its next pass sees the new data) until it has been claimed ``max_attempts``
    times in a row without finishing; then it fails rather than loop forever.
    """
    if outcome in FINAL_OUTCOMES:
        return Settlement("done" if outcome is ModelOutcome.SUCCESS else "failed", requested_while_running)
    if attempts >= max_attempts:
        return Settlement("failed", requested_while_running)
    return Settlement("pending")
