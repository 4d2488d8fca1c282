"""Validation and waves on deep and random graphs: thousands of tasks in a chain, cycles far down."""

from __future__ import annotations

import itertools
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import DependencyCycleError
from airflow_leastaction.gating.engine import run_settled
from airflow_leastaction.run_conditions.waves import (
    Node,
    check_upstreams,
    find_cycle,
    validate,
    validate_addition,
    waves,
)
from airflow_leastaction.states import TERMINAL_STATES

DEEP = 5000


def chain(n: int) -> dict[str, Node]:
    """t0000 -> t0001 -> ...: each task depends on the next one, so a search in name order starts at the
    far end of the chain and goes all the way up."""
    ids = [f"t{i:04d}" for i in range(n)]
    return {t: Node(t, (ids[i + 1],) if i + 1 < n else ()) for i, t in enumerate(ids)}


def timed(label: str, fn, *args):
    start = time.perf_counter()
    try:
        return fn(*args)
    finally:
        print(f"{label}: {time.perf_counter() - start:.3f}s")


class TestDeepChains:
    def test_a_5000_task_chain_validates_and_lays_out_one_task_per_wave(self):
        nodes = chain(DEEP)
        assert sys.getrecursionlimit() < DEEP
        timed("validate", validate, "rc_deep", nodes)
        layout = timed("waves", waves, nodes)
        assert layout == [[t] for t in sorted(nodes, reverse=True)]

    def test_a_cycle_at_depth_2000_is_reported_with_its_tasks(self):
        nodes = chain(DEEP)
        # t3999 now also depends on t2000: a cycle of t2000 ... t3999, 2,000 tasks below t0000.
        nodes["t3999"] = Node("t3999", ("t4000", "t2000"))
        with pytest.raises(DependencyCycleError, match="dependency cycle: ") as err:
            timed("validate", validate, "rc_deep", nodes)
        path = str(err.value).split("dependency cycle: ", 1)[1].split(" -> ")
        assert path[0] == path[-1] and len(path) == 2001
        assert set(path) == {f"t{i:04d}" for i in range(2000, 4000)}
        for down, up in itertools.pairwise(path):  # each step follows a real dependency, downstream to upstream
            assert up in nodes[down].upstream or down in nodes[up].upstream

    def test_waves_of_a_deep_cycle_raise_the_cycle_error(self):
        nodes = chain(DEEP)
        nodes["t4999"] = Node("t4999", ("t0000",))
        with pytest.raises(DependencyCycleError, match="dependency cycle among t0000, t0001"):
            waves(nodes)

    def test_the_run_settled_check_handles_a_5000_task_chain_behind_a_waiting_gate(self):
        ids = [f"t{i:04d}" for i in range(DEEP)]  # t4999 runs after the gate, t0000 last
        upstream = {"gate": [], **{t: [ids[i + 1] if i + 1 < DEEP else "gate"] for i, t in enumerate(ids)}}
        states = {"gate": "deferred", **{t: None for t in ids}}
        assert timed("run_settled", run_settled, states, upstream, {"gate"})
        states["gate"] = "success"  # the gate admitted: the chain's head is about to be scheduled
        assert not run_settled(states, upstream, {"gate"})


# -- the run-settled check against the rule read literally -------------------------------------------
def settled_oracle(states, upstream, waiting) -> bool:
    """The rule word for word: nothing active; every task not started is blocked, i.e. one of its
    upstreams is a waiting gate that has not finished, or has not started and is blocked itself."""

    def blocked(task, seen):
        for up in upstream.get(task, ()):
            if up in waiting and states.get(up) not in TERMINAL_STATES:
                return True
            if states.get(up) is None and up not in seen and blocked(up, seen | {task}):
                return True
        return False

    for task, state in states.items():
        if task in waiting:
            continue
        if state not in TERMINAL_STATES and state is not None:
            return False
        if state is None and not blocked(task, frozenset()):
            return False
    return True


STATES = [
    None,
    "scheduled",
    "queued",
    "running",
    "deferred",
    "up_for_retry",
    "success",
    "failed",
    "skipped",
    "upstream_failed",
]


@st.composite
def runs(draw):
    n = draw(st.integers(1, 9))
    ids = [f"t{i}" for i in range(n)]
    # Upstreams only among earlier tasks: a DAG.
    upstream = {t: draw(st.lists(st.sampled_from(ids[:i]), unique=True)) if i else [] for i, t in enumerate(ids)}
    states = {t: draw(st.sampled_from(STATES)) for t in ids}
    waiting = set(draw(st.lists(st.sampled_from(ids), unique=True)))
    return states, upstream, waiting


@settings(max_examples=400, deadline=None)
@given(runs())
def test_the_run_settled_check_agrees_with_the_rule_on_random_runs(run):
    states, upstream, waiting = run
    assert run_settled(states, upstream, waiting) == settled_oracle(states, upstream, waiting)


def test_find_cycle_names_none_for_a_dag_and_one_for_a_cycle():
    assert find_cycle(chain(50)) is None
    nodes = {**chain(3), "t0002": Node("t0002", ("t0000",))}
    assert find_cycle(nodes) == ["t0000", "t0002", "t0001", "t0000"]


# -- declaring one task at a time agrees with checking the whole graph --------------------------------
@st.composite
def declarations(draw):
    ids = [f"t{i}" for i in range(draw(st.integers(2, 8)))]
    order = draw(st.permutations(ids))
    return ids, [
        (t, tuple(draw(st.lists(st.sampled_from(ids), unique=True, max_size=3))), draw(st.booleans())) for t in order
    ]


def check_whole(new, nodes):
    """What run_condition() did before: the declaration's own upstreams, then the whole graph."""
    try:
        check_upstreams("rc_probe", new.task_id, new.upstream, nodes)
        validate("rc_probe", nodes)
    except Exception as exc:
        return type(exc)
    return None


@settings(max_examples=400, deadline=None)
@given(declarations())
def test_checking_each_declaration_agrees_with_checking_the_whole_graph(case):
    ids, declared = case
    nodes = {t: Node(t) for t in ids}
    for task, upstream, active in declared:
        new = Node(task, upstream, "ALL", active)
        expected = check_whole(new, {**nodes, task: new})

        def dependents(t):
            return [d for d, n in nodes.items() if t in n.upstream]

        try:
            validate_addition("rc_probe", new, nodes.get, dependents)
            found = None
        except Exception as exc:
            found = type(exc)
        assert found == expected, (task, upstream, active, nodes)
        if found:
            return
        nodes[task] = new
