"""A waiting run-condition gate judges its run again only when something it reads changed: the same run
states tick after tick are not judged again; new states are, at once (run_conditions/rejudge.py)."""

from __future__ import annotations

import asyncio

import pytest
from airflow.sdk.execution_time import task_runner

from airflow_leastaction.run_conditions.model import Dependency
from airflow_leastaction.triggers import run_condition
from airflow_leastaction.triggers.poll_group import PollGroup
from airflow_leastaction.triggers.run_states import RunStates
from airflow_leastaction.triggers.wire import TriggerStatus
from tests.helpers.triggers import gate_trigger
from tests.unit.triggers.test_run_states import Supervisor


@pytest.fixture
def judgements(monkeypatch):
    """How many times gates judged (the real judgement, counted)."""
    made = []
    real = run_condition.evaluate

    def counted(*args, **kwargs):
        made.append(args[1].states)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_condition, "evaluate", counted)
    return made


async def ticks_of_run_states(at_least: int) -> None:
    loop = id(asyncio.get_running_loop())
    while not any(k[0] == loop and c.ticks >= at_least for k, c in list(RunStates._shared.items())):
        await asyncio.sleep(0.01)


async def test_a_gate_judges_its_unchanged_run_once_and_its_changed_run_again(
    store, catalog_url, use_catalog, monkeypatch, judgements
):
    use_catalog(catalog_url)
    RunStates._shared.clear()
    PollGroup._shared.clear()
    supervisor = Supervisor({"rc_t": {"r1": {"up": "running", "child__gate": "deferred"}}})
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", supervisor, raising=False)
    trigger = gate_trigger(dependencies=[Dependency("up").as_dict()], upstream={"child": ["up"]})
    waiting = asyncio.create_task(anext(trigger.run()))
    await asyncio.wait_for(ticks_of_run_states(2), 30)
    judged_early = len(judgements)
    await asyncio.wait_for(ticks_of_run_states(8), 30)
    assert judged_early >= 1
    assert len(judgements) == judged_early, "the gate judged its unchanged run again"
    assert not waiting.done()
    asked = len(supervisor.asked)
    assert asked >= 8  # the run's states were read every tick all along: only the judging was spared

    supervisor.runs["rc_t"]["r1"] = {"up": "success", "child__gate": "deferred"}
    event = await asyncio.wait_for(waiting, 30)
    assert event.payload["status"] == TriggerStatus.ADMITTED
    assert len(judgements) == judged_early + 1
    assert judgements[-1]["up"] == "success"
