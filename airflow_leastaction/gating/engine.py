"""The gate engine: judgements of single dependencies combined under a run condition. Pure logic.

Every gate in the product (``ParentIntervalSensor`` and the run-condition gate) works the same way:
each dependency is *judged* into a :class:`Judgement`, then :func:`decide` combines the judgements under
a :class:`RunCondition` into ADMIT, WAIT or SKIP. Judgements carry what the audit trail needs: the
upstream run and output revision selected, and a reason a person can act on.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from airflow_leastaction.exceptions import (
    ConfigurationError,
    CountWithoutNError,
    InvalidCountError,
    RunConditionError,
)
from airflow_leastaction.gating.has_data import has_data
from airflow_leastaction.states import (
    ACTIVE_STATES,
    DID_NOT_RUN_STATES,
    FAILED_STATES,
    NOT_STARTED_STATES,
    TERMINAL_STATES,
    UNFINISHED_STATES,
)


class DependencyType(str, enum.Enum):
    """What outcome of the upstream a dependency waits for."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    ALWAYS = "ALWAYS"
    HAS_DATA = "HAS_DATA"

    @classmethod
    def parse(cls, value: DependencyType | str) -> DependencyType:
        """The one check of a dependency type: a member, or its name in any case."""
        if isinstance(value, cls):
            return value
        try:
            return cls(str(getattr(value, "value", value)).upper())
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise ConfigurationError(f"unknown dependency type {value!r}; expected one of {names}") from None


class DecisionResult(str, enum.Enum):
    SATISFIED = "SATISFIED"
    UNSATISFIED = "UNSATISFIED"
    BYPASSED = "BYPASSED"
    #: Not satisfied at a fallback's deadline, and the task was admitted degraded without it.
    MISSING = "MISSING"


#: Decisions a successful task consumes: what it ran with (SATISFIED) and, degraded, what it ran without
#: (MISSING, consumed at the revision there was: none), so that the late arrival makes it stale.
CONSUMED_RESULTS = (DecisionResult.SATISFIED, DecisionResult.MISSING)


class Verdict(str, enum.Enum):
    ADMIT = "ADMIT"  # the condition holds: run the task
    WAIT = "WAIT"  # not yet: look again later
    SKIP = "SKIP"  # can never hold in this run


#: The kinds of run condition: every dependency, at least one, or at least ``count``.
CONDITION_KINDS = ("ALL", "ANY", "N")


def check_condition(
    dag_id: str | None, task_id: str | None, kind, count, total: int | None = None
) -> tuple[str, int | None]:
    """The ALL/ANY/N rule: check a run condition, for a task with ``total`` dependencies when known.

    Returns (kind, count), the kind upper-cased. Errors name the DAG and task when given.
    """
    kind = str(kind or "ALL").upper()
    if kind not in CONDITION_KINDS:
        raise RunConditionError(dag_id, task_id, f"unknown run condition {kind!r}; expected ALL, ANY or N")
    if count is not None and kind != "N":
        raise CountWithoutNError(dag_id, task_id, f"a count ({count}) is set only with run condition N, not {kind}")
    if kind == "N":
        if count is None or isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidCountError(dag_id, task_id, f"run condition N needs a count of at least 1, got {count!r}")
        if total is not None and count > total:
            raise InvalidCountError(
                dag_id,
                task_id,
                f"run condition N needs {count} satisfied dependencies but "
                f"the task has only {total}; it could never start",
            )
    return kind, count


@dataclass(frozen=True)
class RunCondition:
    """How many dependencies must be satisfied: ``ALL`` (default), ``ANY``, or ``N`` with ``count``."""

    kind: str = "ALL"
    count: int | None = None

    def __post_init__(self):
        kind, _ = check_condition(None, None, self.kind, self.count)
        object.__setattr__(self, "kind", kind)

    def needed(self, total: int) -> int:
        if self.kind == "ALL":
            return total
        if self.kind == "ANY":
            return min(1, total)
        return self.count  # type: ignore[return-value]

    def __str__(self) -> str:
        return f"N={self.count}" if self.kind == "N" else self.kind


ALL = RunCondition("ALL")
ANY = RunCondition("ANY")


