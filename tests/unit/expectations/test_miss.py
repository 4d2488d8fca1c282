"""The chance of missing a deadline, case by case, and against an oracle that reads the rule's sentences
literally. Pure logic: no Airflow, no database.

Histories are minutes after the day's 00:00 slot (SLOT is a Monday, 2024-03-04).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.expectations import Node, expect
from airflow_leastaction.expectations.miss import (
    KINDS,
    MIN_KIND_RUNS,
    MIN_POSSIBLE,
    OVERDUE,
    miss_chances,
    scaled,
)

UTC = dt.UTC
SLOT = dt.datetime(2024, 3, 4, tzinfo=UTC)  # a Monday
MIN = dt.timedelta(minutes=1)
TUESDAY = 1


def key(task: str) -> str:
    return f"{task}@{SLOT.isoformat()}"


def node(task: str, done, state=None, *, took=None, weekdays=(), parents=(), **fields) -> Node:
    offsets = tuple(v * MIN for v in done)
    durations = tuple(v * MIN for v in took) if took is not None else tuple(MIN * 10 for _ in done)
    return Node(
        key=key(task), task=task, slot=SLOT, state=state, offsets=offsets, durations=durations,
        parents=tuple(key(p) for p in parents), weekdays=tuple(weekdays), **fields,
    )  # fmt: skip


def chance(nodes: list[Node], task: str, now_min: int, deadline_min: int) -> float | None:
    graph = {n.key: n for n in nodes}
    now = SLOT + now_min * MIN
    return miss_chances(graph, expect(graph, now), {key(task): SLOT + deadline_min * MIN}, now)[key(task)]


TEN = list(range(100, 200, 10))  # 100, 110, ..., 190


class TestCases:
    @pytest.mark.parametrize(
        ("now", "deadline", "expected"),
        [
            (0, 145, 0.5),  # 150..190 of the ten are after 145
            (0, 200, 0.0),
            (0, 99, 1.0),
            (0, 190, 0.0),  # a run finishing at the deadline makes it
        ],
    )
    def test_a_slot_not_started_reads_the_share_of_its_runs_after_the_deadline(self, now, deadline, expected):
        assert chance([node("load", TEN)], "load", now, deadline) == expected

    def test_a_slot_later_than_some_runs_is_read_from_the_runs_still_possible(self):
        twenty = TEN + list(range(200, 300, 10))  # 100..290
        # At 145: 150..290 are still possible (15 runs), 250..290 of them after 245: 5 of 15.
        assert chance([node("load", twenty)], "load", 145, 245) == 5 / 15

    def test_a_slot_later_than_all_but_a_few_runs_reads_its_latest_runs_from_shortly_after_now(self):
        # 30 runs: 29 by 130, one incident at 400. At 135 only the 400 is later: read the 10 latest,
        # nine of them at 135 + 10; one of ten after a 200 deadline, not a certainty.
        runs = [100 + i for i in range(29)] + [400]
        assert chance([node("load", runs)], "load", 135, 200) == 1 / MIN_POSSIBLE
        # The same slot past the deadline minus OVERDUE: every run read is after the deadline.
        assert chance([node("load", runs)], "load", 195, 200) == 1.0

    def test_a_running_slot_reads_the_runs_that_took_longer_than_it_has_run(self):
        took = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120]
        n = node("job", [t + 60 for t in took], "running", took=took, started_at=SLOT + 60 * MIN)
        # Running 25 minutes at 85: the ten runs of 30..120 minutes are possible, 70..120 finish after 125.
        assert chance([n], "job", 85, 125) == 6 / 10

    def test_a_complete_slot_is_certain(self):
        done = node("load", TEN, "success", finished_at=SLOT + 150 * MIN)
        assert chance([done], "load", 160, 140) == 1.0
        assert chance([done], "load", 160, 155) == 0.0

    def test_a_slot_with_too_little_history_has_no_chance(self):
        assert chance([node("load", [100, 110])], "load", 0, 105) is None

    def test_a_late_parent_makes_a_late_child(self):
        parent = node("load", TEN)
        child = node("report", [t + 30 for t in TEN], took=[20] * 10, parents=["load"])
        # On its own the report is done by 220 at the latest; its load is not done at 195 (only the 190
        # run was that late, read from the ten latest: nine at 205, one at 205): done 225 at the earliest.
        assert chance([parent, child], "report", 0, 220) == 0.0
        assert chance([parent, child], "report", 195, 220) == 1.0

    def test_complete_parents_hold_the_child_no_sooner_than_they_finished_plus_its_run(self):
        parent = node("load", TEN, "success", finished_at=SLOT + 120 * MIN)
        child = node("report", [t + 30 for t in TEN], took=[20] * 10, parents=["load"])
        # Ready at 120: each run (130..220) finishes at the later of its own time and 120 + 20 = 140.
        assert chance([parent, child], "report", 121, 139) == 1.0
        assert chance([parent, child], "report", 121, 145) == 8 / 10


class TestKindOfDay:
    def test_each_run_is_scaled_by_its_own_kinds_median_to_the_slots_kind(self):
        values = tuple(v * MIN for v in (100, 100, 100, 200, 200, 200))
        weekdays = (0, 0, 0, TUESDAY, TUESDAY, TUESDAY)  # Mondays take half as long
        assert scaled(values, weekdays, "weekday") == [200 * MIN] * 6
        assert scaled(values, weekdays, "monday") == [100 * MIN] * 6

    def test_a_kind_with_too_few_runs_is_not_scaled_from_nor_to(self):
        values = tuple(v * MIN for v in (100, 200, 200, 200))
        weekdays = (0, TUESDAY, TUESDAY, TUESDAY)
        assert scaled(values, weekdays, "weekday") == list(values)  # the one Monday run as it is
        assert scaled(values, weekdays, "monday") == list(values)  # too few Mondays to scale to

    def test_a_history_without_weekdays_is_not_scaled(self):
        values = tuple(v * MIN for v in (100, 200, 300))
        assert scaled(values, (), "monday") == list(values)


# -- the oracle ----------------------------------------------------------------------------------------
def quantile_median(values):
    """The smallest value with at least half the values at or below it."""
    return min(v for v in values if Fraction(sum(1 for w in values if w <= v), len(values)) >= Fraction(1, 2))


def oracle_scaled(values, weekdays, kind):
    if kind is None or len(weekdays) != len(values) or not values:
        return list(values)
    of_kind = {k: [v for v, d in zip(values, weekdays, strict=True) if KINDS[d] == k] for k in set(KINDS)}
    median = {k: quantile_median(v) for k, v in of_kind.items() if len(v) >= MIN_KIND_RUNS}
    if kind not in median or not median[kind]:
        return list(values)
    micro = dt.timedelta(microseconds=1)
    out = []
    for v, d in zip(values, weekdays, strict=True):
        own = median.get(KINDS[d])
        ratio = Fraction(median[kind] // micro, own // micro) if own else Fraction(1)
        out.append(dt.timedelta(microseconds=int(Fraction(v // micro) * ratio)))
    return out


def oracle_chance(offsets, weekdays, now, deadline):
    """A slot without parents: the share of its consistent runs (finishing after now; when fewer than
    MIN_POSSIBLE, its MIN_POSSIBLE latest, none before now + OVERDUE) that finish after the deadline."""
    kind = KINDS[(SLOT + quantile_median(list(offsets))).weekday()] if weekdays else None
    times = sorted(SLOT + v for v in oracle_scaled(list(offsets), list(weekdays), kind))
    later = [t for t in times if t > now]
    if len(later) < min(MIN_POSSIBLE, len(times)):
        later = [max(t, now + OVERDUE) for t in times[-MIN_POSSIBLE:]]
    return Fraction(sum(1 for t in later if t > deadline), len(later))


@settings(max_examples=300, deadline=None)
@given(
    runs=st.lists(st.tuples(st.integers(0, 600), st.integers(0, 6)), min_size=5, max_size=30),
    with_weekdays=st.booleans(),
    now=st.integers(0, 700),
    deadline=st.integers(0, 800),
)
def test_the_chance_of_a_slot_without_parents_is_the_share_of_its_consistent_runs_after_the_deadline(
    runs, with_weekdays, now, deadline
):
    offsets = tuple(v * MIN for v, _ in runs)
    weekdays = tuple(d for _, d in runs) if with_weekdays else ()
    n = Node(key("load"), "load", SLOT, None, offsets=offsets, durations=(MIN,) * len(runs), weekdays=weekdays)
    at, due = SLOT + now * MIN, SLOT + deadline * MIN
    found = miss_chances({n.key: n}, expect({n.key: n}, at), {n.key: due}, at)[n.key]
    assert found == float(oracle_chance(offsets, weekdays, at, due))


class TestTheGuidesWorkedExample:
    """docs/expected-times.md, "The chance of missing": mart/report waits on ingest/orders, deadline 06:00."""

    TUESDAY_SLOT = dt.datetime(2026, 11, 24, tzinfo=UTC)
    LANDED = (
        "04:40 04:42 04:44 04:45 04:46 04:48 04:50 04:50 04:52 04:53 04:54 04:55 04:55 04:55 04:56 04:57 04:58 "
        "05:00 05:00 05:02 05:04 05:05 05:08 05:10 05:15 05:20 05:35 05:40 05:50 06:05"
    )
    TOOK = [15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 15, 16, 17, 18,
            19, 20, 21, 22]  # fmt: skip

    def minutes_of(self, hhmm: str) -> int:
        hours, minutes = hhmm.split(":")
        return int(hours) * 60 + int(minutes)

    def chance_at(self, now: str, landed: str | None = None) -> float | None:
        slot = self.TUESDAY_SLOT
        lands = [self.minutes_of(t) for t in self.LANDED.split()]
        report_done = sorted(p + 10 + d for p, d in zip(lands, self.TOOK, strict=True))
        tuesdays = (1,) * 30
        ingest = Node("ingest@t", "ingest/orders", slot, None, offsets=tuple(v * MIN for v in lands),
                      durations=(30 * MIN,) * 30, weekdays=tuesdays)  # fmt: skip
        if landed is not None:
            ingest = dataclasses.replace(ingest, state="success", finished_at=slot + self.minutes_of(landed) * MIN)
        took = tuple(d * MIN for d in sorted(self.TOOK))
        report = Node("report@t", "mart/report", slot, None, offsets=tuple(v * MIN for v in report_done),
                      durations=took, parents=("ingest@t",), weekdays=tuesdays)  # fmt: skip
        graph, at = {"ingest@t": ingest, "report@t": report}, slot + self.minutes_of(now) * MIN
        return miss_chances(graph, expect(graph, at), {"report@t": slot + 6 * 60 * MIN}, at)["report@t"]

    def test_at_three_nothing_started_four_of_thirty_runs_end_after_six(self):
        assert self.chance_at("03:00") == 4 / 30

    def test_at_half_past_five_the_load_not_landed_makes_twelve_of_thirteen_runs_late(self):
        assert self.chance_at("05:30") == 12 / 13

    def test_the_load_landed_at_05_32_brings_it_back_under_one_half(self):
        assert self.chance_at("05:33", landed="05:32") == 4 / 10
