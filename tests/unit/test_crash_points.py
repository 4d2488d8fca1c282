"""Crash points kill the process at the armed step boundary, and only there."""

from __future__ import annotations

import pytest

from airflow_leastaction.crash_points import CrashPoint, _parse, declared
from tests.helpers.crash import run_python, run_to_end, run_until_crash

STEPS = """
from airflow_leastaction.crash_points import CrashPoint
first = CrashPoint("demo.after_first", "the first step")
second = CrashPoint("demo.after_second", "the second step")
for step in range(3):
    print("step", step, flush=True)
    first()
second()
print("end", flush=True)
"""


def test_an_unarmed_point_lets_the_work_finish():
    assert run_to_end(STEPS).splitlines() == ["step 0", "step 1", "step 2", "end"]


def test_an_armed_point_kills_the_process_when_it_is_reached():
    run_until_crash(STEPS, "demo.after_second")


def test_an_armed_point_with_a_count_kills_on_that_pass_only():
    from airflow_leastaction.crash_points import armed

    done = run_python(STEPS, env=armed("demo.after_first", nth=2))
    assert done.returncode == -9
    assert done.stdout.splitlines() == ["step 0", "step 1"]


def test_a_point_the_work_never_reaches_fails_the_crash_helper():
    with pytest.raises(AssertionError, match="demo.nowhere"):
        run_until_crash(STEPS, "demo.nowhere")


def test_a_name_declared_twice_is_refused():
    CrashPoint("unit.once", "a test step")
    with pytest.raises(ValueError, match="unit.once"):
        CrashPoint("unit.once", "a test step")
    assert "unit.once" in declared("unit.")


def test_the_armed_variable_reads_names_and_counts():
    assert _parse("a.b, c.d:3,,") == {"a.b": 1, "c.d": 3}
    assert _parse("") == {}
