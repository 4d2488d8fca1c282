"""The expected-times backtest (bench/bench_expectations.py) on a tiny generated catalog: the history is
deterministic, the replay never reads the future, and a child held back by a late parent is warned before
its deadline, where Airflow's DeadlineAlert would call back only at it."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from airflow_leastaction.expectations.estimate import WINDOW
from tests.helpers.expectation_replay import (
    WARNING_COLUMNS,
    Morning,
    deadline_offsets,
    false_warning_classes,
    kind_of_day,
    nearest_rank,
    warning_summary,
    warnings,
)
from tests.helpers.expected_times import DAY, EPOCH, MINUTE, generate, slot_of

TINY = {"dags": 2, "tasks_per_dag": 6, "outside": 3, "feeds": 1}
DAYS = 36  # four weeks before the replayed mornings, for the deadlines


@pytest.fixture(scope="module")
def history():
    return generate(1, DAYS, **TINY)


def test_the_same_seed_generates_the_same_history_and_another_seed_another(history):
    again = generate(1, DAYS, **TINY)
    assert again.tasks == history.tasks and again.runs == history.runs
    other = generate(2, DAYS, **TINY)
    assert other.runs != history.runs


def test_the_world_has_outside_loads_hourly_feeds_and_dags_whose_parents_come_first(history):
    kinds = {(t.dag is None, t.hourly) for t in history.tasks.values()}
    assert kinds == {(True, False), (True, True), (False, False)}
    assert len(history.tasks) == 2 * 6 + 3 + 1
    seen = set()
    for name, t in history.tasks.items():
        assert set(t.parents) <= seen, name
        seen.add(name)
    assert all(r.started_at == r.finished_at for r in history.runs["load_00"])  # reported at completion


def test_monday_runs_carry_more_work_and_weekend_runs_less():
    big = generate(4, 42, dags=4, tasks_per_dag=10, outside=4, feeds=0)
    work: dict[str, list[float]] = {"monday": [], "weekday": [], "weekend": []}
    for t, runs in big.runs.items():
        if big.tasks[t].dag is None:
            continue
        for r in runs:
            work[kind_of_day(r.slot, hourly=False)].append(
                (r.finished_at - r.started_at) / (MINUTE * big.tasks[t].minutes)
            )
    median = {k: nearest_rank(v, 0.5) for k, v in work.items()}
    assert median["monday"] > 1.2 * median["weekday"] > 1.2 * 1.2 * median["weekend"]


def test_the_nodes_of_an_instant_hold_only_what_had_happened_by_then(history):
    morning = Morning(history, 30)
    target = morning.members[morning.targets[-1]]
    now = target.run.finished_at - 20 * MINUTE
    nodes = morning.nodes_at(now)
    assert nodes[target.key].state != "success"
    states = set()
    for key, node in nodes.items():
        run = morning.members[key].run
        states.add(node.state)
        if node.state == "success":
            assert node.finished_at == run.finished_at <= now
        elif node.state is None:
            assert run.first_started > now
        else:
            assert node.started_at <= now < run.finished_at and node.finished_at is None
        done = sorted((r for r in history.runs[node.task] if r.finished_at <= now), key=lambda r: r.slot)
        assert node.offsets == tuple(r.finished_at - r.slot for r in reversed(done[-WINDOW:]))
    assert {"success", None} <= states  # the instant has both complete and waiting slots


def test_a_deadline_is_the_usual_p90_plus_a_quarter_hour_on_a_quarter_of_the_clock(history):
    for task, offset in deadline_offsets(history, 28).items():
        runs = history.runs[task][:28]
        p90 = sorted(r.finished_at - r.slot for r in runs)[math.ceil(0.9 * 28) - 1]
        due = runs[0].slot + offset
        assert due.minute % 15 == 0 and due.second == due.microsecond == 0, task
        assert p90 + 15 * MINUTE <= offset < p90 + 30 * MINUTE, task


def test_a_child_held_back_by_a_late_load_is_warned_before_its_deadline(history):
    late = [(t, d) for t in history.tasks for d in range(28, DAYS) if history.runs[t][d].incident == "late"]
    assert ("load_02", 32) in late
    rows = {r["task"]: r for r in warnings(Morning(history, 32), deadline_offsets(history, 28))}
    assert rows["load_02"]["missed"]
    children = [t for t, x in history.tasks.items() if "load_02" in x.parents]
    missed = [rows[t] for t in children if rows[t]["missed"]]
    assert missed, "the late load made none of its children miss its deadline"
    for row in missed:
        assert row["lead_min"] > 0, row  # DeadlineAlert's lead is 0: it calls back at the deadline
        assert row["chance50_lead_min"] > 0, row  # and the chance of missing passed one half before it


def test_the_warning_summary_counts_missed_deadlines_leads_and_false_warnings():
    def row(task, day, missed, lead, early=False, incident=None, own_within=False, deadline=0.0, actual=0.0):
        values = {c: None for c in WARNING_COLUMNS} | {
            "task": task,
            "day": day,
            "outside": False,
            "deadline_min": deadline,
            "actual_min": actual,
            "missed": missed,
            "lead_min": lead,
            "median_lead_min": None,
            "before_any_record": early,
            "own_p90_within": own_within,
            "incident": incident,
        }
        return [values[c] for c in WARNING_COLUMNS]

    missed = [row("a", 0, True, 45.0, incident="late"), row("b", 0, True, 10.0), row("a", 1, True, 30.0)]
    met = [row("c", 0, False, 20.0, early=True), row("c", 1, False, 5.0, own_within=True), row("b", 1, False, None)]
    rows = missed + met
    s = warning_summary(rows)
    assert (s["targets"], s["missed"], s["warned_ahead"], s["not_warned"]) == (6, 3, 2, 0)
    assert (s["lead_median_min"], s["lead_p10_min"]) == (30.0, 10.0)
    assert (s["warnings"], s["false"], s["missed_after_incident"]) == (5, 2, 1)
    assert (s["false_before_any_record"], s["false_own_p90_within"]) == (1, 1)
    assert (s["tasks"], s["false_tasks"], s["false_tasks_most_mornings"]) == (3, 1, 1)  # c: both mornings
    assert warning_summary(rows, "median_lead_min")["warnings"] == 0


def test_false_warnings_are_counted_by_slack_kind_of_day_and_cause():
    def row(day, lead, deadline, actual, incident=None, own_within=False):
        values = {c: None for c in WARNING_COLUMNS} | {
            "task": "a", "day": day, "deadline_min": deadline, "actual_min": actual, "missed": actual > deadline,
            "lead_min": lead, "own_p90_within": own_within, "incident": incident,
        }  # fmt: skip
        return [values[c] for c in WARNING_COLUMNS]

    monday = next(d for d in range(7) if kind_of_day(EPOCH + d * DAY, hourly=False) == "monday")
    rows = [
        row(monday, 40.0, 300.0, 295.0),  # met by 5 minutes, its own history
        row(monday + 1, 40.0, 300.0, 280.0, own_within=True),  # met by 20, the parents' estimate
        row(monday + 2, 40.0, 300.0, 200.0, incident="rerun"),  # met by 100, an incident upstream
        row(monday + 3, None, 300.0, 200.0),  # not warned
        row(monday + 4, 40.0, 300.0, 310.0),  # missed: a true warning
    ]
    c = false_warning_classes(rows)
    assert c["false"] == 3
    assert c["slack_min"] == {"0-15": 1, "15-30": 1, "60+": 1}
    assert c["kind_of_day"] == {"monday": 1, "weekday": 2, "weekend": 0}
    assert c["cause"] == {"own history": 1, "parents": 1, "incident": 1}


def test_a_daily_slot_is_its_cron_time_on_its_slot_day():
    assert slot_of("15 3 * * *", 2) == EPOCH + 2 * DAY + dt.timedelta(hours=3, minutes=15)
    assert slot_of("0 * * * *", 2) == EPOCH + 2 * DAY


def test_the_gates_rule_warns_at_least_its_lead_ahead_or_leaves_the_deadline_to_airflow(history):
    rows = [r for day in range(28, DAYS) for r in warnings(Morning(history, day), deadline_offsets(history, 28))]
    leads = [r["gate_lead_min"] for r in rows if r["gate_lead_min"] is not None]
    assert leads, "the gate's rule never warned on the replayed mornings"
    assert all(lead >= 30 or lead == 0 for lead in leads), sorted(leads)
    missed = [r for r in rows if r["missed"]]
    assert missed and all(r["gate_lead_min"] is not None for r in missed)  # lead 0: the DAG's DeadlineAlert
