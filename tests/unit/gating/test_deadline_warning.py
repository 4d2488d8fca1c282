"""The early warning's rules: when a run's deadline is, when to warn and when to clear, and what it says.
Pure logic: no Airflow, no database."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidDeadlineError
from airflow_leastaction.gating.deadline_warning import (
    CLEAR,
    CLEARED,
    WARN,
    WARNED,
    DeadlineWarning,
    WarningRule,
    check_deadline,
    default_wait,
    next_step,
    warning_chance,
    warning_lead,
    warning_message,
)
from airflow_leastaction.gating.local_deadline import deadline_at

UTC = dt.UTC
SLOT = dt.datetime(2026, 11, 20, tzinfo=UTC)
DEADLINE = SLOT + dt.timedelta(hours=6)
H = dt.timedelta(hours=1)


M = dt.timedelta(minutes=1)
RULE = WarningRule()  # 0.5 at the last call, 0.9 before it, 30 minutes of lead


class TestWhenToWarn:
    @pytest.mark.parametrize(
        "state, chance, now, step",
        [
            pytest.param(None, 0.92, SLOT + 4 * H, WARN, id="two hours ahead, a miss near certain: warn"),
            pytest.param(None, 0.9, SLOT + 4 * H, WARN, id="two hours ahead, at the early bar: warn"),
            pytest.param(None, 0.62, SLOT + 4 * H, None, id="two hours ahead, a miss only likely: wait"),
            pytest.param(None, 0.62, DEADLINE - 33 * M, WARN, id="at the last call, a miss likely: warn"),
            pytest.param(None, 0.5, DEADLINE - 30 * M, WARN, id="the last call's last minute, at the bar: warn"),
            pytest.param(None, 0.49, DEADLINE - 33 * M, None, id="at the last call, under the bar: nothing"),
            pytest.param(None, 1.0, DEADLINE - 29 * M, None, id="inside the lead, looked at its last call: too late"),
            pytest.param(None, 0.0, SLOT + 4 * H, None, id="no chance of missing: nothing"),
            pytest.param(None, None, DEADLINE - 33 * M, None, id="no estimate: nothing"),
            pytest.param(None, 1.0, DEADLINE, None, id="the deadline passed: too late to warn"),
            pytest.param(WARNED, 1.0, SLOT + 5 * H, None, id="warned once: never twice"),
            pytest.param(WARNED, 0.5, SLOT + 5 * H, None, id="warned, still at the threshold: it stands"),
            pytest.param(WARNED, 0.49, SLOT + 5 * H, CLEAR, id="warned, back under the threshold: clear"),
            pytest.param(WARNED, 0.1, DEADLINE - 10 * M, CLEAR, id="warned, back on time inside the lead: clear"),
            pytest.param(WARNED, 0.1, DEADLINE, None, id="warned, the deadline passed: nothing to clear"),
            pytest.param(WARNED, None, SLOT + 5 * H, None, id="warned, no estimate now: it stands"),
            pytest.param(CLEARED, 1.0, SLOT + 5 * H, None, id="cleared: late again says nothing"),
            pytest.param(CLEARED, 0.0, SLOT + 5 * H, None, id="cleared once only"),
        ],
    )
    def test_the_step_of_one_look(self, state, chance, now, step):
        assert next_step(state, chance, DEADLINE, now, RULE, now - M) == step

    @pytest.mark.parametrize(
        "previous, step",
        [
            pytest.param(None, WARN, id="its first look: its last call"),
            pytest.param(DEADLINE - 50 * M, WARN, id="it last looked before its last call: this is it"),
            pytest.param(DEADLINE - 33 * M, None, id="it looked in its last call: too late now"),
        ],
    )
    def test_a_gate_that_did_not_look_in_its_last_call_makes_it_at_its_next_look(self, previous, step):
        assert next_step(None, 0.6, DEADLINE, DEADLINE - 20 * M, RULE, previous) == step

    @pytest.mark.parametrize(("probability", "step"), [(0.3, WARN), (0.4, WARN), (0.7, None)])
    def test_the_last_calls_bar_is_the_deployments(self, probability, step):
        assert next_step(None, 0.4, DEADLINE, DEADLINE - 32 * M, WarningRule(probability), DEADLINE - 33 * M) == step

    def test_an_early_bar_under_the_last_calls_is_raised_to_it(self):
        rule = WarningRule(0.8, 0.6)
        assert next_step(None, 0.7, DEADLINE, SLOT, rule) is None
        assert next_step(None, 0.8, DEADLINE, SLOT, rule) == WARN

    def test_no_lead_warns_until_the_deadline(self):
        rule = WarningRule(lead=dt.timedelta(0))
        assert next_step(None, 0.5, DEADLINE, DEADLINE - M, rule, DEADLINE - 2 * M) == WARN
        assert next_step(None, 0.5, DEADLINE, DEADLINE - 6 * M, rule, DEADLINE - 7 * M) is None
        assert next_step(None, 1.0, DEADLINE, DEADLINE, rule, DEADLINE - M) is None

    @given(
        state=st.sampled_from([None, WARNED, CLEARED]),
        chance=st.none() | st.floats(0, 1),
        before=st.timedeltas(dt.timedelta(minutes=-60), dt.timedelta(hours=12)),
        since=st.none() | st.timedeltas(dt.timedelta(seconds=1), dt.timedelta(hours=3)),
        probability=st.floats(0.01, 1),
        early=st.floats(0.01, 1),
        lead=st.timedeltas(dt.timedelta(0), dt.timedelta(hours=3)),
    )
    def test_a_gate_warns_once_while_the_warning_leaves_its_lead_and_the_chance_clears_its_bar(
        self, state, chance, before, since, probability, early, lead
    ):
        """The rule in the guide's words: never a second warning, nor one once the deadline has passed; in
        the last call (the 5 minutes before the lead) a chance of the probability or more warns; before it,
        one of the early probability or more (or of the probability, if higher); within the lead, nothing,
        but for a gate that did not look in its last call (no look known, or the one before was earlier):
        this look is its last call. A standing warning clears once, before the deadline, when the chance
        falls under the probability."""
        now = DEADLINE - before
        previous = None if since is None else now - since
        step = next_step(state, chance, DEADLINE, now, WarningRule(probability, early, lead), previous)
        last_call = DEADLINE - lead - dt.timedelta(minutes=5)
        looked_in_last_call = previous is not None and previous >= last_call
        if chance is None or state == CLEARED:
            assert step is None
        elif state == WARNED:
            assert step == (CLEAR if before > dt.timedelta(0) and chance < probability else None)
        elif before <= dt.timedelta(0) or (before < lead and looked_in_last_call):
            assert step is None  # the deadline passed; or within the lead, the last call made
        elif now >= last_call:
            assert step == (WARN if chance >= probability else None)
        else:
            assert step == (WARN if chance >= max(early, probability) else None)

    @pytest.mark.parametrize("value", ["0", "-0.1", "1.5", "half", "nan", ""])
    def test_a_threshold_that_is_not_a_chance_is_refused_naming_the_option(self, value):
        with pytest.raises(ValueError, match="deadline_warning_probability"):
            warning_chance(value)

    def test_a_threshold_is_read_as_a_number(self):
        assert warning_chance("0.7") == 0.7 and warning_chance("1") == 1.0

    @given(st.text(max_size=12) | st.floats(allow_nan=True).map(str))
    def test_a_lead_is_minutes_from_none_to_a_week_or_refused_naming_the_option(self, value):
        try:
            minutes = float(value)
        except ValueError:
            minutes = None
        if minutes is not None and 0 <= minutes <= 10080:
            assert warning_lead(value) == dt.timedelta(minutes=minutes)
        else:
            with pytest.raises(ValueError, match="deadline_warning_lead_minutes"):
                warning_lead(value)


class TestTheRunsDeadline:
    def test_an_own_deadline_is_the_fallbacks_rule_on_the_dags_clock(self):
        paris = DeadlineWarning("06:00")
        assert paris.instant(SLOT - H, "Europe/Paris") == deadline_at(dt.time(6), SLOT - H, "Europe/Paris")
        assert paris.instant(SLOT - H, "Europe/Paris") == dt.datetime(2026, 11, 20, 5, tzinfo=UTC)

    @pytest.mark.parametrize(
        "reference, expected",
        [
            ("DAGRUN_LOGICAL_DATE", SLOT + dt.timedelta(minutes=5) + 2 * H),
            ("DAGRUN_QUEUED_AT", SLOT + dt.timedelta(minutes=7) + 2 * H),
            ("FIXED_DATETIME", dt.datetime(2026, 12, 1, tzinfo=UTC) + 2 * H),
        ],
    )
    def test_a_dags_alert_is_its_reference_plus_its_interval(self, reference, expected):
        fixed = dt.datetime(2026, 12, 1, tzinfo=UTC) if reference == "FIXED_DATETIME" else None
        alert = DeadlineWarning(None, reference, 2 * H, fixed)
        logical, queued = SLOT + dt.timedelta(minutes=5), SLOT + dt.timedelta(minutes=7)
        assert alert.instant(SLOT, "UTC", logical, queued) == expected

    def test_a_run_without_what_the_alert_is_measured_from_has_no_deadline(self):
        assert DeadlineWarning(None, "DAGRUN_LOGICAL_DATE", H).instant(SLOT, "UTC", None, None) is None
        assert DeadlineWarning(None, "DAGRUN_QUEUED_AT", H).instant(SLOT, "UTC", SLOT, None) is None

    @pytest.mark.parametrize(
        "warning",
        [
            DeadlineWarning(dt.timedelta(hours=6), callback={"kind": "async", "path": "m.f", "kwargs": {"a": 1}}),
            DeadlineWarning(dt.time(6, 30)),
            DeadlineWarning(None, "FIXED_DATETIME", H, dt.datetime(2026, 12, 1, tzinfo=UTC), {"kind": "sync"}),
            DeadlineWarning(None, "DAGRUN_QUEUED_AT", dt.timedelta(minutes=90)),
        ],
    )
    def test_a_warning_round_trips_through_its_trigger_form(self, warning):
        again = DeadlineWarning.from_dict(warning.as_dict())
        assert (again, again.callback) == (warning, warning.callback)


#: The forms of ``deadline=``: offsets (some negative), times of day, their text, and things that are neither.
forms = st.one_of(
    st.integers(min_value=-48 * 60, max_value=48 * 60).map(lambda m: dt.timedelta(minutes=m)),
    st.times().map(lambda t: t.replace(microsecond=0)),
    st.times().map(lambda t: t.strftime("%H:%M")),
    st.sampled_from(["6am", "", "25:00", 6, 6.0, None]),
)
limits = st.integers(min_value=0, max_value=30 * 3600).map(lambda s: dt.timedelta(seconds=s))


def oracle(value, limit: dt.timedelta) -> str:
    """From the docs' words: an offset of zero or more, or a local time of day ("HH:MM" or a time); refused
    when negative, neither, or after the gate's limit (an offset, or the time since midnight)."""
    if value is None:
        return "none"
    if isinstance(value, str) and len(value) == 5 and value[2] == ":" and value.replace(":", "").isdigit():
        hours, minutes = int(value[:2]), int(value[3:])
        if hours > 23:
            return "refused"
        value = dt.time(hours, minutes)
    if isinstance(value, dt.time):
        since_midnight = dt.timedelta(hours=value.hour, minutes=value.minute, seconds=value.second)
        return "refused" if since_midnight > limit else "accepted"
    if isinstance(value, dt.timedelta):
        return "refused" if value < dt.timedelta(0) or value > limit else "accepted"
    return "refused"


