"""The reuse rule: which models of a claimed batch dbt must build, and which stand on their last build.
Pure logic: no Airflow, no database, no dbt.

A model is **reused** (not built) only when all of these hold:

* nothing forces it (a request with ``force=True``, a ``--full-refresh`` key);
* it has a last build, and that build succeeded;
* its code identity is known and equal to that build's;
* every input's version is known, and equal to the version that build consumed (the same inputs, too);
* no input of it is being built in this batch.

Otherwise it is **built**, and the decision says why. Because a model built in the batch moves the input of
everything reading it, a change builds everything downstream of it in the batch. An input's version is an
opaque text: the build of a model it stands on, or the completion of the catalog task loading a source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: The reasons a decision gives, by kind (the text adds the names involved).
FORCED, FULL_REFRESH, NEVER_BUILT, LAST_FAILED = "forced", "full refresh", "never built", "last build failed"
CODE_CHANGED, CODE_UNKNOWN, INPUTS_UNKNOWN = "code changed", "code unknown", "inputs unknown"
INPUT_MOVED, UPSTREAM_BUILT, REUSED = "input moved", "upstream rebuilt", "inputs unchanged"


@dataclass(frozen=True)
class Version:
    """An input's current version; ``value`` None when it cannot be known, and ``why`` says why."""

    value: str | None
    why: str = ""


@dataclass(frozen=True)
class LastBuild:
    """The model's latest pass that wrote its relation (or failed trying).

    :param build_ref: the pass whose dbt build made the relation as it is (its own id when it built).
    :param succeeded: False when that pass failed (the relation may hold anything).
    :param code: the code identity it ran with.
    :param consumed: input -> the version it consumed.
    """

    build_ref: int
    succeeded: bool
    code: str | None
    consumed: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Wanted:
    """A model of the batch: its pass's row, code identity, inputs and whether something forces a build."""

    unique_id: str
    row_id: int
    code: str | None
    inputs: Sequence[str]
    forced: str | None = None  # FORCED, FULL_REFRESH or None


@dataclass(frozen=True)
class Decision:
    unique_id: str
    build: bool
    kind: str  # one of the reason kinds above
    reason: str  # what a person reads: the kind and the names involved
    consumed: Mapping[str, str | None]  # the versions this pass stands on, for the next pass to compare
    build_ref: int  # the build the relation will stand on: the row itself when built, else the reused build
    moved: tuple[str, ...] = ()  # the inputs that moved (or are unknown), when that is why it builds


def building(row_id: int) -> str:
    """The version of a model built by pass ``row_id``: what its readers consume."""
    return f"build:{row_id}"


def decide(
    batch: Sequence[Wanted], versions: Mapping[str, Version], last: Mapping[str, LastBuild]
) -> dict[str, Decision]:
    """The decision for every model of ``batch`` (see the module docstring).

    :param versions: the current version of every input outside the batch, and of the batch's models too
        (what they stand on now).
    :param last: each model's last build, when it has one.
    """
    wanted = {w.unique_id: w for w in batch}
    decided: dict[str, Decision] = {}
    for uid in _upstream_first(wanted):
        decided[uid] = _decide_one(wanted[uid], wanted, versions, last.get(uid), decided)
    return decided


def _upstream_first(wanted: Mapping[str, Wanted]) -> list[str]:
    order: list[str] = []
    done: set[str] = set()
    for root in sorted(wanted):
        stack = [(root, False)]
        while stack:
            uid, expanded = stack.pop()
            if uid in done:
                continue
            if expanded:
                done.add(uid)
                order.append(uid)
                continue
            stack.append((uid, True))
            stack.extend((i, False) for i in sorted(wanted[uid].inputs, reverse=True) if i in wanted and i not in done)
    return order


def _decide_one(
    model: Wanted,
    wanted: Mapping[str, Wanted],
    versions: Mapping[str, Version],
    last: LastBuild | None,
    decided: Mapping[str, Decision],
) -> Decision:
    consumed: dict[str, str | None] = {}
    upstream, unknown = [], []
    for i in sorted(model.inputs):
        if i in decided and decided[i].build:
            consumed[i] = building(wanted[i].row_id)
            upstream.append(i)
            continue
        version = versions.get(i, Version(None, "not known to the queue"))
        consumed[i] = version.value
        if version.value is None:
            unknown.append(f"{i} ({version.why})" if version.why else i)

    def build(kind: str, detail: str = "", moved: Sequence[str] = ()) -> Decision:
        reason = f"{kind}: {detail}" if detail else kind
        return Decision(model.unique_id, True, kind, reason, consumed, model.row_id, tuple(moved))

    if model.forced:
        return build(model.forced)
    if last is None:
        return build(NEVER_BUILT)
    if not last.succeeded:
        return build(LAST_FAILED, f"pass {last.build_ref}")
    if model.code is None:
        return build(CODE_UNKNOWN)
    if model.code != last.code:
        return build(CODE_CHANGED)
    if upstream:
        return build(UPSTREAM_BUILT, ", ".join(upstream), upstream)
    if unknown:
        return build(INPUTS_UNKNOWN, ", ".join(unknown), [u.split(" ", 1)[0] for u in unknown])
    moved = sorted(set(consumed) ^ set(last.consumed) | {i for i in consumed if consumed[i] != last.consumed.get(i)})
    if moved:
        detail = ", ".join(f"{i} ({last.consumed.get(i) or 'none'} -> {consumed.get(i) or 'none'})" for i in moved)
        return build(INPUT_MOVED, detail, moved)
    reason = f"{REUSED} since build {last.build_ref}"
    return Decision(model.unique_id, False, REUSED, reason, consumed, last.build_ref)
