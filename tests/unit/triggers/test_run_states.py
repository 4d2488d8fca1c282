"""The shared read of run task states, tick by tick, against a supervisor that answers as Airflow's does
(a ``TaskStatesResult`` keyed by run, or an ``ErrorResponse`` raised by the comms): no triggerer runs here.
The real triggerer's questions are counted in tests/system/run_conditions/test_gates_share_run_reads.py.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from airflow.sdk.exceptions import AirflowRuntimeError, ErrorType
from airflow.sdk.execution_time import task_runner
from airflow.sdk.execution_time.comms import ErrorResponse, GetTaskStates, TaskStatesResult
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.airflow_seam import run_tasks
from airflow_leastaction.exceptions import RunStatesUnreadableError
from airflow_leastaction.triggers.run_states import RUNS_PER_QUESTION, RunStates


class Supervisor:
    """Answers ``GetTaskStates`` from ``runs`` (per DAG, per run, its task states), as Airflow's execution
    API does: only the runs it knows are in the answer; a DAG in ``failing`` gets an error response."""

    def __init__(self, runs: dict[str, dict[str, dict]], failing: frozenset[str] = frozenset()):
        self.runs, self.failing = runs, failing
        self.asked: list[GetTaskStates] = []

    async def asend(self, msg):
        self.asked.append(msg)
        if msg.dag_id in self.failing:
            raise AirflowRuntimeError(ErrorResponse(error=ErrorType.API_SERVER_ERROR, detail={"status_code": 500}))
        known = self.runs.get(msg.dag_id, {})
        return TaskStatesResult(task_states={r: known[r] for r in msg.run_ids if r in known})


@pytest.fixture
def supervisor(monkeypatch):
    def install(runs, failing=frozenset()):
        comms = Supervisor(runs, frozenset(failing))
        monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", comms, raising=False)
        return comms

    return install


def channel() -> RunStates:
    """A channel whose ticks the test runs itself (no poll loop, so no catalog)."""
    states = RunStates.shared("sqlite:///unused.db", 1.0)
    states._group.wake = lambda: None
    return states


@pytest.fixture(autouse=True)
def fresh_channels():
    from airflow_leastaction.triggers.poll_group import PollGroup

    RunStates._shared.clear()
    PollGroup._shared.clear()
    yield
    RunStates._shared.clear()
    PollGroup._shared.clear()


async def tick(states: RunStates) -> None:
    await states._apply(None, [], None, [])


def taken(sub):
    """What a waiting gate is handed now: its states, or the error raised to it."""
    future = sub.next()
    assert future.done(), "nothing was delivered this tick"
    return future.exception() or future.result()


class TestOneQuestionPerDag:
    async def test_every_gate_of_every_run_of_a_dag_is_served_by_one_question(self, supervisor):
        runs = {f"r{i}": {"up": "running", f"g{i}": "deferred"} for i in range(5)}
        comms = supervisor({"d": runs})
        states = channel()
        subs = {(r, g): states.join("d", r) for r in runs for g in range(20)}
        await tick(states)
        [question] = comms.asked
        assert (question.dag_id, sorted(question.run_ids)) == ("d", sorted(runs))
        handed = {key: taken(sub) for key, sub in subs.items()}
        assert all(handed[(r, g)] == runs[r] for r, g in subs)
        assert handed[("r0", 0)] is handed[("r0", 1)]  # one object per run, never one per gate

    async def test_each_tick_asks_once_per_dag_and_the_seam_counts_the_questions(self, supervisor):
        comms = supervisor({"a": {"r1": {"t": "running"}}, "b": {"r1": {"t": "success"}, "r2": {"t": None}}})
        states = channel()
        for dag, run in (("a", "r1"), ("b", "r1"), ("b", "r2"), ("b", "r2")):
            states.join(dag, run)
        sent = run_tasks.QUESTIONS.sent
        for _ in range(3):
            await tick(states)
        assert sorted((q.dag_id, tuple(sorted(q.run_ids))) for q in comms.asked) == sorted(
            3 * [("a", ("r1",)), ("b", ("r1", "r2"))]
        )
        assert run_tasks.QUESTIONS.sent - sent == 6

    async def test_more_runs_than_one_question_names_are_asked_in_as_few_questions_as_fit(self, supervisor):
        n = 2 * RUNS_PER_QUESTION + 1
        comms = supervisor({"d": {f"r{i}": {"t": "running"} for i in range(n)}})
        states = channel()
        for i in range(n):
            states.join("d", f"r{i}")
        await tick(states)
        assert [len(q.run_ids) for q in comms.asked] == [RUNS_PER_QUESTION, RUNS_PER_QUESTION, 1]
        assert {r for q in comms.asked for r in q.run_ids} == {f"r{i}" for i in range(n)}

    async def test_a_run_whose_states_did_not_change_is_handed_the_same_object_again(self, supervisor):
        comms = supervisor({"d": {"r1": {"up": "running"}}})
        states = channel()
        sub = states.join("d", "r1")
        await tick(states)
        first = taken(sub)
        await tick(states)
        assert taken(sub) is first
        comms.runs["d"]["r1"] = {"up": "success"}
        await tick(states)
        assert taken(sub) == {"up": "success"}

    async def test_a_gate_asleep_until_a_change_is_rung_by_new_states_and_not_by_the_same_ones(self, supervisor):
        from airflow_leastaction.triggers.poller import until_handed

        comms = supervisor({"d": {"r1": {"up": "running"}}})
        states = channel()
        sub = states.join("d", "r1")
        await tick(states)
        first = taken(sub)
        asleep = asyncio.create_task(until_handed([sub], None))
        await asyncio.sleep(0)  # it is waiting now
        for _ in range(3):
            await tick(states)
        assert not asleep.done()  # the same states, tick after tick: never woken
        assert sub.take() is first
        comms.runs["d"]["r1"] = {"up": "success"}
        await tick(states)
        await asyncio.wait_for(asleep, 5)
        assert sub.take() == {"up": "success"}

    async def test_a_run_nobody_waits_on_any_more_is_not_asked(self, supervisor):
        comms = supervisor({"d": {"r1": {}, "r2": {}}})
        states = channel()
        first, second, other = states.join("d", "r1"), states.join("d", "r1"), states.join("d", "r2")
        states.leave(first)
        await tick(states)
        assert sorted(comms.asked[-1].run_ids) == ["r1", "r2"]
        states.leave(second)
        await tick(states)
        assert comms.asked[-1].run_ids == ["r2"]
        states.leave(other)
        await tick(states)
        assert len(comms.asked) == 2 and states.subscribers == 0


class TestErrorsAreNeverNoTasks:
    async def test_a_failed_question_raises_to_every_gate_of_its_dag_and_to_no_other(self, supervisor):
        supervisor({"down": {"r1": {"t": "running"}}, "up": {"r1": {"t": "running"}}}, failing={"down"})
        states = channel()
        down = [states.join("down", "r1") for _ in range(3)]
        fine = states.join("up", "r1")
        await tick(states)
        for sub in down:
            error = taken(sub)
            assert isinstance(error, RunStatesUnreadableError)
            assert "DAG down" in str(error) and "API_SERVER_ERROR" in str(error)
        assert taken(fine) == {"t": "running"}

    async def test_a_run_left_out_of_the_answer_is_an_error_for_its_gates_only(self, supervisor):
        supervisor({"d": {"r1": {"t": "success"}}})  # r2 is not in Airflow's answer
        states = channel()
        known, missing = states.join("d", "r1"), states.join("d", "r2")
        await tick(states)
        assert taken(known) == {"t": "success"}
        error = taken(missing)
        assert isinstance(error, RunStatesUnreadableError) and "run r2 of DAG d" in str(error)

    async def test_a_question_cancelled_under_the_loop_is_an_error_for_its_gates(self, supervisor):
        comms = supervisor({"d": {"r1": {}}})

        async def closing(msg):  # what Airflow's comms do to a pending question when their reader stops
            raise asyncio.CancelledError("Reader loop exited")

        comms.asend = closing
        states = channel()
        sub = states.join("d", "r1")
        await tick(states)
        error = taken(sub)
        assert isinstance(error, RunStatesUnreadableError) and "DAG d: the question was cancelled" in str(error)

    async def test_no_supervisor_to_ask_is_an_error(self, monkeypatch):
        monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", None, raising=False)
        with pytest.raises(RunStatesUnreadableError, match="no supervisor"):
            await run_tasks.ask_task_states("d", ["r1"])

    async def test_an_answer_that_is_not_task_states_is_an_error(self, monkeypatch):
        class Odd:
            def send(self, msg):  # a comms without asend is asked from a thread
                return ErrorResponse()

        monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", Odd(), raising=False)
        with pytest.raises(RunStatesUnreadableError, match="ErrorResponse, not the task states"):
            await run_tasks.ask_task_states("d", ["r1"])


# Runs of a few DAGs, some known to Airflow, some DAGs failing, many gates per run.
WORLDS = st.fixed_dictionaries(
    {
        "gates": st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 250)), max_size=400),
        "known": st.sets(st.integers(0, 250)),
        "failing": st.sets(st.sampled_from("abc")),
    }
)


@settings(max_examples=60, deadline=None)
@given(world=WORLDS)
def test_every_gate_is_handed_its_runs_states_or_the_reason_it_has_none(world):
    """Oracle from the rule's words: one question per DAG per RUNS_PER_QUESTION runs; a gate whose DAG's
    question failed, or whose run is not in the answer, is handed an error; every other gate its run's states."""
    import airflow.sdk.execution_time.task_runner as runner

    from airflow_leastaction.triggers.poll_group import PollGroup

    def states_of(dag, run):
        return {"t": f"{dag}{run}"}

    comms = Supervisor(
        {dag: {f"r{n}": states_of(dag, n) for n in world["known"]} for dag in "abc"}, frozenset(world["failing"])
    )
    saved = getattr(runner, "SUPERVISOR_COMMS", None)
    runner.SUPERVISOR_COMMS = comms
    RunStates._shared.clear()
    PollGroup._shared.clear()

    async def scenario():
        states = channel()
        subs = [(dag, n, states.join(dag, f"r{n}")) for dag, n in world["gates"]]
        await tick(states)
        return subs

    try:
        subs = asyncio.run(scenario())
    finally:
        runner.SUPERVISOR_COMMS = saved
    runs = {dag: {n for d, n in world["gates"] if d == dag} for dag in "abc"}
    assert len(comms.asked) == sum(math.ceil(len(r) / RUNS_PER_QUESTION) for r in runs.values())
    assert all(len(q.run_ids) <= RUNS_PER_QUESTION for q in comms.asked)
    for dag, n, sub in subs:
        got = sub._error if sub._error is not None else sub._latest
        if dag in world["failing"] or n not in world["known"]:
            assert isinstance(got, RunStatesUnreadableError)
        else:
            assert got == states_of(dag, n)


