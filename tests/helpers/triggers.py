"""A run-condition trigger as the gate builds it, with defaults a test overrides."""

from __future__ import annotations

import datetime as dt

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.model import Dependency
from airflow_leastaction.run_conditions.wait_rule import WaitClock
from airflow_leastaction.triggers.run_condition import RunConditionTrigger
from tests.helpers.run_conditions import day

OTHER = TaskIdentity("rc_trigger_upstream", "other-team")


def gate_trigger(url: str | None = None, **overrides) -> RunConditionTrigger:
    kwargs = dict(
        dag_id="rc_t",
        run_id="r1",
        task_id="child",
        dependencies=[Dependency(OTHER).as_dict()],
        condition="ALL",
        count=None,
        slot_requests={},
        slot=day(2).isoformat(),
        upstream={"child": []},
        waiting=["child__gate"],
        consumed={},
        clock=WaitClock(dt.datetime.now(dt.UTC)).as_dict(),
        max_wait=30.0,
        max_looks=30,
        catalog_conn_id=None,
        poll_interval=0.05,
    )
    kwargs.update(overrides)
    return RunConditionTrigger(**kwargs)
