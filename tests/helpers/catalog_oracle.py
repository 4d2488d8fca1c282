"""What the catalog must hold, written from the docs' sentences: a plain-Python model of slot records,
revisions, gate decisions, consumption, staleness and re-run plans, for the model-based test
(``tests/integration/model/``) to compare with the real catalog after every step.

Each rule comes from the docs:

- "The first success of a slot publishes output revision 1; each later success of the same slot ...
  publishes revision + 1, a repair"; replaying the same completion (same run and attempt) changes nothing;
  "a late replay never undoes a newer outcome": within one run the try number orders attempts, otherwise
  the time of the outcome (docs/catalog.md "Slots, revisions and repairs", catalog/outcomes.py).
- The watermark only moves forward; a slot ended without success publishes no revision.
- "A slot that is running again does not satisfy its children"; a gate admits a dependency only on a
  completed slot (above the revision already consumed with ``wait_for_new_output``). Admitted degraded,
  each unsatisfied dependency is MISSING, "naming the slot it waited for at the revision that slot had
  then (0: it had not completed)" (docs/run-conditions.md, fallbacks; docs/catalog.md "Consumption records").
- On success an attempt consumes the SATISFIED and MISSING decisions of its gate's latest attempt in the
  same run, once (docs/catalog.md "Consumption records"); never a BYPASSED one, and a success applied late
  nothing of a gate that admitted its run with every dependency bypassed (docs/run-conditions.md, relaxed
  gates).
- Stale: the upstream slot a consumption selected now has a higher revision, and the same consumer (DAG,
  task, downstream slot) has not consumed that revision or a later one since (catalog/staleness.py), a
  MISSING record at the revision its slot had then included; "the slot's completion makes the task stale
  by the same rule as a repair ("ran without X")".
- A re-run plan is every consumer run reached from the root's slots through consumption records,
  transitively (docs/operations.md, re-run plans).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

SUCCESS = "success"
SATISFIED = "SATISFIED"
MISSING = "MISSING"
BYPASSED = "BYPASSED"


@dataclass
class Record:
    """One slot record of one task."""

    state: str
    run_id: str | None
    attempt: int
    at: dt.datetime
    revision: int = 0
    completion_key: str | None = None


@dataclass(frozen=True)
class Decision:
    """One recorded gate decision, as the oracle expects it."""

    dependency: str
    upstream: str  # the upstream task's name
    upstream_slot: dt.datetime | None
    revision: int | None
    result: str
    #: Was the upstream task in the catalog when judged (else the decision names no task row)?
    named: bool = True


@dataclass(frozen=True)
class Use:
    """One consumption record."""

    consumer: str  # the consumer task's catalog name
    run_id: str
    attempt: int
    downstream_slot: dt.datetime
    decision: Decision


def older_than_held(held: Record | None, run_id: str | None, attempt: int, at: dt.datetime) -> bool:
    """Within one run the try number orders attempts; otherwise (and within one attempt) the time does."""
    if held is None:
        return False
    if run_id is not None and held.run_id == run_id and held.attempt != attempt:
        return held.attempt > attempt
    return held.at > at


@dataclass
class Oracle:
    records: dict[tuple[str, dt.datetime], Record] = field(default_factory=dict)
    watermark: dict[str, dt.datetime] = field(default_factory=dict)
    #: Per (gate task name, run id), per attempt: the decisions that attempt recorded.
    decisions: dict[tuple[str, str], dict[int, list[Decision]]] = field(default_factory=dict)
    uses: list[Use] = field(default_factory=list)
    #: Every (task, slot, revision) a completion published.
    published: set[tuple[str, dt.datetime, int]] = field(default_factory=set)

    # -- slot records --------------------------------------------------------------------------------
    def success(self, name: str, slot: dt.datetime, run_id: str, attempt: int, at: dt.datetime) -> str:
        """Apply a completion; "applied", "replay" (the same completion again) or "older" (a late one)."""
        held = self.records.get((name, slot))
        key = f"{run_id}#{attempt}"
        if held is not None and held.completion_key == key and held.state == SUCCESS:
            return "replay"
        if older_than_held(held, run_id, attempt, at):
            return "older"
        revision = 1 if held is None else held.revision + 1
        self.records[(name, slot)] = Record(SUCCESS, run_id, attempt, at, revision, key)
        self.published.add((name, slot, revision))
        if name not in self.watermark or self.watermark[name] < slot:
            self.watermark[name] = slot
        return "applied"

    def unpublished(self, name: str, slot: dt.datetime, state: str, run_id: str, attempt: int, at: dt.datetime):
        """Running, or an ending without success: the state changes, the revision never does."""
        held = self.records.get((name, slot))
        if held is None:
            self.records[(name, slot)] = Record(state, run_id, attempt, at)
        elif not older_than_held(held, run_id, attempt, at):
            self.records[(name, slot)] = Record(state, run_id, attempt, at, held.revision, held.completion_key)

    def revision(self, name: str, slot: dt.datetime) -> int:
        held = self.records.get((name, slot))
        return 0 if held is None else held.revision

    def known(self, name: str) -> bool:
        return any(n == name for n, _ in self.records)

    # -- gates -----------------------------------------------------------------------------------------
    def consumed(self, consumer: str, downstream_slot: dt.datetime, dependency: str, upstream_slot) -> int:
        """The highest revision the consumer's slot consumed of a dependency's slot (SATISFIED only)."""
        revisions = [
            u.decision.revision or 0
            for u in self.uses
            if u.consumer == consumer
            and u.downstream_slot == downstream_slot
            and u.decision.dependency == dependency
            and u.decision.upstream_slot == upstream_slot
            and u.decision.result == SATISFIED
        ]
        return max(revisions, default=0)

    def judge(self, parent: str, dependency: str, slot: dt.datetime, floor: int) -> Decision | None:
        """The SATISFIED decision on ``parent``'s slot ``slot`` when it may be admitted, else None."""
        held = self.records.get((parent, slot))
        if held is not None and held.state == SUCCESS and held.revision > floor:
            return Decision(dependency, parent, slot, held.revision, SATISFIED)
        return None

    def missing(self, parent: str, dependency: str, slot: dt.datetime) -> Decision:
        """What a degraded admission records of an unsatisfied dependency: the slot it waited for and the
        revision that slot held then."""
        return Decision(dependency, parent, slot, self.revision(parent, slot), MISSING, self.known(parent))

    def admit(self, gate: str, run_id: str, attempt: int, decisions: list[Decision]) -> None:
        self.decisions.setdefault((gate, run_id), {})[attempt] = decisions

    def admitted(self, gate: str, run_id: str) -> bool:
        return bool(self.decisions.get((gate, run_id)))

    def consume(self, consumer: str, gate: str, run_id: str, attempt: int, slot: dt.datetime, late: bool) -> None:
        """A successful attempt consumes its gate's latest attempt in the same run, once. The catalog knows
        an attempt consumed by its consumption records, as it knows a completion by the one its slot holds:
        an attempt admitted with every dependency bypassed has none, so its success applied again as its
        slot's newest outcome (after older outcomes from clocks that disagree) consumes what the gate's
        latest attempt holds then. ``late``: the success is older than its slot's outcome."""
        if any((u.consumer, u.run_id, u.attempt) == (consumer, run_id, attempt) for u in self.uses):
            return
        attempts = self.decisions.get((gate, run_id), {})
        # docs/run-conditions.md, relaxed gates: "A success that reaches the catalog late ... consumes
        # nothing from a gate that admitted its run with every dependency bypassed".
        if late and any(all(d.result == BYPASSED for d in decisions) for decisions in attempts.values()):
            return
        if attempts:
            latest = attempts[max(attempts)]
            self.uses += [Use(consumer, run_id, attempt, slot, d) for d in latest if d.result in (SATISFIED, MISSING)]

    # -- what readers are told -------------------------------------------------------------------------
    def stale(self) -> set[tuple[str, dt.datetime, str, dt.datetime, int]]:
        """(consumer, downstream slot, dependency, upstream slot, current revision) of every stale use."""
        out = set()
        for u in self.uses:
            d = u.decision
            if d.upstream_slot is None:
                continue  # admitted by the watermark: it selected no slot record
            current = self.revision(d.upstream, d.upstream_slot)
            if (d.upstream, d.upstream_slot) not in self.records or (d.revision or 0) >= current:
                continue
            # "Stale when the *highest* revision of that slot it has consumed is older than the slot's
            # current revision" (docs/run-conditions.md), a MISSING record's being "the revision that slot
            # had then" (docs/catalog.md): a run degraded while the slot ran again has caught up with it.
            caught_up = any(
                v.consumer == u.consumer
                and v.downstream_slot == u.downstream_slot
                and v.decision.dependency == d.dependency
                and v.decision.upstream == d.upstream
                and v.decision.upstream_slot == d.upstream_slot
                and (v.decision.revision or 0) >= current
                for v in self.uses
            )
            if not caught_up:
                out.add((u.consumer, u.downstream_slot, d.dependency, d.upstream_slot, current))
        return out

    def plan(self, root: str, start: dt.datetime, end: dt.datetime) -> dict[str, set[dt.datetime]]:
        """Every run re-running the root's slots in [start, end] reaches, the root's own included."""
        own = {s for n, s in self.records if n == root and start <= s <= end}
        own |= {
            u.decision.upstream_slot
            for u in self.uses
            if u.decision.named
            and u.decision.upstream == root
            and u.decision.upstream_slot is not None
            and start <= u.decision.upstream_slot <= end
        }
        runs = {root: own}
        frontier = {(root, s) for s in own}
        while frontier:
            reached = set()
            for u in self.uses:
                if not u.decision.named or (u.decision.upstream, u.decision.upstream_slot) not in frontier:
                    continue
                if u.downstream_slot not in runs.setdefault(u.consumer, set()):
                    runs[u.consumer].add(u.downstream_slot)
                    reached.add((u.consumer, u.downstream_slot))
            frontier = reached
        return {name: slots for name, slots in runs.items() if slots}


def same(real, expected, what: str) -> None:
    """Assert the catalog holds what the oracle expects, saying what differs."""
    if real != expected:
        extra = [x for x in real if x not in expected]
        missing = [x for x in expected if x not in real]
        raise AssertionError(
            f"{what}: the catalog has {extra} the model has not; the model has {missing} it has not "
            f"({len(real)} and {len(expected)} in all)"
        )
