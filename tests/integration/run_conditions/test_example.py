"""The example pipeline runs green: ANY, N with a cross-DAG dependency, HAS_DATA, a FAILURE alert."""

from __future__ import annotations

from tests.helpers.run_conditions import attempt_summaries, day, decisions, states


def test_the_example_pipeline_runs_each_task_by_its_run_condition(rc_catalog, run_dag):
    run = run_dag("run_conditions_pipeline", day(16))
    got = states(run)
    assert run.state == "success"
    assert got["publish_changes"] == "success"  # load_orders reported rows written
    assert got["daily_summary"] == "success"
    assert got["reconcile"] == "success"  # 2 of 3: the weekly FX rates have not run
    assert got["alert_on_failure"] == "skipped"  # load_orders did not fail
    assert got["cleanup"] == "success"
    fx = [
        d
        for d in decisions(rc_catalog, "run_conditions_pipeline", "reconcile__gate")
        if d["dependency"].startswith("catalog:")
    ]
    assert [d["result"] for d in fx] == ["UNSATISFIED"]
    assert "fx_rates_weekly.load_rates" in fx[0]["reason"]


def test_every_gate_attempt_of_the_pipeline_is_summarised_as_its_decisions_count(rc_catalog_any, run_dag):
    """Gates started in the triggerer, a gate that skips, a native condition: each writer records its
    attempt's summary with its decisions."""
    assert run_dag("run_conditions_pipeline", day(17)).state == "success"
    written, counted = attempt_summaries(rc_catalog_any)
    tasks = {key[1] for key in written}
    assert {"reconcile__gate", "daily_summary__gate", "alert_on_failure__gate", "cleanup"} <= tasks, tasks
    assert written == counted
