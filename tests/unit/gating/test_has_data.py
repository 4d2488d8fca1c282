"""The HAS_DATA rule (gating/has_data.py) and the two judges that use it: a dependency on a task of the same
run (``judge_upstream_task``) and on another DAG's latest run (``judge_finished_run``). Property tests
against an oracle written from the rule's words: met only for a readable count above 0; final unless the
rows could not be read; the other dependency types never look at rows."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.exceptions import RowsUnreadableWaitError
from airflow_leastaction.gating.engine import DependencyType, Verdict, judge_upstream_task
from airflow_leastaction.gating.has_data import has_data, rows_text
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.judging import RunView, evaluate
from airflow_leastaction.run_conditions.latest_run import LatestRuns, RunRecord, judge_finished_run
from airflow_leastaction.run_conditions.model import Dependency, GateSpec
from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy

NOW = dt.datetime(2026, 11, 28, 10, tzinfo=dt.UTC)
SLOT = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
RUN_ID = "scheduled__2026-11-28T00:00:00+00:00"
ERROR = "ConnectionError: the API server cannot be reached"

counts = st.one_of(st.none(), st.integers(min_value=0, max_value=2**63 - 1))
errors = st.one_of(st.none(), st.just(""), st.text(min_size=1, max_size=40).filter(str.strip))
types = st.sampled_from(list(DependencyType))


def oracle(rows: int | None, error: str | None) -> tuple[bool, bool]:
    """(met, final), from the rule's words."""
    readable = rows is not None
    return (readable and rows > 0, readable or not error)


def record(rows: int | None, error: str | None, state: str = "success") -> RunRecord:
    return RunRecord(1, 10, SLOT, RUN_ID, state, 1, rows, NOW, NOW, error)


@given(counts, errors)
def test_has_data_is_met_only_by_a_readable_count_above_zero_and_final_unless_unreadable(rows, error):
    check = has_data(rows, error)
    assert (check.met, check.final) == oracle(rows, error)
    assert check.unreadable == (not check.final)
    if check.unreadable:
        assert error in check.what and "a re-run of the upstream records a new success with its rows" in check.what


@given(counts, errors, types)
def test_both_judges_agree_with_the_rule_on_a_success(rows, error, typ):
    in_run = judge_upstream_task("task:load", typ, "success", rows_written=rows, rows_error=error)
    elsewhere = judge_finished_run("load@other", typ, "load", record(rows, error))
    met, final = oracle(rows, error) if typ is DependencyType.HAS_DATA else (typ is not DependencyType.FAILURE, True)
    for judged in (in_run, elsewhere):
        assert (judged.satisfied, judged.final, judged.rows_unreadable) == (met, final, not final)
        if not final:
            assert "load (HAS_DATA): " in judged.reason and f"could not be read ({error})" in judged.reason


@given(counts, errors, st.sampled_from(["failed", "skipped", "upstream_failed"]))
def test_rows_of_an_upstream_that_did_not_succeed_never_make_it_wait(rows, error, state):
    judged = judge_finished_run("load@other", DependencyType.HAS_DATA, "load", record(rows, error, state))
    assert (judged.satisfied, judged.final, judged.rows_unreadable) == (False, True, False)


def test_the_unreadable_flag_survives_a_trigger_event():
    judged = judge_upstream_task("task:load", DependencyType.HAS_DATA, "success", rows_error=ERROR)
    back = type(judged).from_event(judged.as_event())
    assert back == judged and back.rows_unreadable
    old_event = {k: v for k, v in judged.as_event().items() if k != "rows_unreadable"}
    assert type(judged).from_event(old_event).rows_unreadable is False  # an event of the release before


def _gate(in_run: bool, max_wait: dt.timedelta):
    """A gate on ``load`` (this run, else another DAG's latest run) whose success's rows could not be read."""
    other = TaskIdentity("fx.load", "airflow")
    dep = Dependency("load", DependencyType.HAS_DATA) if in_run else Dependency(other, DependencyType.HAS_DATA)
    spec = GateSpec("report", (dep,))
    states = {"load": "success", "report__gate": "deferred", "report": None}
    records = {"load": record(None, ERROR)} if in_run else {}
    run = RunView(RUN_ID, states, {"report__gate": ["load"], "report": ["report__gate"]}, frozenset(), records)
    latest = {} if in_run else {other: LatestRuns(10, record(None, ERROR), record(None, ERROR), None)}
    return spec, run, latest, WaitPolicy(max_wait=max_wait)


@pytest.mark.parametrize("in_run", [True, False], ids=["same run", "another DAG"])
def test_a_gate_waits_on_unreadable_rows_then_fails_at_its_max_wait_never_skips(in_run):
    spec, run, latest, policy = _gate(in_run, dt.timedelta(minutes=5))
    outcome, clock = evaluate(spec, run, latest, {}, WaitClock(), policy, NOW)
    assert outcome.verdict is Verdict.WAIT
    assert clock.started == NOW and clock.looks == 0  # no look spent: nothing is running
    later = NOW + dt.timedelta(minutes=4, seconds=59)
    assert evaluate(spec, run, latest, {}, clock, policy, later)[0].verdict is Verdict.WAIT
    with pytest.raises(RowsUnreadableWaitError, match=r"'report' waited its max_wait .*could not be read \(Connection"):
        evaluate(spec, run, latest, {}, clock, policy, NOW + dt.timedelta(minutes=5))


@given(counts, errors)
def test_rows_read_to_a_person_as_the_count_the_error_or_nothing(rows, error):
    shown = rows_text(rows, error)
    if rows is not None:
        assert shown == f"{rows} rows written"
    elif error:
        assert shown == f"rows unknown: could not be read ({error})"
    else:
        assert shown is None