@dataclass(frozen=True)
class Judgement:
    """One dependency judged once.

    ``final`` says the judgement cannot change any more in this attempt (the upstream finished for good);
    ``rejected`` says the upstream is in a failed state (it may still be retried or repaired);
    ``in_flight`` says what it waits for is being run now (a run in progress, a slot queued, running or
    up for retry), not merely missing: only a look at such an upstream spends a gate's look budget.
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
    in_flight: bool = False
    #: HAS_DATA on a success whose rows written could not be read: waits, and ends the gate at its max_wait.
    rows_unreadable: bool = False
    #: The upstream slot whose completion would satisfy it, when the judge knows one: what a degraded task
    #: records as missing (see :meth:`as_missing`).
    awaited_slot: dt.datetime | None = None

    def as_missing(self, downstream_slot: dt.datetime | None) -> Judgement:
        """This unsatisfied judgement as a MISSING decision records it: the slot it waited for (the judge's,
        else the downstream task's own), and what that slot held then (revision 0: nothing completed)."""
        slot = self.awaited_slot or downstream_slot or self.upstream_slot
        same = slot is not None and slot == self.upstream_slot
        return replace(
            self,
            upstream_slot=slot,
            upstream_run_pk=self.upstream_run_pk if same else None,
            upstream_revision=(self.upstream_revision or 0) if same else 0,
        )

    def as_event(self) -> dict:
        """A JSON-safe form, for trigger events and XCom (a new dict each call; built once per judgement,
        as thousands of gates waiting on one parent are handed the same judgement)."""
        built = self.__dict__.get("_event")
        if built is None:
            built = self.__dict__["_event"] = self._event_form()
        return dict(built)

    def _event_form(self) -> dict:
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
            "in_flight": self.in_flight,
            "rows_unreadable": self.rows_unreadable,
            "awaited_slot": self.awaited_slot.isoformat() if self.awaited_slot else None,
        }

    @classmethod
    def from_event(cls, data: dict) -> Judgement:
        slot, awaited = data.get("upstream_slot"), data.get("awaited_slot")
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
            in_flight=data.get("in_flight", False),
            rows_unreadable=data.get("rows_unreadable", False),
            awaited_slot=dt.datetime.fromisoformat(awaited) if awaited else None,
        )


@dataclass(frozen=True)
class GateOutcome:
    verdict: Verdict
    condition: RunCondition
    judgements: tuple[Judgement, ...] = field(default_factory=tuple)
    #: Admitted at a fallback's deadline without every dependency: the unsatisfied ones are MISSING.
    degraded: bool = False

    @property
    def satisfied_count(self) -> int:
        return sum(1 for j in self.judgements if j.satisfied)

    @property
    def waiting_reasons(self) -> list[str]:
        return [j.reason for j in self.judgements if not j.satisfied]

    def summary(self) -> str:
        total = len(self.judgements)
        verdict = f"{self.verdict.value} (degraded)" if self.degraded else self.verdict.value
        head = f"{verdict}: {self.satisfied_count}/{total} satisfied, needs {self.condition}"
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


def decide_at_deadline(
    condition: RunCondition, judgements: Iterable[Judgement], require: int, deadline: str
) -> GateOutcome:
    """A fallback's rule at its deadline: ADMIT when the condition holds; else ADMIT *degraded* when at
    least ``require`` dependencies are satisfied, each unsatisfied one saying it is missing at
    ``deadline`` (its decision is recorded MISSING); else SKIP."""
    outcome = decide(condition, judgements)
    if outcome.verdict is Verdict.ADMIT:
        return outcome
    count = outcome.satisfied_count
    if count < require:
        note = f"at the fallback deadline {deadline} only {count} satisfied, the fallback needs {require}"
        return GateOutcome(Verdict.SKIP, condition, _noted(outcome.judgements, note))
    note = f"missing at the fallback deadline {deadline}"
    return GateOutcome(Verdict.ADMIT, condition, _noted(outcome.judgements, note), degraded=True)


def _noted(judgements: tuple[Judgement, ...], note: str) -> tuple[Judgement, ...]:
    return tuple(j if j.satisfied else replace(j, reason=f"{j.reason}; {note}", final=True) for j in judgements)


