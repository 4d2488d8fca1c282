"""``deadline=`` and ``deadline_callback=`` on the three gates, checked where the DAG is parsed: the forms
of a fallback's ``at``, refused before the slot or after the gate's ``max_wait`` (the sensor's ``timeout``)
with an error naming the DAG and task; Airflow's deadline callbacks, and the DAG's own ``DeadlineAlert``
when the gate has no deadline of its own.

The oracle is written from the docs' words: an offset of zero or more, or a local time of day; refused
when negative, neither, or later than the limit (an offset, or the time of day since midnight)."""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG
from airflow.sdk.definitions.deadline import AsyncCallback, DeadlineAlert, DeadlineReference, SyncCallback
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import InvalidDeadlineError
from airflow_leastaction.refs import airflow_dag, external_task
from airflow_leastaction.run_conditions import dag_run_condition, run_condition, success
from airflow_leastaction.sensors import ParentIntervalSensor

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
FEED = external_task("feed", "feeds")


async def tell(context=None, **kwargs):
    """A deadline callback: awaitable, at module level (Airflow imports it by its path)."""


def tell_now(context=None, **kwargs):
    """A sync one."""


def sensor(dag_id: str, deadline, limit: dt.timedelta, **kw):
    with DAG(dag_id, schedule="@daily", start_date=START, **kw.pop("dag_kw", {})):
        return ParentIntervalSensor(
            task_id="wait", parents=[FEED], timeout=limit.total_seconds(), deadline=deadline, **kw
        )


def gated(dag_id: str, deadline, limit: dt.timedelta, **kw):
    with DAG(dag_id, schedule="@daily", start_date=START, **kw.pop("dag_kw", {})):
        return run_condition(EmptyOperator(task_id="report"), success(FEED), deadline=deadline, max_wait=limit, **kw)


def run_gated(dag_id: str, deadline, limit: dt.timedelta, **kw):
    with DAG(dag_id, schedule="@daily", start_date=START, **kw.pop("dag_kw", {})) as dag:
        EmptyOperator(task_id="report")
        return dag_run_condition(dag, airflow_dag("upstream"), deadline=deadline, max_wait=limit, **kw)


GATES = {"sensor": (sensor, "wait"), "run_condition": (gated, "report"), "dag_run_condition": (run_gated, None)}

forms = st.one_of(
    st.integers(min_value=-36 * 60, max_value=36 * 60).map(lambda m: dt.timedelta(minutes=m)),
    st.times().map(lambda t: t.replace(microsecond=0)),
    st.times().map(lambda t: t.strftime("%H:%M")),
    st.sampled_from(["06:00:00+01:00", "noon", "24:00", 3600]),
)
limits = st.integers(min_value=60, max_value=30 * 3600).map(lambda s: dt.timedelta(seconds=s))


def refused(value, limit: dt.timedelta) -> bool:
    if isinstance(value, str) and len(value) == 5 and value[2] == ":" and int(value[:2]) < 24:
        value = dt.time(int(value[:2]), int(value[3:]))
    if isinstance(value, dt.time):
        return dt.timedelta(hours=value.hour, minutes=value.minute, seconds=value.second) > limit
    if isinstance(value, dt.timedelta):
        return value < dt.timedelta(0) or value > limit
    return True


@pytest.mark.parametrize("gate", sorted(GATES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=forms, limit=limits)
def test_a_deadline_is_refused_at_parse_time_exactly_when_the_docs_say_naming_dag_and_task(gate, value, limit):
    build, task_id = GATES[gate]
    task_id = task_id or "leastaction_dag_gate"
    if refused(value, limit):
        with pytest.raises(InvalidDeadlineError, match=rf"^DAG 'dl_{gate}' task '{task_id}': "):
            build(f"dl_{gate}", value, limit)
    else:
        assert build(f"dl_{gate}", value, limit).deadline_warning.at is not None


class TestCallbacks:
    @pytest.mark.parametrize(
        "callback, kind", [(AsyncCallback(tell, kwargs={"to": "ops"}), "async"), (SyncCallback(tell_now), "sync")]
    )
    def test_airflows_deadline_callbacks_are_taken_as_the_trigger_carries_them(self, callback, kind):
        gate = gated("dl_cb", "06:00", dt.timedelta(hours=8), deadline_callback=callback)
        assert gate.deadline_warning.callback == {"kind": kind, "path": callback.path, "kwargs": callback.kwargs or {}}
        warning = gate.start_trigger_args.trigger_kwargs["warning"]
        assert warning["deadline"]["callback"]["path"] == f"{__name__}.{'tell' if kind == 'async' else 'tell_now'}"

    @pytest.mark.parametrize(
        "callback", [tell_now, "tests.unit.run_conditions.test_deadline_declaration.tell", object()]
    )
    def test_anything_else_is_refused_naming_the_gate_and_what_airflow_takes(self, callback):
        with pytest.raises(InvalidDeadlineError, match=r"^DAG 'dl_bad' task 'wait': deadline_callback=.*AsyncCallback"):
            sensor("dl_bad", "06:00", dt.timedelta(days=1), deadline_callback=callback)

    def test_a_gate_without_a_deadline_and_without_a_dag_alert_warns_about_nothing(self):
        gate = gated("dl_none", None, dt.timedelta(hours=8))
        assert "warning" not in gate.start_trigger_args.trigger_kwargs


class TestTheDagsDeadlineAlert:
    def alert(self, reference, interval=dt.timedelta(hours=7)):
        return DeadlineAlert(reference=reference, interval=interval, callback=AsyncCallback(tell))

    @pytest.mark.parametrize(
        "reference, name",
        [
            (DeadlineReference.DAGRUN_LOGICAL_DATE, "DAGRUN_LOGICAL_DATE"),
            (DeadlineReference.DAGRUN_QUEUED_AT, "DAGRUN_QUEUED_AT"),
            (DeadlineReference.FIXED_DATETIME(dt.datetime(2026, 12, 1, tzinfo=dt.UTC)), "FIXED_DATETIME"),
        ],
    )
    def test_a_gate_without_its_own_deadline_warns_against_the_dags_alert_with_its_callback(self, reference, name):
        gate = sensor("dl_alert", None, dt.timedelta(days=1), dag_kw={"deadline": self.alert(reference)})
        warning = gate.start_trigger_args.trigger_kwargs["warning"]["deadline"]
        assert (warning["reference"], warning["interval"]) == (name, 7 * 3600)
        assert warning["callback"]["path"] == f"{__name__}.tell"

    def test_a_gates_own_deadline_comes_before_the_dags_alert(self):
        alert = self.alert(DeadlineReference.DAGRUN_LOGICAL_DATE)
        gate = gated("dl_own", "05:00", dt.timedelta(hours=8), dag_kw={"deadline": alert})
        warning = gate.start_trigger_args.trigger_kwargs["warning"]["deadline"]
        assert (warning.get("time"), warning["callback"]) == ("05:00:00", None)

    def test_a_gates_own_callback_replaces_the_alerts(self):
        alert = self.alert(DeadlineReference.DAGRUN_QUEUED_AT)
        own = SyncCallback(tell_now)
        gate = gated("dl_cb_own", None, dt.timedelta(hours=8), deadline_callback=own, dag_kw={"deadline": alert})
        warning = gate.start_trigger_args.trigger_kwargs["warning"]["deadline"]
        assert (warning["reference"], warning["callback"]["kind"]) == ("DAGRUN_QUEUED_AT", "sync")
