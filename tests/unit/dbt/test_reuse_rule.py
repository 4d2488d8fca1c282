"""The reuse rule against a simple oracle written from its sentences, and a table of its cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.dbt.reuse import (
    CODE_CHANGED,
    FORCED,
    FULL_REFRESH,
    INPUT_MOVED,
    INPUTS_UNKNOWN,
    LAST_FAILED,
    NEVER_BUILT,
    REUSED,
    UPSTREAM_BUILT,
    LastBuild,
    Version,
    Wanted,
    building,
    decide,
)

VALUES = st.sampled_from([None, "v1", "v2"])
CODES = st.sampled_from([None, "c1", "c2"])


@st.composite
def batches(draw):
    """Up to 7 models (each reading earlier ones and outside inputs), their versions and last builds."""
    outside = [f"source.p.s{i}" for i in range(draw(st.integers(0, 4)))]
    models: list[Wanted] = []
    for i in range(draw(st.integers(1, 7))):
        readable = outside + [m.unique_id for m in models]
        inputs = draw(st.lists(st.sampled_from(readable), unique=True)) if readable else []
        forced = draw(st.sampled_from([None, None, None, FORCED, FULL_REFRESH]))
        models.append(Wanted(f"model.p.m{i}", 100 + i, draw(CODES), tuple(inputs), forced))
    names = outside + [m.unique_id for m in models]
    versions = {n: Version(draw(VALUES), "unmapped") for n in names if draw(st.booleans()) or n in outside}
    last = {}
    for m in models:
        if draw(st.booleans()):
            keys = draw(st.lists(st.sampled_from(names), unique=True)) if draw(st.booleans()) else list(m.inputs)
            consumed = {k: draw(VALUES) for k in keys}
            # Usually the last build consumed exactly what is there now: the interesting case is "unchanged".
            if draw(st.booleans()):
                consumed = {k: versions.get(k, Version(None)).value for k in m.inputs}
            last[m.unique_id] = LastBuild(draw(st.integers(1, 99)), draw(st.booleans()), draw(CODES), consumed)
    return models, versions, last


def oracle(models, versions, last) -> set[str]:
    """The models that must be built, in the rule's words: never skip a model whose inputs are unknown or
    changed, never build one whose inputs are all unchanged unless forced; a change builds all downstream."""
    by_id = {m.unique_id: m for m in models}
    memo: dict[str, bool] = {}

    def must_build(uid: str) -> bool:
        if uid not in memo:
            m, prev = by_id[uid], last.get(uid)
            current = {i: versions.get(i, Version(None)).value for i in m.inputs}
            memo[uid] = (
                m.forced is not None
                or prev is None
                or not prev.succeeded
                or m.code is None
                or m.code != prev.code
                or any(i in by_id and must_build(i) for i in m.inputs)
                or any(v is None for v in current.values())
                or current != dict(prev.consumed)
            )
        return memo[uid]

    return {m.unique_id for m in models if must_build(m.unique_id)}


@settings(max_examples=600, deadline=None)
@given(batches())
def test_the_rule_builds_exactly_what_the_oracle_says(case):
    models, versions, last = case
    decisions = decide(models, versions, last)
    assert set(decisions) == {m.unique_id for m in models}
    assert {u for u, d in decisions.items() if d.build} == oracle(models, versions, last)


@settings(max_examples=600, deadline=None)
@given(batches())
def test_every_decision_stands_on_what_it_says(case):
    models, versions, last = case
    decisions = decide(models, versions, last)
    rows = {m.unique_id: m.row_id for m in models}
    for m in models:
        d = decisions[m.unique_id]
        if not d.build:  # reused: every input known and exactly what the reused build consumed
            assert d.kind == REUSED and d.build_ref == last[m.unique_id].build_ref
            assert all(v is not None for v in d.consumed.values())
            assert dict(d.consumed) == dict(last[m.unique_id].consumed)
            continue
        assert d.build_ref == m.row_id and d.reason.startswith(d.kind)
        for i in m.inputs:  # a model built in the batch moves the input of each of its readers
            if i in decisions and decisions[i].build:
                assert d.consumed[i] == building(rows[i])
        if d.kind == INPUT_MOVED:  # each input named moved is new, gone, or at another version
            before = last[m.unique_id].consumed
            assert d.moved
            assert all((i in d.consumed) != (i in before) or d.consumed[i] != before[i] for i in d.moved)


SRC, A, B = "source.p.orders", "model.p.a", "model.p.b"
CURRENT = {SRC: Version("r7"), A: Version(building(1))}
BUILT = {A: LastBuild(1, True, "ca", {SRC: "r7"}), B: LastBuild(2, True, "cb", {A: building(1)})}


@pytest.mark.parametrize(
    "a, b, versions, last, kinds",
    [
        pytest.param(
            ("ca", None), ("cb", None), CURRENT, BUILT, (REUSED, REUSED), id="nothing changed: nothing builds"
        ),
        pytest.param(
            ("ca", None), ("cb", None), {**CURRENT, SRC: Version("r8")}, BUILT, (INPUT_MOVED, UPSTREAM_BUILT),
            id="a source moved: its model and everything downstream build",
        ),
        pytest.param(
            ("ca2", None), ("cb", None), CURRENT, BUILT, (CODE_CHANGED, UPSTREAM_BUILT),
            id="one model's code changed: it and its downstream build",
        ),
        pytest.param(
            ("ca", None), ("cb2", None), CURRENT, BUILT, (REUSED, CODE_CHANGED),
            id="a downstream model's code changed: only it builds",
        ),
        pytest.param(
            ("ca", None), ("cb", None), {**CURRENT, SRC: Version(None, "no catalog mapping")}, BUILT,
            (INPUTS_UNKNOWN, UPSTREAM_BUILT), id="an input that cannot be known never skips",
        ),
        pytest.param(
            ("ca", FORCED), ("cb", None), CURRENT, BUILT, (FORCED, UPSTREAM_BUILT), id="force builds, downstream too"
        ),
        pytest.param(
            ("ca", None), ("cb", FULL_REFRESH), CURRENT, BUILT, (REUSED, FULL_REFRESH), id="full refresh builds"
        ),
        pytest.param(("ca", None), ("cb", None), CURRENT, {B: BUILT[B]}, (NEVER_BUILT, UPSTREAM_BUILT), id="first"),
        pytest.param(
            ("ca", None), ("cb", None), CURRENT, {**BUILT, A: LastBuild(1, False, "ca", {SRC: "r7"})},
            (LAST_FAILED, UPSTREAM_BUILT), id="a model whose last build failed builds",
        ),
    ],
)  # fmt: skip
def test_cases(a, b, versions, last, kinds):
    batch = [Wanted(A, 11, a[0], (SRC,), a[1]), Wanted(B, 12, b[0], (A,), b[1])]
    decisions = decide(batch, versions, last)
    assert (decisions[A].kind, decisions[B].kind) == kinds


def test_a_moved_input_is_named_with_the_versions_it_moved_between():
    batch = [Wanted(A, 11, "ca", (SRC,))]
    (decision,) = decide(batch, {SRC: Version("r8")}, {A: BUILT[A]}).values()
    assert decision.reason == "input moved: source.p.orders (r7 -> r8)" and decision.moved == (SRC,)


def test_a_reused_model_names_the_build_it_stands_on():
    (decision,) = decide([Wanted(A, 11, "ca", (SRC,))], CURRENT, {A: BUILT[A]}).values()
    assert (decision.build, decision.build_ref, decision.reason) == (False, 1, "inputs unchanged since build 1")