class TestWithoutACatalog:
    async def test_a_loop_without_a_catalog_asks_airflow_each_tick_and_ends_with_its_last_subscriber(self, supervisor):
        comms = supervisor({"d": {"r1": {"up": "running"}}})
        states = RunStates.shared(None, 0.01)
        async with states.subscribe("d", "r1") as sub:
            assert await sub.next() == {"up": "running"}
            comms.runs["d"]["r1"] = {"up": "success"}
            while (seen := await sub.next()) != {"up": "success"}:
                pass
        group = states._group
        await asyncio.wait_for(group._task, 5)  # nobody left: the loop ends, and forgets its channel
        assert RunStates._shared == {} and group.channels == {}
        assert len(comms.asked) >= 2 and seen == {"up": "success"}

    async def test_the_run_outcome_waits_through_errors_and_concludes_once_every_other_task_is_final(self, supervisor):
        from airflow_leastaction.triggers.run_outcome import RunOutcomeTrigger

        comms = supervisor({"d": {}}, failing={"d"})  # Airflow cannot be asked, then leaves the run out
        trigger = RunOutcomeTrigger("d", "r1", "leastaction_run_outcome", poll_interval=0.01)
        events = trigger.run()
        concluded = asyncio.ensure_future(anext(events))
        while len(comms.asked) < 3:
            await asyncio.sleep(0.01)
        comms.failing = frozenset()
        while len(comms.asked) < 6:
            await asyncio.sleep(0.01)
        assert not concluded.done()  # neither an error nor a missing run is a run without tasks
        comms.runs["d"]["r1"] = {"a": "running", "leastaction_run_outcome": "deferred"}
        while len(comms.asked) < 9:
            await asyncio.sleep(0.01)
        assert not concluded.done()
        comms.runs["d"]["r1"] = {"a": "success", "leastaction_run_outcome": "deferred"}
        event = await asyncio.wait_for(concluded, 10)
        assert event.payload == {"status": "finished", "states": {"a": "success"}}
