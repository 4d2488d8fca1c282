"""The gate engine: judgements of single dependencies combined under a run condition. Pure logic.

Every gate in the product (``ParentIntervalSensor`` and the run-condition gate) works the same way:
each dependency is *judged* into a :class:`Judgement`, then :func:`decide` combines the judgements under
a :class:`RunCondition` into ADMIT, WAIT or SKIP. Judgements carry what the audit trail needs: the
upstream run and output revision selected, and a reason a person can act on.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from typing import Iterable

from airflow_leastaction.exceptions import ConfigurationError


class DependencyType(str, enum.Enum):
    """What outcome of the upstream a dependency waits for."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    ALWAYS = "ALWAYS"
    HAS_DATA = "HAS_DATA"

    @classmethod
    def parse(cls, value: "DependencyType | str") -> "DependencyType":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).upper())
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise ConfigurationError(f"unknown dependency type {value!r}; expected one of {names}") from None


class DecisionResult(str, enum.Enum):
    SATISFIED = "SATISFIED"
    UNSATISFIED = "UNSATISFIED"
    BYPASSED = "BYPASSED"


class Verdict(str, enum.Enum):
    ADMIT = "ADMIT"  # the condition holds: run the task
    WAIT = "WAIT"  # not yet: look again later
    SKIP = "SKIP"  # can never hold in this run


@dataclass(frozen=True)
class RunCondition:
    """How many dependencies must be satisfied: ``ALL`` (default), ``ANY``, or ``N`` with ``count``."""

    kind: str = "ALL"
    count: int | None = None

    def __post_init__(self):
        kind = (self.kind or "ALL").upper()
        object.__setattr__(self, "kind", kind)
        if kind not in ("ALL", "ANY", "N"):
            raise ConfigurationError(f"unknown run condition {self.kind!r}; expected ALL, ANY or N")
        if kind != "N" and self.count is not None:
            raise ConfigurationError(f"run condition {kind} takes no count (got count={self.count}); use N")
        if kind == "N" and (not isinstance(self.count, int) or self.count < 1):
            raise ConfigurationError(f"run condition N needs a count of at least 1, got {self.count!r}")

    def needed(self, total: int) -> int:
        if self.kind == "ALL":
            return total
        if self.kind == "ANY":
            return min(1, total)
        return self.count  # type: ignore[return-value]

    def check_total(self, total: int, owner: str) -> None:
        """Reject an N count no number of satisfied dependencies could reach."""
        if self.kind == "N" and self.count > total:  # type: ignore[operator]
            raise ConfigurationError(
                f"{owner}: run condition N needs {self.count} satisfied dependencies but it has only {total}"
            )

    def __str__(self) -> str:
        return f"N={self.count}" if self.kind == "N" else self.kind


ALL = RunCondition("ALL")
ANY = RunCondition("ANY")


@dataclass(frozen=True)
class Judgement:
    """One dependency judged once.

    ``final`` says the judgement cannot change any more in this attempt (the upstream finished for good);
    ``rejected`` says the upstream is in a failed state (it may still be retried or repaired).
    """

    dependency: str
    satisfied: bool
    reason: str
    dependency_type: DependencyType = DependencyType.SUCCESS
    final: bool = False
    rejected: bool = False
    upstream_task_pk: int | None = None
    upstream_run_pk: int | None = None
    upstream_slot: dt.datetime | None = None
    upstream_revision: int | None = None

    def as_event(self) -> dict:
        """A JSON-safe form, for trigger events and XCom."""
        return {
            "dependency": self.dependency,
            "satisfied": self.satisfied,
            "reason": self.reason,
            "dependency_type": self.dependency_type.value,
            "final": self.final,
            "rejected": self.rejected,
            "upstream_task_pk": self.upstream_task_pk,
            "upstream_run_pk": self.upstream_run_pk,
            "upstream_slot": self.upstream_slot.isoformat() if self.upstream_slot else None,
            "upstream_revision": self.upstream_revision,
        }

    @classmethod
    def from_event(cls, data: dict) -> "Judgement":
        slot = data.get("upstream_slot")
        return cls(
            dependency=data["dependency"],
            satisfied=data["satisfied"],
            reason=data["reason"],
            dependency_type=DependencyType(data.get("dependency_type", "SUCCESS")),
            final=data.get("final", False),
            rejected=data.get("rejected", False),
            upstream_task_pk=data.get("upstream_task_pk"),
            upstream_run_pk=data.get("upstream_run_pk"),
            upstream_slot=dt.datetime.fromisoformat(slot) if slot else None,
            upstream_revision=data.get("upstream_revision"),
        )


@dataclass(frozen=True)
class GateOutcome:
    verdict: Verdict
    condition: RunCondition
    judgements: tuple[Judgement, ...] = field(default_factory=tuple)

    @property
    def satisfied_count(self) -> int:
        return sum(1 for j in self.judgements if j.satisfied)

    @property
    def waiting_reasons(self) -> list[str]:
        return [j.reason for j in self.judgements if not j.satisfied]

    def summary(self) -> str:
        total = len(self.judgements)
        head = f"{self.verdict.value}: {self.satisfied_count}/{total} satisfied, needs {self.condition}"
        reasons = self.waiting_reasons
        return head if not reasons else head + "; " + "; ".join(reasons)


def decide(condition: RunCondition, judgements: Iterable[Judgement]) -> GateOutcome:
    """Combine judgements: ADMIT once enough are satisfied, SKIP once enough can never be, else WAIT.

    A gate with no dependencies admits at once.
    """
    judged = tuple(judgements)
    needed = condition.needed(len(judged))
    satisfied = sum(1 for j in judged if j.satisfied)
    if satisfied >= needed:
        return GateOutcome(Verdict.ADMIT, condition, judged)
    still_possible = satisfied + sum(1 for j in judged if not j.satisfied and not j.final)
    verdict = Verdict.SKIP if still_possible < needed else Verdict.WAIT
    return GateOutcome(verdict, condition, judged)
