"""Modules moved by the layout of one package per model keep their old import paths for one release."""

import importlib
import sys

import pytest


def test_old_intervals_names_warn_and_resolve_to_the_slots_module():
    from airflow_leastaction.intervals import slots

    with pytest.warns(DeprecationWarning, match="intervals.slots"):
        from airflow_leastaction.intervals import expected_slot
    assert expected_slot is slots.expected_slot


def test_intervals_package_names_no_other_attribute():
    import airflow_leastaction.intervals as intervals

    with pytest.raises(AttributeError, match="no_such_name"):
        intervals.no_such_name  # noqa: B018


def test_old_graph_module_warns_and_still_validates():
    from airflow_leastaction.run_conditions import waves

    sys.modules.pop("airflow_leastaction.graph", None)
    with pytest.warns(DeprecationWarning, match="run_conditions.waves"):
        graph = importlib.import_module("airflow_leastaction.graph")
    assert graph.validate is waves.validate
    assert graph.waves is waves.waves


def test_old_run_outcome_path_warns_and_resolves_to_its_own_module():
    from airflow_leastaction.operators import run_condition, run_outcome

    with pytest.warns(DeprecationWarning, match="operators.run_outcome"):
        moved = run_condition.RunOutcome
    assert moved is run_outcome.RunOutcome


def test_a_run_outcome_trigger_row_written_before_the_move_still_resolves():
    # Airflow imports a trigger by the classpath its row was written with.
    try:
        from airflow._shared.module_loading import import_string  # what the triggerer imports a row with
    except ImportError:  # Airflow 3.1's triggerer
        from airflow.utils.module_loading import import_string

    from airflow_leastaction.triggers.run_outcome import RunOutcomeTrigger

    assert import_string("airflow_leastaction.triggers.run_condition.RunOutcomeTrigger") is RunOutcomeTrigger
    path, _ = RunOutcomeTrigger("d", "r", "leastaction_run_outcome").serialize()
    assert path == "airflow_leastaction.triggers.run_outcome.RunOutcomeTrigger"
