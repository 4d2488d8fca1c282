"""The several-triggerer benchmark's layouts and derived figures: where each gate waits, the per-release
figures and ratios, and the arithmetic of the larger deployment's estimate, against hand-computed values."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.gating.trigger_queues import choose_queue, queue_of
from bench.tables_trigger_routes import trigger_routes
from bench.trigger_layouts import (
    OWN_TEAM,
    generate,
    own_queue_share,
    place,
    queues,
    shares,
    team_of,
    watched,
)
from bench.trigger_route_figures import estimate, fit_costs, per_process, percentile, ratios, steady_tick_ms


def most(parents, names) -> set[str]:
    """From the rule's words: the queues most parents' projects hash to (a tie: any of them, by the parent
    set's hash)."""
    counts = Counter(queue_of(p, names) for p in set(parents))
    return {q for q in names if counts[q] == max(counts.values())}


@settings(max_examples=20, deadline=None)
@given(k=st.integers(1, 3000), processes=st.integers(1, 6))
def test_every_routed_gate_waits_in_the_process_serving_the_queue_its_parents_projects_hash_to(k, processes):
    gates = generate(k)
    names = queues(processes)
    placement = place(gates, processes, "routed")
    for gate, n in zip(gates.gates, placement, strict=True):
        parents = [gates.parents[i] for i in gate]
        assert names[n] == choose_queue(parents, names)
        assert names[n] in most(parents, names)


def test_routed_gates_of_one_team_whose_parents_are_all_its_own_wait_together():
    gates = generate(5000)
    placement = place(gates, 4, "routed")
    by_team: dict[int, set[int]] = {}
    for g, gate in enumerate(gates.gates):
        team = team_of(g, gates.teams)
        if all(i % gates.teams == team for i in gate):
            by_team.setdefault(team, set()).add(placement[g])
    assert len(by_team) == gates.teams == 10
    assert all(len(places) == 1 for places in by_team.values())


def test_todays_layout_spreads_the_gates_evenly_whatever_they_wait_on():
    gates = generate(1001)
    placement = place(gates, 4, "today")
    counts = Counter(placement)
    assert sorted(counts.values()) == [250, 250, 250, 251]
    # not by team: each process holds gates of many teams
    assert all(len({team_of(g, gates.teams) for g in share}) > 1 for share in shares(gates, placement, 4))


def test_a_teams_gates_all_wait_in_one_process_in_the_team_layout():
    gates = generate(5000)
    placement = place(gates, 4, "team")
    by_team = {}
    for g, n in enumerate(placement):
        assert by_team.setdefault(team_of(g, gates.teams), n) == n
    assert set(placement) == {0, 1, 2, 3}


def test_an_unknown_layout_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown layout 'everywhere'"):
        place(generate(10), 2, "everywhere")


def test_the_gates_are_the_same_in_every_run_and_mostly_wait_on_their_own_team():
    a, b = generate(20000), generate(20000)
    assert a.gates == b.gates and a.teams == 40 and len(a.parents) == 4000
    sizes = Counter(len(g) for g in a.gates)
    assert set(sizes) == {1, 2, 3}
    assert 0.57 < sizes[1] / 20000 < 0.63
    own = sum(i % a.teams == team_of(g, a.teams) for g, gate in enumerate(a.gates) for i in gate)
    drawn = sum(len(g) for g in a.gates)
    assert OWN_TEAM - 0.02 < own / drawn < OWN_TEAM + 0.02


def test_the_share_of_gates_with_every_parent_in_their_queue_counts_only_those():
    gates = generate(5000)  # 10 teams: some gates wait on another team's parent, in another queue
    names = queues(3)
    placement = place(gates, 3, "routed")
    by_hand = sum(
        all(queue_of(gates.parents[i], names) == names[n] for i in gate)
        for gate, n in zip(gates.gates, placement, strict=True)
    )
    assert own_queue_share(gates, 3) == by_hand / 5000
    assert 0 < by_hand < 5000


def test_watched_parents_count_each_parent_once_per_process():
    gates = generate(50)
    placement = [0] * 50
    assert watched(gates, placement, 2) == [len({i for g in gates.gates for i in g}), 0]


def run(rows=300, judged=100, cpu=1.5, release=(0.1, 0.2, 0.3, 0.4)):
    ticks = [{"cpu_ms": c, "statements": 1, "statement_ms": 0.5, "wall_s": 1.0} for c in (2.0, 3.0, 4.0)]
    return {
        "gates": 10,
        "ticks": ticks,
        "release_s": list(release),
        "not_released": 0,
        "cpu_s": cpu,
        "rows": rows,
        "parents_judged": judged,
        "statement_s": 0.03,
    }


def test_one_transaction_figures_are_per_release_and_steady_ones_per_thousand_parents_completed():
    one = per_process(run(), "one_transaction", 500)
    assert (one["rows_read"], one["parents_judged"], one["cpu_s"]) == (300, 100, 1.5)
    steady = per_process(run(), "steady", 500)
    assert (steady["rows_read"], steady["parents_judged"], steady["cpu_s"]) == (600, 200, 3.0)
    assert steady["release_median_s"] == pytest.approx(0.25)
    assert steady["release_p99_s"] == 0.4
    assert steady["idle_cpu_ms_per_tick"] == 3.0


def test_a_steady_window_with_no_release_has_no_latency_figures():
    fig = per_process(run(release=()), "steady", 1000)
    assert fig["release_median_s"] is None and fig["release_p99_s"] is None
    assert percentile([], 0.99) is None


def test_routed_is_compared_with_today_by_the_busiest_process_of_each():
    today = [
        {"rows_read": 900, "parents_judged": 300, "cpu_s": 3.0},
        {"rows_read": 600, "parents_judged": 200, "cpu_s": 2.0},
    ]
    routed = [
        {"rows_read": 150, "parents_judged": 50, "cpu_s": 0.5},
        {"rows_read": 300, "parents_judged": 60, "cpu_s": 1.5},
    ]
    assert ratios(today, routed) == {"rows_read": 300 / 900, "parents_judged": 60 / 300, "cpu_s": 1.5 / 3.0}


def test_the_cost_fit_recovers_per_gate_and_per_parent_costs_from_exact_points():
    points = [(g, p, 2e-5 * g + 5e-5 * p) for g, p in ((1000, 100), (1000, 800), (500, 400), (2000, 50))]
    fitted = fit_costs(points)
    assert fitted["cpu_s_per_gate"] == pytest.approx(2e-5)
    assert fitted["cpu_s_per_parent"] == pytest.approx(5e-5)


def test_a_negative_parent_cost_in_the_fit_is_taken_as_zero_and_the_gates_fitted_alone():
    points = [(100, 10, 1.0), (100, 20, 0.9)]
    assert fit_costs(points) == {"cpu_s_per_gate": pytest.approx(1.9 / 200), "cpu_s_per_parent": 0.0}


UNIT = {
    "cpu_s_per_gate": 2e-5,
    "cpu_s_per_parent": 1e-4,
    "statement_s_per_row": 1e-5,
    "rows_per_judged_parent": 2.0,
    "idle_cpu_ms_per_tick": 3.0,
    "idle_statements_per_tick": 1.0,
    "idle_statement_ms_per_tick": 0.5,
    "steady_cpu_ms_per_tick": 10.0,
}


def test_the_estimate_is_the_measured_unit_costs_times_the_deployments_counts():
    layout = {"gates_max": 30000, "watched_max": 10000, "watched_total": 200000}
    structure = {
        "triggerers": 40,
        "gates": 1_000_000,
        "parents": 200_000,
        "today": layout,
        "routed": layout,
        "team": layout,
    }
    e = estimate(UNIT, structure, poll_interval_s=2.0, rate_per_min=1000)["routed"]
    assert e["tick_triggerer_cpu_ms"] == 3.0
    assert e["tick_catalog_statements"] == 40
    assert e["tick_catalog_ms"] == 20.0
    assert e["tick_catalog_ms_per_s"] == 10.0
    assert e["release_triggerer_cpu_s"] == pytest.approx(30000 * 2e-5 + 10000 * 1e-4)  # 1.6 s
    assert e["release_triggerer_rows"] == 20000
    assert e["release_catalog_rows"] == 400000
    assert e["release_catalog_s"] == pytest.approx(4.0)
    assert e["steady_triggerer_parents_per_min"] == pytest.approx(50.0)  # 1000 * 10000 / 200000
    # 30 ticks a minute at 10 ms, 50 parents judged, 150 gates released (1,000 parents of 200,000, 30,000 gates)
    assert e["steady_triggerer_cpu_s_per_min"] == pytest.approx(0.3 + 50 * 1e-4 + 150 * 2e-5)


def test_a_steady_ticks_cost_is_its_cpu_beyond_releases_and_judged_parents_per_tick():
    fitted = {"cpu_s_per_gate": 1e-3, "cpu_s_per_parent": 1e-2}
    runs = [
        dict(run(judged=100, cpu=3.0, release=[0.1] * 500), window_s=60.0),  # 3.0 - 0.5 - 1.0 = 1.5 s in 60 ticks
        dict(run(judged=0, cpu=1.0, release=[]), window_s=30.0),  # 1.0 s in 30 ticks
        dict(run(judged=0, cpu=4.0, release=[]), window_s=40.0),  # 4.0 s in 40 ticks
    ]
    assert steady_tick_ms(runs, fitted, poll_interval_s=1.0) == pytest.approx(1000 / 30)


def test_the_goals_table_says_which_goal_is_met():
    figs = {"rows_read": 0.25, "parents_judged": 0.5, "cpu_s": None}
    doc = {
        "derived": {"ratios": {"steady": {"routed": figs}}},
        "results": [
            {
                "scenario": "steady",
                "layout": "routed",
                "parents_completed": 1000,
                "processes": [run(release=(1.0, 1.6))],
            },
            {"scenario": "one_transaction", "layout": "routed", "parents_completed": 9, "processes": [run(cpu=4.5)]},
        ],
    }
    table = "\n".join(trigger_routes(doc, "goals"))
    assert "rows read (busiest process) | 0.25 | ≤ 0.33 | met |" in table
    assert "parents judged (busiest process) | 0.50 | ≤ 0.33 | not met |" in table
    assert "CPU (busiest process) | n/a | ≤ 0.33 | n/a |" in table
    assert "release p99 (worst process), s | 1.60 | ≤ 1.5 | not met |" in table
    assert "one core per triggerer, s | 4.50 | ≤ 4 | not met |" in table
