"""When a waiting run-condition gate judges again. Pure.

A gate's judgement (:func:`~airflow_leastaction.run_conditions.judging.evaluate`) depends on what it reads
(its slot records, the latest runs elsewhere, the whole-interval snapshot, its run's task states), on its
wait clock, and on the time through three instants only: the wait rule's next look
(:attr:`~airflow_leastaction.run_conditions.wait_rule.WaitClock.next_look`), the end of its wait budget
(``max_wait`` after the clock started) and the fallback's deadline. The shared reads hand a gate the same
object tick after tick while what it reads stays the same (a changed gate mode is handed as a new object
too), so a gate tells an unchanged tick by identity.

The rule: a gate judges again when one of its reads is not the object of its last judgement, when its last
judgement moved its wait clock (a look counted, the clock started), or when one of those instants has come
since (:func:`boundary`). On any other tick its last judgement stands: judging again would decide the same.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from types import MappingProxyType

from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy

#: What a gate takes for a read it does not make: the same object every tick, so it never looks changed.
UNREAD = MappingProxyType({})
#: Per read of a gate (slot records, latest runs, whole-interval snapshot, run states), what it takes when
#: it does not make that read.
NOT_MADE = (UNREAD, UNREAD, None, UNREAD)


@dataclass(frozen=True)
class Judged:
    """What a gate's last judgement was made on: the objects it read, the clock it left, and the first
    instant at which the same reads may be judged differently (None: never, the reads alone decide)."""

    reads: tuple
    clock: WaitClock
    until: dt.datetime | None


def boundary(
    clock: WaitClock, policy: WaitPolicy, deadline: dt.datetime | None, now: dt.datetime
) -> dt.datetime | None:
    """The first instant after ``now`` at which a judgement of the same reads may differ: the next look,
    the end of the wait budget, or the fallback's deadline, whichever comes first (None: none is ahead)."""
    ends = clock.started + policy.max_wait if clock.started is not None else None
    ahead = [t for t in (clock.next_look, ends, deadline) if t is not None and t > now]
    return min(ahead, default=None)


def judged(
    reads: tuple,
    before: WaitClock,
    after: WaitClock,
    policy: WaitPolicy,
    deadline: dt.datetime | None,
    now: dt.datetime,
) -> Judged | None:
    """What a judgement made at ``now`` on ``reads`` leaves for the next tick to compare with; None when it
    moved the wait clock from ``before`` to ``after`` (the next tick judges again, with the new clock)."""
    if after != before:
        return None
    return Judged(reads, after, boundary(after, policy, deadline, now))


def stands(last: Judged | None, reads: tuple, clock: WaitClock, now: dt.datetime) -> bool:
    """Whether the last judgement stands at ``now``: the same objects read, the same clock, no instant come."""
    if last is None or clock != last.clock or len(reads) != len(last.reads):
        return False
    if last.until is not None and now >= last.until:
        return False
    return all(a is b for a, b in zip(reads, last.reads, strict=True))
