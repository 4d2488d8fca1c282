"""One question to Airflow per DAG per tick, for every run-condition gate of a triggerer that waits on the
task states of its run (and one more for the DAG's run-outcome triggers).

A gate subscribes its ``(dag_id, run_id)`` (:meth:`RunStates.subscribe`). The reads are a channel of the
poll loop the gates' catalog reads share (:class:`~airflow_leastaction.triggers.poll_group.PollGroup`,
read kind ``run_states``), so a gate's slot records and its run's task states come from the same tick. Each
tick asks Airflow, for each DAG with waiting gates, the task states of all its waiting runs at once
(:func:`~airflow_leastaction.airflow_seam.run_tasks.ask_task_states`: one ``GetTaskStates`` message per DAG,
one more per :data:`RUNS_PER_QUESTION` runs past the first), and hands every gate of a run the same states
(a dict never changed once handed out, and the same one tick after tick while the run's states stay
the same). 10,000 gates waiting on 100 runs of one DAG cost one question a
tick, where each gate asking for its own run cost 10,000. The run-outcome triggers, which read no catalog,
share a loop of their own (:meth:`RunStates.shared` with no URL): one more question per DAG per tick.

Never an error taken for "no tasks": a question that fails raises
:class:`~airflow_leastaction.exceptions.RunStatesUnreadableError` to every gate whose run it named (each
keeps waiting and says why); a run the answer leaves out raises it to that run's gates alone (every gate
is a task of its run, so an answer without the run is no answer about it).
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

from airflow_leastaction.airflow_seam import run_tasks
from airflow_leastaction.exceptions import RunStatesUnreadableError
from airflow_leastaction.triggers.poll_group import PollGroup
from airflow_leastaction.triggers.poller import Subscription

#: Runs named in one question at most: the execution API takes them as a query string, which HTTP servers
#: and proxies in front of an API server cap at a few KiB (about 60 bytes a run id).
RUNS_PER_QUESTION = 100

Run = tuple[str, str]  # (dag_id, run_id)


class RunStates:
    """The triggers waiting on their runs' task states in one poll loop (per event loop, catalog URL and poll
    interval, as the catalog reads they wait on beside them), and the one read per DAG that serves them."""

    read = "run_states"
    _shared: dict[tuple, RunStates] = {}

    def __init__(self, group: PollGroup):
        self.ticks = 0
        self._group = group
        self._key: tuple | None = None
        self._subs: dict[int, Subscription] = {}
        self._new: dict[int, Subscription] = {}  # none: a new subscriber needs no catalog read of its own
        # Per DAG, per run, its subscribers: a tick walks runs, not gates, to make its questions.
        self._runs: dict[str, dict[str, dict[int, Subscription]]] = {}
        # Per run, the states handed out last: handed again while Airflow's answer is the same.
        self._handed: dict[Run, dict] = {}

    @classmethod
    def shared(cls, url: str | None, interval: float) -> RunStates:
        """The channel of the poll loop of ``url`` (the catalog the subscriber's other reads poll; None: a loop
        of its own, for a trigger that reads no catalog) and ``interval``."""
        key = (id(asyncio.get_running_loop()), url, float(interval), cls.read)
        channel = cls._shared.get(key)
        if channel is None:
            channel = cls._shared[key] = cls(PollGroup.shared(url, float(interval)))
            channel._key = key
            # First in the tick: a gate woken by its catalog reads then finds its run's states of the same
            # tick waiting for it (asked after them, it would judge each tick on the states of the one before).
            group = channel._group
            group.channels = {cls.read: channel, **group.channels}
        return channel

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    @asynccontextmanager
    async def subscribe(self, dag_id: str, run_id: str):
        """A subscription to the task states of run ``run_id`` of ``dag_id`` for the ``async with`` block:
        ``await sub.next()`` each tick for the run's states (``{task_id: state}``, a mapped task's instances
        as ``task_id_N``), or the error of the tick's read."""
        sub = self.join(dag_id, run_id)
        try:
            yield sub
        finally:
            self.leave(sub)

    def join(self, dag_id: str, run_id: str) -> Subscription:
        if self._group.channels.get(self.read) is not self:
            raise RuntimeError("run_states reads ended with nobody subscribed: join RunStates.shared() anew")
        sub = Subscription(((dag_id, run_id),))
        self._subs[id(sub)] = sub
        self._runs.setdefault(dag_id, {}).setdefault(run_id, {})[id(sub)] = sub
        self._group.wake()
        return sub

    def leave(self, sub: Subscription) -> None:
        if self._subs.pop(id(sub), None) is None:
            return
        ((dag_id, run_id),) = sub.requests
        runs = self._runs[dag_id]
        waiting = runs[run_id]
        del waiting[id(sub)]
        if not waiting:
            del runs[run_id]
            self._handed.pop((dag_id, run_id), None)
            if not runs:
                del self._runs[dag_id]

    # -- the poll group's side (PollGroup._tick and _run call these) -------------------------------------
    def _identities(self, sub: Subscription) -> dict:
        return {}  # no catalog task to read

    def _drop_leaving(self) -> None:
        pass  # a gate that left is off the books at once: nothing of it is read after

    def _watched_names(self) -> tuple:
        return ()  # no catalog task

    async def _apply(self, store, rows, since, new) -> None:
        """This tick's questions, one per DAG (and per :data:`RUNS_PER_QUESTION` runs), asked together; each
        answer handed to the subscribers of the runs it names (a gate that joined meanwhile, for a run not
        asked, is served on the next tick)."""
        questions = [
            (dag_id, run_ids[i : i + RUNS_PER_QUESTION])
            for dag_id, runs in self._runs.items()
            for run_ids in [list(runs)]
            for i in range(0, len(run_ids), RUNS_PER_QUESTION)
        ]
        answers = await asyncio.gather(
            *(run_tasks.ask_task_states(dag_id, run_ids) for dag_id, run_ids in questions), return_exceptions=True
        )
        for (dag_id, run_ids), answer in zip(questions, answers, strict=True):
            runs = self._runs.get(dag_id, {})
            for run_id in run_ids:
                states, error = _states_of(dag_id, run_id, answer)
                if states is not None and run_id in runs:
                    states = self._same(dag_id, run_id, states)
                for sub in runs.get(run_id, {}).values():
                    if sub.every_tick or error is not None or sub._error is not None or sub._latest is not states:
                        sub.deliver(states, error)  # a gate asleep until a change is not handed the same states

    def _same(self, dag_id: str, run_id: str, states: dict) -> dict:
        """``states``, or the equal object handed out before: a gate tells an unchanged run by identity."""
        handed = self._handed.get((dag_id, run_id))
        if handed is not None and handed == states:
            return handed
        self._handed[(dag_id, run_id)] = states
        return states

    def _reset(self) -> None:
        """A failed catalog poll: each subscriber was handed its error; its run is asked again next tick."""

    def _ended(self) -> None:
        """The poll loop ended with nobody subscribed: a later subscriber gets a new channel."""
        if self._shared.get(self._key) is self:
            del self._shared[self._key]


def _states_of(dag_id: str, run_id: str, answer) -> tuple[dict | None, BaseException | None]:
    """One run's states from its question's answer, or the error its gates are handed."""
    if isinstance(answer, RunStatesUnreadableError):
        return None, answer
    if isinstance(answer, BaseException):  # a question cancelled under it (its comms closing): no answer
        why = str(answer) if isinstance(answer, Exception) else "the question was cancelled"
        return None, RunStatesUnreadableError(f"Airflow cannot tell the task states of DAG {dag_id}: {why}")
    states = answer.get(run_id)
    if states is None:
        return None, RunStatesUnreadableError(f"Airflow's answer has no task of run {run_id} of DAG {dag_id}")
    return states, None