@given(value=forms, limit=limits)
def test_a_deadline_is_refused_exactly_when_negative_or_after_the_limit_naming_dag_and_task(value, limit):
    expected = oracle(value, limit)
    if expected == "refused":
        with pytest.raises(InvalidDeadlineError, match=r"^DAG 'sales' task 'report': ") as raised:
            check_deadline("sales", "report", value, limit)
        assert raised.value.exit_status == 19
        return
    parsed = check_deadline("sales", "report", value, limit)
    assert (parsed is None) == (expected == "none")


def test_a_gate_without_max_wait_waits_until_its_deadline():
    assert default_wait("06:30") == 6.5 * 3600
    assert default_wait(dt.timedelta(hours=9)) == 9 * 3600
    assert default_wait(None) == default_wait(dt.timedelta(hours=-1)) == default_wait("soon") == 0


def test_the_message_names_the_task_slot_chance_deadline_p90_and_the_tasks_waited_on_on_the_dags_clock():
    text = warning_message(
        "report",
        SLOT - H,
        DEADLINE - H,
        0.625,
        DEADLINE - H + dt.timedelta(minutes=40),
        ("feed_it@x", "ingest@y"),
        "Europe/Paris",
    )
    assert text == (
        "report (slot 2026-11-20 00:00 CET) is 62% likely to miss its deadline 2026-11-20 06:00 CET (expected by "
        "2026-11-20 06:40 CET, p90); waiting on feed_it, which waits on ingest"
    )


@given(share=st.integers(min_value=0, max_value=100), size=st.sampled_from([100, 200, 1000]))
def test_a_chance_reads_as_its_whole_percent_rounded_down(share, size):
    from airflow_leastaction.gating.deadline_warning import chance_text

    # Oracle: k of n samples after the deadline is floor(100 k / n) percent, in whole numbers.
    k = share * size // 100
    assert chance_text(k / size) == f"{100 * k // size}%"
    assert (chance_text(0.57), chance_text(0.29), chance_text(0.996)) == ("57%", "29%", "99%")