# -- upstream tasks in the same run -----------------------------------------------------------------
def judge_upstream_task(
    dependency: str,
    dependency_type: DependencyType,
    state: str | None,
    *,
    run_settled: bool = False,
    rows_written: int | None = None,
    rows_error: str | None = None,
    record_known: bool = True,
    selected: dict | None = None,
) -> Judgement:
    """Judge a dependency on a task of the same run from its Airflow state. Pure.

    :param dependency: the dependency label (``task:<task_id>``).
    :param dependency_type: what outcome the dependency waits for.
    :param state: the upstream's Airflow state (None: not started).
    :param run_settled: nothing else can start in the run, so a FAILED upstream gets no retry and
        becomes final. While the run goes on, a failure may still be turned into a success (a retry,
        a clear), so dependents wait.
    :param rows_written: rows the upstream reported writing (HAS_DATA only); None: unknown.
    :param rows_error: why ``rows_written`` is unknown: its read failed (see :mod:`.has_data`).
    :param record_known: the catalog has the upstream's success record (HAS_DATA needs its count).
    :param selected: the upstream run and revision selected (``upstream_*`` fields of the judgement).
    """
    name = dependency.split(":", 1)[-1]
    state = None if state in NOT_STARTED_STATES else str(state)
    typ = dependency_type

    def verdict(ok: bool, reason: str, *, final: bool = True, rejected: bool = False) -> Judgement:
        return Judgement(
            dependency, ok, f"{name} ({typ.value}): {reason}", typ, final=final, rejected=rejected, **(selected or {})
        )

    if state in UNFINISHED_STATES:
        return verdict(False, f"upstream is {state or 'not started'}; waiting for it to finish", final=False)
    if typ is DependencyType.ALWAYS:
        return verdict(True, f"upstream finished ({state})")
    if state in DID_NOT_RUN_STATES:
        return verdict(False, f"upstream is {state}; a {typ.value} dependency can never be met in this run")
    if state in FAILED_STATES:
        if typ is DependencyType.FAILURE:
            return verdict(True, "upstream failed")
        if run_settled:
            return verdict(False, "upstream failed and nothing else can start in this run", rejected=True)
        return verdict(
            False,
            "upstream failed; waiting while the run goes on (a retry or clear may still succeed)",
            final=False,
            rejected=True,
        )
    if state != "success":
        return verdict(False, f"upstream is in unexpected state {state}; waiting", final=False)
    if typ is DependencyType.FAILURE:
        return verdict(False, "upstream succeeded; a FAILURE dependency can never be met in this run")
    if typ is DependencyType.HAS_DATA:
        if not record_known:
            # The listener writes it right after the success; without it (no listener, catalog down) the
            # count is unknown for good once nothing else can start.
            if run_settled:
                return verdict(
                    False,
                    "upstream succeeded but its rows written never reached the catalog; HAS_DATA needs at least one",
                )
            return verdict(False, "upstream succeeded; waiting for its rows written to reach the catalog", final=False)
        check = has_data(rows_written, rows_error)
        if not check.met:
            judged = verdict(
                False, f"upstream succeeded but {check.what}; HAS_DATA needs at least one", final=check.final
            )
            return replace(judged, rows_unreadable=check.unreadable)
        return verdict(True, f"upstream succeeded and {check.what}")
    return verdict(True, "upstream succeeded")


def blocked_tasks(
    states: dict[str, str | None], upstream: dict[str, Iterable[str]], waiting: Iterable[str]
) -> set[str]:
    """Tasks that have not started and cannot start while the gates wait: an upstream is a waiting gate
    that has not finished, or is itself a blocked task that has not started.

    Spread downstream from the tasks right behind a waiting gate with a work list, not by recursion: a
    run of thousands of chained tasks must not hit Python's recursion limit.
    """
    waiting = set(waiting)

    def not_started(task_id: str) -> bool:
        return states.get(task_id) in NOT_STARTED_STATES

    downstream: dict[str, list[str]] = {}
    for task_id, ups in upstream.items():
        for up in ups:
            downstream.setdefault(up, []).append(task_id)
    todo = [
        t
        for t, ups in upstream.items()
        if not_started(t) and any(u in waiting and states.get(u) not in TERMINAL_STATES for u in ups)
    ]
    blocked = set(todo)
    while todo:
        for down in downstream.get(todo.pop(), ()):
            if down not in blocked and not_started(down):
                blocked.add(down)
                todo.append(down)
    return blocked


def run_settled(states: dict[str, str | None], upstream: dict[str, Iterable[str]], waiting: Iterable[str]) -> bool:
    """True when nothing else can start in the run: no task is active and none is about to be scheduled.

    ``waiting`` are the gates (and the run-outcome task): they wait on others and start nothing by
    themselves. A task that has not started is blocked when one of its upstreams is a waiting gate or is
    itself blocked (:func:`blocked_tasks`); otherwise the scheduler is about to look at it, so the run is
    not settled.
    """
    waiting = set(waiting)
    others = {t: s for t, s in states.items() if t not in waiting}
    if any(s in ACTIVE_STATES for s in others.values()):
        return False
    if not any(s in NOT_STARTED_STATES for s in others.values()):
        return True
    blocked = blocked_tasks(states, upstream, waiting)
    return all(t in blocked for t, s in others.items() if s in NOT_STARTED_STATES)
