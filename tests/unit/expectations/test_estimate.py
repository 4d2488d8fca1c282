"""The expected-time rule, case by case from its sentences. Pure logic: no Airflow, no database.

Every case is a small graph of the day's 00:00 slot; histories are minutes after the slot, so "usually done
04:55" reads straight off the table.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from airflow_leastaction.expectations import MIN_RUNS, Node, expect
from airflow_leastaction.expectations.estimate import MEDIAN, P90, median_and_p90, nearest_rank

UTC = dt.UTC
SLOT = dt.datetime(2024, 3, 4, tzinfo=UTC)
MIN = dt.timedelta(minutes=1)


def at(hhmm: str) -> dt.datetime:
    hours, minutes = hhmm.split(":")
    return SLOT + dt.timedelta(hours=int(hours), minutes=int(minutes))


def minutes(*values: int) -> tuple[dt.timedelta, ...]:
    return tuple(v * MIN for v in values)


def node(task: str, state=None, *, done=(), took=(), parents=(), **fields) -> Node:
    """A node of the 00:00 slot; ``done`` are usual completion times ("04:55"), ``took`` durations in minutes."""
    offsets = tuple(at(t) - SLOT for t in done)
    durations = minutes(*took) if took else tuple(MIN * 10 for _ in done)
    return Node(
        key=key(task), task=task, slot=SLOT, state=state, offsets=offsets, durations=durations,
        parents=tuple(key(p) for p in parents), **fields,
    )  # fmt: skip


def key(task: str) -> str:
    return f"{task}@{SLOT.isoformat()}"


def graph(*nodes: Node) -> dict[str, Node]:
    return {n.key: n for n in nodes}


FIVE_AT_0455 = ("04:50", "04:55", "04:55", "05:00", "05:10")  # median 04:55, p90 05:10


class TestNearestRank:
    @pytest.mark.parametrize(
        ("values", "median", "p90"),
        [
            ((1,), 1, 1),
            ((1, 2), 1, 2),
            ((5, 1, 4, 2, 3), 3, 5),
            (tuple(range(1, 11)), 5, 9),  # ceil(0.9 * 10) = 9: exactly, never 10 from a float's error
            (tuple(range(1, 31)), 15, 27),
            (tuple(range(1, 21)), 10, 18),
        ],
    )
    def test_the_quantile_is_the_value_at_the_rounded_up_rank(self, values, median, p90):
        assert nearest_rank(minutes(*values), MEDIAN) == median * MIN
        assert nearest_rank(minutes(*values), P90) == p90 * MIN


class TestOwnEstimate:
    def test_a_success_is_complete_at_its_finish(self):
        done = node("a", "success", finished_at=at("03:00"), done=FIVE_AT_0455)
        got = expect(graph(done), now=at("06:00"))[key("a")]
        assert (got.status, got.median, got.p90, got.critical_path) == ("complete", at("03:00"), at("03:00"), ())

    def test_a_slot_not_started_is_expected_at_its_usual_offset(self):
        got = expect(graph(node("a", done=FIVE_AT_0455)), now=at("01:00"))[key("a")]
        assert (got.status, got.median, got.p90) == ("waiting", at("04:55"), at("05:10"))
        assert got.reason == "usually done 04:55, not started"
        assert (got.runs, got.critical_path) == (5, ())

    def test_a_running_slot_is_expected_at_its_start_plus_its_usual_duration(self):
        running = node("a", "running", started_at=at("04:00"), done=FIVE_AT_0455, took=(10, 20, 20, 30, 60))
        got = expect(graph(running), now=at("04:05"))[key("a")]
        assert (got.status, got.median, got.p90) == ("running", at("04:20"), at("05:00"))

    @pytest.mark.parametrize("state", [None, "running", "failed"])
    def test_an_estimate_is_never_before_now(self, state):
        late = node("a", state, started_at=at("04:00"), done=FIVE_AT_0455)
        got = expect(graph(late), now=at("07:00"))[key("a")]
        assert (got.median, got.p90) == (at("07:00"), at("07:00"))

    @pytest.mark.parametrize("runs", [0, 1, MIN_RUNS - 1])
    def test_fewer_runs_than_the_minimum_give_no_estimate_naming_the_count(self, runs):
        got = expect(graph(node("a", done=FIVE_AT_0455[:runs])), now=at("01:00"))[key("a")]
        assert (got.status, got.median, got.p90, got.runs) == ("no_estimate", None, None, runs)
        assert got.reason == f"no estimate: {runs} run{'' if runs == 1 else 's'}"

    def test_runs_left_out_for_clock_skew_are_counted_and_named(self):
        got = expect(graph(node("a", done=FIVE_AT_0455[:2], skewed=3)), now=at("01:00"))[key("a")]
        assert (got.reason, got.skewed) == ("no estimate: 2 runs (3 left out for clock skew)", 3)


class TestParents:
    def chain(self, mode, *, states=(None, None, None), cap=None):
        """``child`` (usually 01:00, 10 minutes) waits on p1 (usually 04:00), p2 (05:00), p3 (06:00)."""
        parents = [
            node(f"p{i}", state, done=(f"0{3 + i}:00",) * 5, finished_at=at("00:30") if state == "success" else None)
            for i, state in enumerate(states, start=1)
        ]
        child = node("child", done=("01:00",) * 5, parents=("p1", "p2", "p3"), mode=mode, cap=cap)
        return graph(child, *parents)

    @pytest.mark.parametrize(
        ("mode", "deciding", "median"),
        [("ALL", "p3", "06:10"), ("ANY", "p1", "04:10"), (2, "p2", "05:10"), (3, "p3", "06:10"), (1, "p1", "04:10")],
    )
    def test_the_deciding_parent_is_the_latest_the_earliest_or_the_nth(self, mode, deciding, median):
        got = expect(self.chain(mode), now=at("00:10"))[key("child")]
        assert (got.status, got.median, got.critical_path) == ("waiting", at(median), (key(deciding),))
        assert got.reason == f"waiting on {deciding} (usually done {median[:2]}:00, not started)"

    def test_complete_parents_count_first_so_a_met_mode_leaves_the_child_to_its_own_estimate(self):
        got = expect(self.chain(2, states=("success", None, "success")), now=at("00:40"))[key("child")]
        assert (got.median, got.critical_path, got.reason) == (at("01:00"), (), "usually done 01:00, not started")

    def test_with_one_parent_complete_all_still_waits_on_the_latest(self):
        got = expect(self.chain("ALL", states=(None, None, "success")), now=at("00:40"))[key("child")]
        assert (got.median, got.critical_path) == (at("05:10"), (key("p2"),))

    def test_a_running_parent_is_named_running(self):
        nodes = self.chain("ANY", states=("running", None, None))
        nodes[key("p1")] = node("p1", "running", started_at=at("03:55"), done=("04:00",) * 5)
        got = expect(nodes, now=at("03:58"))[key("child")]
        assert got.reason == "waiting on p1 (usually done 04:00, running since 03:55)"
        assert got.median == at("04:15")  # started 03:55 + 10 minutes usual, then the child's 10 minutes

    def test_a_child_whose_own_estimate_is_later_keeps_it(self):
        nodes = self.chain("ANY")
        nodes[key("child")] = node("child", done=("09:00",) * 5, parents=("p1",))
        got = expect(nodes, now=at("00:10"))[key("child")]
        assert (got.median, got.critical_path) == (at("09:00"), ())

    def test_the_p90_adds_the_parents_spread_and_its_own_as_the_root_of_their_squares(self):
        parent = node("p", done=FIVE_AT_0455)  # median 04:55, p90 05:10: a spread of 15 minutes
        child = node("c", done=("01:00",) * 5, took=(10, 10, 10, 10, 30), parents=("p",))  # 10, p90 30: 20
        got = expect(graph(parent, child), now=at("00:10"))[key("c")]
        assert (got.median, got.p90) == (at("05:05"), at("05:30"))  # 05:05 + sqrt(15² + 20²) = 05:05 + 25

    def test_a_chain_counts_each_steps_spread_once_not_one_p90_per_step(self):
        nodes = graph(
            node("a", done=("04:00", "04:00", "04:00", "04:00", "04:30")),  # spread 30
            node("b", done=("01:00",) * 5, took=(10, 10, 10, 10, 50), parents=("a",)),  # spread 40
            node("c", done=("01:00",) * 5, took=(10, 10, 10, 10, 10), parents=("b",)),  # spread 0
        )
        got = expect(nodes, now=at("00:10"))
        assert (got[key("b")].median, got[key("b")].p90) == (at("04:10"), at("05:00"))  # sqrt(30² + 40²) = 50
        assert (got[key("c")].median, got[key("c")].p90) == (at("04:20"), at("05:10"))

    def test_a_child_with_parents_is_floored_by_its_usual_start_not_by_its_late_finishes(self):
        # Its finishes carry its parents' late days (05:00 twice); it usually starts at 00:50 and takes 10.
        child = node("c", done=("01:00", "01:00", "01:00", "05:00", "05:00"), took=(10,) * 5, parents=("p",))
        got = expect(graph(node("p", done=("00:20",) * 5), child), now=at("00:10"))[key("c")]
        assert (got.median, got.p90, got.critical_path) == (at("01:00"), at("01:00"), ())
        assert got.reason == "usually done 01:00, not started"

    def test_a_child_without_parents_keeps_the_p90_of_its_offsets(self):
        got = expect(graph(node("c", done=("01:00", "01:00", "01:00", "05:00", "05:00"))), now=at("00:10"))
        assert (got[key("c")].median, got[key("c")].p90) == (at("01:00"), at("05:00"))

    def test_the_critical_path_runs_through_the_deciding_parents(self):
        nodes = graph(
            node("a", done=("04:00",) * 5),
            node("b", done=("01:00",) * 5, parents=("a",)),
            node("c", done=("01:00",) * 5, parents=("b",)),
        )
        got = expect(nodes, now=at("00:10"))[key("c")]
        assert (got.median, got.critical_path) == (at("04:20"), (key("b"), key("a")))

    def test_a_cap_bounds_the_start_and_then_no_parent_decides(self):
        got = expect(self.chain("ALL", cap=at("05:00")), now=at("00:10"))[key("child")]
        assert (got.median, got.critical_path) == (at("05:10"), ())
        assert got.reason == "waiting on p3; its fallback admits it at 05:00"

    def test_a_cap_later_than_the_deciding_parent_changes_nothing(self):
        got = expect(self.chain("ALL", cap=at("08:00")), now=at("00:10"))[key("child")]
        assert (got.median, got.critical_path) == (at("06:10"), (key("p3"),))


class TestNoEstimateFromParents:
    def test_a_deciding_parent_without_an_estimate_makes_the_child_no_estimate_naming_it(self):
        nodes = graph(node("p", done=("04:00",) * 2), node("c", done=("01:00",) * 5, parents=("p",)))
        got = expect(nodes, now=at("00:10"))[key("c")]
        assert (got.status, got.median) == ("no_estimate", None)
        assert got.reason == "no estimate: waiting on p (no estimate: 2 runs)"

    def test_a_parent_missing_from_the_nodes_is_a_parent_without_an_estimate(self):
        got = expect(graph(node("c", done=("01:00",) * 5, parents=("gone",))), now=at("00:10"))[key("c")]
        assert (got.status, got.reason) == ("no_estimate", "no estimate: waiting on gone (not in the catalog)")

    def test_a_parent_without_an_estimate_counts_as_last_so_any_takes_another(self):
        nodes = graph(
            node("p", done=("04:00",) * 2),
            node("q", done=("05:00",) * 5),
            node("c", done=("01:00",) * 5, parents=("p", "q"), mode="ANY"),
        )
        got = expect(nodes, now=at("00:10"))[key("c")]
        assert (got.median, got.critical_path) == (at("05:10"), (key("q"),))

    def test_a_cap_gives_an_estimate_even_when_the_deciding_parent_has_none(self):
        nodes = graph(node("p"), node("c", done=("01:00",) * 5, parents=("p",), cap=at("06:00")))
        got = expect(nodes, now=at("00:10"))[key("c")]
        assert (got.status, got.median, got.critical_path) == ("waiting", at("06:10"), ())

    def test_a_parent_without_an_estimate_does_not_matter_once_the_mode_is_met(self):
        nodes = graph(
            node("p"),
            node("q", "success", finished_at=at("00:05")),
            node("c", done=("01:00",) * 5, parents=("p", "q"), mode="ANY"),
        )
        assert expect(nodes, now=at("00:10"))[key("c")].median == at("01:00")

    def test_waiting_on_more_parents_than_it_has_gives_no_estimate(self):
        got = expect(
            graph(node("p", done=("04:00",) * 5), node("c", done=("01:00",) * 5, parents=("p",), mode=2)), at("00:10")
        )
        assert got[key("c")].reason == "no estimate: waits on 2 parents, has 1"


class TestCycles:
    def test_nodes_waiting_on_each_other_have_no_estimate_and_the_pass_ends(self):
        nodes = graph(
            node("a", done=("01:00",) * 5, parents=("b",)),
            node("b", done=("01:00",) * 5, parents=("a",)),
            node("c", done=("01:00",) * 5, parents=("a",)),
        )
        got = expect(nodes, now=at("00:10"))
        assert [got[key(t)].reason for t in "ab"] == ["no estimate: cycle"] * 2
        assert got[key("c")].reason == "no estimate: waiting on a (no estimate: cycle)"

    def test_a_node_waiting_on_itself_is_a_cycle(self):
        got = expect(graph(node("a", done=("01:00",) * 5, parents=("a",))), now=at("00:10"))
        assert got[key("a")].reason == "no estimate: cycle"

    def test_a_complete_node_closes_no_cycle(self):
        nodes = graph(
            node("a", "success", finished_at=at("00:05"), parents=("b",)),
            node("b", done=("01:00",) * 5, parents=("a",)),
        )
        assert expect(nodes, now=at("00:10"))[key("b")].median == at("01:00")


def test_a_chain_deeper_than_pythons_recursion_limit_is_read_in_one_pass():
    nodes = {}
    for i in range(3_000):
        n = Node(
            key=f"t{i}@x", task=f"t{i}", slot=SLOT, state=None, offsets=minutes(60, 61, 62, 63, 64),
            durations=minutes(1, 1, 1, 1, 1), parents=(f"t{i - 1}@x",) if i else (),
        )  # fmt: skip
        nodes[n.key] = n
    got = expect(nodes, now=at("00:00"))
    assert got["t2999@x"].median == at("01:02") + 2999 * MIN
    assert got["t2999@x"].critical_path[:2] == ("t2998@x", "t2997@x")
    assert len(got["t2999@x"].critical_path) == 2999


class TestWording:
    def test_reasons_word_times_in_the_zone_given(self):
        nodes = graph(node("p", done=FIVE_AT_0455), node("c", done=("01:00",) * 5, parents=("p",)))
        got = expect(nodes, now=at("00:10"), zone=ZoneInfo("Europe/Amsterdam"))[key("c")]
        assert got.reason == "waiting on p (usually done 05:55, not started)"  # CET: UTC+1 in March

    def test_a_time_on_another_day_than_now_names_its_day(self):
        nodes = graph(node("p", done=("04:55",) * 5), node("c", done=("01:00",) * 5, parents=("p",)))
        got = expect(nodes, now=at("00:10") - dt.timedelta(days=1))[key("c")]
        assert got.reason == "waiting on p (usually done 03-04 04:55, not started)"


class TestTheGuidesWorkedExample:
    """docs/expected-times.md works an example through by hand: the rule gives the same numbers."""

    def chain(self, now: str, *, started: str | None = None, cap: str | None = None) -> dict:
        orders = node(
            "ingest/orders", "running" if started else None, started_at=at(started) if started else None,
            done=("04:48", "04:50", "04:52", "04:55", "04:55", "04:58", "05:20"), took=(10, 11, 12, 12, 13, 14, 30),
        )  # fmt: skip
        report = node(
            "mart/report", done=("05:05", "05:08", "05:10", "05:13", "05:14", "05:18", "05:45"),
            took=(15, 16, 16, 17, 18, 20, 25), parents=("ingest/orders",), cap=at(cap) if cap else None,
        )  # fmt: skip
        return expect(graph(orders, report), now=at(now))

    def test_at_three_nothing_started_and_the_report_keeps_its_own_time(self):
        got = self.chain("03:00")
        assert (got[key("ingest/orders")].median, got[key("ingest/orders")].p90) == (at("04:55"), at("05:20"))
        report = got[key("mart/report")]
        assert report.median == at("05:13")  # its usual start 04:56 + 17 minutes
        assert report.p90 == at("05:12") + seconds(1574.928569)  # 05:12 + sqrt(25² + 8²) minutes: 05:38

    def test_at_half_past_five_the_late_parent_decides(self):
        got = self.chain("05:30", started="05:25")[key("mart/report")]
        assert (got.median, got.critical_path) == (at("05:54"), (key("ingest/orders"),))
        assert got.p90 == at("05:54") + seconds(1181.862936)  # + sqrt(18² + 8²) minutes: 06:13
        assert got.reason == "waiting on ingest/orders (usually done 04:55, running since 05:25)"

    def test_a_fallback_deadline_of_a_quarter_to_six_brings_the_p90_in(self):
        got = self.chain("05:30", started="05:25", cap="05:45")[key("mart/report")]
        assert got.median == at("05:54")
        assert got.p90 == at("05:54") + seconds(678.822509)  # + sqrt(8² + 8²) minutes: 06:05


def seconds(value: float) -> dt.timedelta:
    return dt.timedelta(microseconds=round(value * 1_000_000))


@pytest.mark.parametrize("n", range(0, 64))
def test_the_median_and_p90_sorted_once_are_the_nearest_ranks(n):
    values = tuple(((i * 37) % 101) * MIN for i in range(n))
    assert median_and_p90(values) == (nearest_rank(values, MEDIAN), nearest_rank(values, P90))


class TestParentsDone:
    def test_a_slot_whose_late_parent_just_landed_is_expected_after_it_by_its_own_duration_not_now(self):
        """A report that takes an hour, whose feed landed at 05:50: it is done near 06:50, not "now" (06:00
        would clear a 06:00 deadline's warning that still stands)."""
        nodes = graph(
            node("feed", "success", done=FIVE_AT_0455, finished_at=at("05:50")),
            node("report", done=("02:00",) * 5, took=(60, 60, 60, 60, 70), parents=("feed",)),
        )
        found = expect(nodes, at("05:51"))[key("report")]
        assert (found.status, found.median, found.p90) == ("waiting", at("06:50"), at("07:00"))
        assert found.critical_path == ()
        assert found.reason == "feed done at 05:50, not started"

    def test_a_slot_whose_parents_landed_early_keeps_its_own_estimate(self):
        nodes = graph(
            node("feed", "success", done=FIVE_AT_0455, finished_at=at("00:30")),
            node("report", done=("02:00",) * 5, took=(60, 60, 60, 60, 70), parents=("feed",)),
        )
        found = expect(nodes, at("00:31"))[key("report")]
        assert (found.median, found.p90) == (at("02:00"), at("02:10"))
        assert found.reason == "usually done 02:00, not started"
