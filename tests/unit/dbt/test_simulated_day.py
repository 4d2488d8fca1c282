"""The benchmark's minimum: what a simulated day must build, from the manifest's parents and its changes."""

from __future__ import annotations

from tests.helpers.dbt_day import DayPlan, Pipeline, downstream_of_changes, minimum_builds, wrong_decisions

IDS = {"s1": "source.p.raw.s1", "s2": "source.p.raw.s2"}
A, B, C = "model.p.a", "model.p.b", "model.p.c"
PARENTS = {A: [IDS["s1"]], B: [IDS["s2"]], C: [A, B]}  # s1 -> a -> c <- b <- s2


def day(changes, *pipelines) -> DayPlan:
    return DayPlan(len(changes), dict(enumerate(changes)), list(pipelines))


def test_a_change_reaches_a_model_only_through_models_that_were_built():
    plan = day([["s1"], []], Pipeline("b", ("s2",), 1, 0), Pipeline("a", ("s1",), 2, 1))
    # Hour 0: s1 changed, but only b and c are asked for; a is not rebuilt, so c reads what it read.
    # Hour 1: a is asked for (with c): both are built.
    assert minimum_builds(plan, PARENTS, IDS) == {(1, A), (1, C)}
    # The coarse count takes c in hour 0 (downstream of s1, which changed), then a in hour 1.
    assert downstream_of_changes(plan, PARENTS, IDS) == 2


def test_nothing_changed_nothing_is_needed_and_each_change_is_needed_once():
    assert minimum_builds(day([[], []], Pipeline("all", ("s1", "s2"), 1, 0)), PARENTS, IDS) == set()
    plan = day([["s2"], [], ["s2"]], Pipeline("all", ("s1", "s2"), 1, 0))
    assert minimum_builds(plan, PARENTS, IDS) == {(0, B), (0, C), (2, B), (2, C)}


def test_a_pass_is_wrong_when_it_built_what_was_not_needed_or_left_what_was():
    needed = {(0, B), (0, C)}
    passes = [
        {"unique_id": B, "decision": "built", "h": 0},
        {"unique_id": C, "decision": "reused", "h": 0},
        {"unique_id": A, "decision": "built", "h": 0},
    ]
    wrong = wrong_decisions(passes, needed, lambda r: r["h"])
    assert wrong == {"built_unchanged": [(0, A)], "skipped_changed": [(0, C)]}
