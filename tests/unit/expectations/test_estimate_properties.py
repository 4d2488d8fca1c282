"""The expected-time rule against an oracle that applies its sentences literally. Pure logic, no Airflow.

The oracle recurses from each node through its parents with no memo, finds cycles by walking every path
from the node back to itself, counts complete parents before ranking the others, reads quantiles
as "the smallest value with at least p of the values at or below it", and takes square roots in decimals.
Graphs are small and times are whole minutes, so ties between parents and between estimates happen often.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_FLOOR, Context, Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.expectations import MIN_RUNS, Node, expect

UTC = dt.UTC
SLOT = dt.datetime(2024, 3, 4, tzinfo=UTC)
MIN = dt.timedelta(minutes=1)
GHOST = "ghost@x"  # a parent no node has


def quantile(values, p: Fraction):
    """The smallest value with at least a fraction p of the values at or below it."""
    if not values:
        return dt.timedelta(0)
    return min(v for v in values if Fraction(sum(1 for w in values if w <= v), len(values)) >= p)


def root_of_squares(*spreads: dt.timedelta) -> dt.timedelta:
    """sqrt(a² + b² + ...) of spreads, in whole microseconds rounded down."""
    squares = sum(Decimal(s.days * 86_400_000_000 + s.seconds * 1_000_000 + s.microseconds) ** 2 for s in spreads)
    root = squares.sqrt(Context(prec=60)).to_integral_value(rounding=ROUND_FLOOR)
    return dt.timedelta(microseconds=int(root))


def consults_parents(node: Node) -> bool:
    started = node.state == "running" and node.started_at is not None
    return node.state != "success" and not started and len(node.offsets) >= MIN_RUNS and bool(node.parents)


def in_cycle(nodes, key) -> bool:
    seen, todo = set(), [key]
    while todo:
        here = nodes[todo.pop()]
        for parent in here.parents if consults_parents(here) else ():
            if parent == key:
                return True
            if parent in nodes and parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return False


def oracle(nodes, now, key):
    """(status, median, p90, critical path) of ``key``, recursing through its parents each time."""
    node = nodes.get(key)
    if node is None:
        return ("missing", None, None, ())
    if node.state == "success":
        done = node.finished_at or node.started_at or node.slot
        return ("complete", done, done, ())
    if len(node.offsets) < MIN_RUNS:
        return ("no_estimate", None, None, ())
    half, ninety = quantile(node.durations, Fraction(1, 2)), quantile(node.durations, Fraction(9, 10))
    if node.state == "running" and node.started_at is not None:
        return ("running", max(now, node.started_at + half), max(now, node.started_at + ninety), ())
    if node.parents and in_cycle(nodes, key):
        return ("no_estimate", None, None, ())
    need = {"ALL": len(node.parents), "ANY": 1}.get(node.mode, node.mode)
    if not node.parents or need == 0:  # its own offsets: when it is usually done, counted from its slot
        own_median = max(now, node.slot + quantile(node.offsets, Fraction(1, 2)))
        return ("waiting", own_median, max(now, node.slot + quantile(node.offsets, Fraction(9, 10))), ())
    # its floor: when it usually starts (the median of finish - slot - duration over its runs) plus its duration
    starts = [o - d for o, d in zip(node.offsets, node.durations, strict=True)]
    usual_start = node.slot + quantile(starts, Fraction(1, 2))
    floor = ("waiting", max(now, usual_start + half), max(now, usual_start + ninety), ())
    if need > len(node.parents):
        return ("no_estimate", None, None, ())
    results = {p: oracle(nodes, now, p) for p in node.parents}
    complete = sum(1 for r in results.values() if r[0] == "complete")
    if complete >= need:  # it starts once the need-th of its parents to finish did, and takes its duration
        ready = sorted(r[1] for r in results.values() if r[0] == "complete")[need - 1]
        return ("waiting", max(floor[1], ready + half), max(floor[2], ready + ninety), ())
    estimated = sorted((r[1], r[2], p) for p, r in results.items() if r[0] in ("waiting", "running"))
    unknown = sorted(p for p, r in results.items() if r[0] in ("no_estimate", "missing"))
    pending = [p for _, _, p in estimated] + unknown
    deciding = pending[need - complete - 1]
    _, parent_median, parent_p90, parent_path = results[deciding]
    if parent_median is None and node.cap is None:
        return ("no_estimate", None, None, ())
    if parent_median is None:
        start_median = start_p90 = node.cap
    else:
        start_median = parent_median if node.cap is None else min(parent_median, node.cap)
        start_p90 = parent_p90 if node.cap is None else min(parent_p90, node.cap)
    from_parents = start_median + half
    median = max(floor[1], from_parents)
    p90 = max(floor[2], from_parents + root_of_squares(start_p90 - start_median, ninety - half))
    parent_decides = from_parents > floor[1] and parent_median is not None
    parent_decides = parent_decides and (node.cap is None or parent_median <= node.cap)
    return ("waiting", median, p90, (deciding, *parent_path) if parent_decides else ())


moments = st.integers(0, 600).map(lambda m: SLOT + m * MIN)


@st.composite
def graphs(draw):
    size = draw(st.integers(1, 7))
    keys = [f"t{i}@x" for i in range(size)]
    nodes = {}
    for i, key in enumerate(keys):
        runs = draw(st.integers(0, 8))
        parents = draw(st.lists(st.sampled_from([*keys, GHOST]), unique=True, max_size=4))
        nodes[key] = Node(
            key=key,
            task=f"t{i}",
            slot=SLOT,
            state=draw(st.sampled_from([None, None, "running", "success", "failed"])),
            started_at=draw(st.none() | moments),
            finished_at=draw(st.none() | moments),
            offsets=tuple(m * MIN for m in draw(st.lists(st.integers(0, 600), min_size=runs, max_size=runs))),
            durations=tuple(m * MIN for m in draw(st.lists(st.integers(0, 120), min_size=runs, max_size=runs))),
            parents=tuple(parents),
            mode=draw(st.sampled_from(["ALL", "ANY", 0, 1, 2, 3])),
            cap=draw(st.none() | moments),
        )
    return nodes


@settings(max_examples=400, deadline=None)
@given(graphs(), moments)
def test_every_expectation_is_what_the_rule_says_node_by_node(nodes, now):
    got = expect(nodes, now)
    assert set(got) == set(nodes)
    for key, found in got.items():
        assert (found.status, found.median, found.p90, found.critical_path) == oracle(nodes, now, key), key


@settings(max_examples=200, deadline=None)
@given(graphs(), moments)
def test_an_estimate_is_never_before_now_and_its_p90_never_before_its_median(nodes, now):
    for found in expect(nodes, now).values():
        if found.status in ("running", "waiting"):
            assert now <= found.median <= found.p90
        if found.status == "no_estimate":
            assert found.reason.startswith("no estimate: ") and found.median is None
        assert all(step in nodes for step in found.critical_path)
