"""K waiting run-condition gates in one triggerer event loop, each gating a task on an upstream of its own
run that is still running, and each run's run-outcome trigger: questions to Airflow and CPU per idle
tick, then the gates' release once the upstreams succeed.

``shared``: the triggers as they are, one question per DAG per tick for every gate (their runs in one
``GetTaskStates``, :mod:`airflow_leastaction.triggers.run_states`) and one more for the run-outcome
triggers (a loop of their own); a gate whose run and catalog reads did not change sleeps through the
tick. ``per_gate``: how every one of them looked before, each woken every tick and asking for its own run
on each of its looks (``run_tasks.run_states``), put back by this benchmark only. ``reads``: the
gates' shared read alone, K subscriptions and nothing judging what they are handed.

The gates spread over ``--runs`` runs of one DAG. The questions go through Airflow's own trigger-runner
comms to a supervisor process (:mod:`bench.run_states_airflow`); the catalog is a real SQLite file (the
gates' catalog reads are the same in every mode). Every run is a fresh process (a triggerer's trigger
runner) whose CPU time is sampled over whole idle ticks of the poll loop once every gate has looked twice;
questions are counted by the seam (``run_tasks.QUESTIONS``) and by the supervisor. The upstreams succeed
half a poll interval after a tick.

    .venv/bin/python -m bench.bench_run_states [--ks 1000,10000] [--runs 100] [--modes reads,shared,per_gate]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import statistics
import sys
import time

POLL = 1.0
WAIT_TICKS = 3
DAG_ID = "bench_gates"
DAY = "2026-11-28T00:00:00+00:00"


def main(argv=None) -> int:
    from bench.common import environment, temporary_airflow_home, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="1000,10000")
    parser.add_argument("--runs", type=int, default=100, help="runs of the DAG the gates spread over")
    parser.add_argument("--modes", default="reads,shared,per_gate")
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")
    args = parser.parse_args(argv)
    temporary_airflow_home()
    inputs = {
        "ks": [int(k) for k in args.ks.split(",")],
        "runs": args.runs,
        "modes": args.modes.split(","),
        "poll_interval_s": POLL,
        "wait_ticks": WAIT_TICKS,
    }
    env = environment(["sqlite"])
    rows = []
    for k in inputs["ks"]:
        for mode in inputs["modes"]:
            run = run_one(mode, k, args.runs)
            rows.append({"k": k, "mode": mode, "runs": args.runs, **run})
            d = derived(run)
            print(f"| {k:,} | {mode} | " + " | ".join(f"{key} {value}" for key, value in d.items()), flush=True)
    write_json(args.json, "bench_run_states", inputs, env, rows)
    return 0


def run_one(mode: str, k: int, runs: int) -> dict:
    """One triggerer process with K gates over ``runs`` runs, and its supervisor."""
    import multiprocessing
    import tempfile
    from pathlib import Path

    from bench.common import fresh_database
    from bench.run_states_airflow import serve

    ctx = multiprocessing.get_context("spawn")
    url, drop = fresh_database("sqlite")
    path = str(Path(tempfile.mkdtemp(prefix="la-bench-comms-")) / "supervisor.sock")
    released, asked, ready = ctx.Event(), ctx.Value("q", 0), ctx.Event()
    results = ctx.Queue()
    tasks = [f"gated_{g}__gate" for g in range(k // runs + 1)]
    supervisor = ctx.Process(target=serve, args=(path, tasks, released, asked, ready), name="supervisor")
    supervisor.start()
    try:
        ready.wait(60)
        runner = ctx.Process(target=_triggerer, args=(mode, k, runs, url, path, released, asked, results))
        runner.start()
        deadline = time.monotonic() + 3600
        while runner.is_alive() or not results.empty():
            try:
                result = results.get(timeout=5)
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise RuntimeError("the triggerer process did not finish in an hour") from None
                continue
            runner.join(60)
            return result
        raise RuntimeError(f"the triggerer process exited {runner.exitcode} without a result")
    finally:
        for proc in (supervisor, *([runner] if "runner" in locals() else [])):
            proc.join(10)
            if proc.is_alive():
                proc.kill()
        drop()


def _triggerer(mode, k, runs, url, path, released, asked, results) -> None:
    from bench.trigger_runs import _use_catalog

    _use_catalog(url)
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.triggers.run_states import RunStates

    get_engine(url, migrate=True)
    RunStates._shared.clear()
    if mode == "reads":
        results.put(asyncio.run(measure_reads(k, runs, url, path, asked)))
        return
    if mode == "per_gate":
        _ask_per_gate()
    results.put(asyncio.run(measure(k, runs, url, path, released, asked)))


class _PerGate:
    """What each gate, and each run-outcome trigger, did before: ask Airflow for its own run's states on each
    of its looks (a gate on each tick of its catalog poll; a run-outcome trigger, which reads no catalog,
    then slept a poll interval)."""

    def __init__(self, url, interval):
        self.pause = interval if url is None else 0.0

    @classmethod
    def shared(cls, url, interval):
        return cls(url, interval)

    def subscribe(self, dag_id, run_id):
        from contextlib import asynccontextmanager

        from airflow_leastaction.airflow_seam.run_tasks import run_states
        from airflow_leastaction.exceptions import RunStatesUnreadableError

        pause = self.pause

        class Asking:
            looked = False

            async def next(self):
                if self.looked and pause:
                    await asyncio.sleep(pause)
                self.looked = True
                try:
                    return await run_states(dag_id, run_id)
                except Exception as exc:
                    raise RunStatesUnreadableError(f"Airflow cannot tell the run's task states: {exc}") from exc

        @asynccontextmanager
        async def subscription():
            yield Asking()

        return subscription()


def _ask_per_gate() -> None:
    from airflow_leastaction.triggers import poller, run_condition, run_outcome

    run_condition.RunStates = run_outcome.RunStates = _PerGate

    async def every_look(subs, unread, until, asleep):  # before: every gate looked, and asked, every tick
        return await poller.look(subs, unread, until, False)

    run_condition.look = every_look


def gate(n: int, runs: int):
    from airflow_leastaction.identity import TaskIdentity, airflow_task_name
    from airflow_leastaction.run_conditions.model import Dependency
    from airflow_leastaction.triggers.run_condition import RunConditionTrigger

    run_id, task_id = f"scheduled__{n % runs:05d}", f"gated_{n // runs}"
    return RunConditionTrigger(
        dag_id=DAG_ID,
        run_id=run_id,
        task_id=task_id,
        dependencies=[Dependency("up").as_dict()],
        condition="ALL",
        count=None,
        slot_requests={"up": TaskIdentity(airflow_task_name(DAG_ID, "up"), "airflow").as_dict()},
        slot=DAY,
        upstream={"up": [], task_id: [f"{task_id}__gate"], f"{task_id}__gate": ["up"]},
        waiting=[f"{task_id}__gate"],
        poll_interval=POLL,
    )


async def run_outcome(r: int) -> None:
    """A run's run-outcome trigger: it waits on the run's states with the gates (never concluding here)."""
    from airflow_leastaction.triggers.run_outcome import RunOutcomeTrigger

    async for event in RunOutcomeTrigger(DAG_ID, f"scheduled__{r:05d}", "leastaction_run_outcome", POLL).run():
        raise RuntimeError(f"a run outcome concluded {event.payload}")


async def fire(trigger) -> float:
    async for event in trigger.run():
        if event.payload["status"] != "admitted":
            raise RuntimeError(f"a gate fired {event.payload}")
    return time.monotonic()


async def looked_twice(k: int, url: str):
    """Every gate subscribed to the shared poll, and two ticks since (each gate has looked); returns the
    benchmark's clock (:func:`ticks`)."""
    from airflow_leastaction.triggers.poller import CatalogPoller

    while not any(p.subscribers == k for p in CatalogPoller._shared.values()):
        await asyncio.sleep(0.05)
    clock = ticks(url)
    await clock(2)
    return clock


def ticks(url: str):
    """``await clock(n)``: until the poll loop has made ``n`` ticks more. A subscriber of the catalog poll
    of its own, woken by each tick (no polling of a counter, whose wake-ups would be counted as CPU)."""
    from airflow_leastaction.triggers.poller import CatalogPoller

    sub = CatalogPoller.shared(url, POLL, "slot_records").join([])

    async def clock(n: int = 1) -> None:
        for _ in range(n):
            await sub.next()

    return clock


async def idle_ticks(clock, asked) -> list[dict]:
    """CPU time of this process and questions over each of WAIT_TICKS whole ticks of the poll loop."""
    from airflow_leastaction.airflow_seam import run_tasks

    samples = []
    for _ in range(WAIT_TICKS):
        q0, a0, cpu0, wall0 = run_tasks.QUESTIONS.sent, asked.value, time.process_time(), time.monotonic()
        await clock()
        samples.append(
            {
                "wall_s": round(time.monotonic() - wall0, 4),
                "questions": run_tasks.QUESTIONS.sent - q0,
                "answered": asked.value - a0,
                "cpu_ms": round((time.process_time() - cpu0) * 1000, 2),
            }
        )
    return samples


async def measure(k: int, runs: int, url: str, path: str, released, asked) -> dict:
    from bench.run_states_airflow import connect

    writer = await connect(path)
    started = time.monotonic()
    outcomes = [asyncio.create_task(run_outcome(r)) for r in range(runs)]  # each run's, waiting throughout
    tasks = [asyncio.create_task(fire(gate(n, runs))) for n in range(k)]
    clock = await looked_twice(k, url)
    settle_s = time.monotonic() - started
    samples = await idle_ticks(clock, asked)
    await asyncio.sleep(POLL / 2)  # released between two ticks, not just after one
    released.set()
    done_at = time.monotonic()
    fired = await asyncio.wait_for(asyncio.gather(*tasks), timeout=1800)
    for task in outcomes:
        task.cancel()
    await asyncio.gather(*outcomes, return_exceptions=True)
    writer.close()
    return {"ticks": samples, "settle_s": round(settle_s, 2), "release_s": sorted(round(f - done_at, 4) for f in fired)}


async def measure_reads(k: int, runs: int, url: str, path: str, asked) -> dict:
    """The shared read alone: K subscriptions (no gate judging what it is handed), its questions and the
    deliveries of each tick."""
    from airflow_leastaction.triggers.run_states import RunStates
    from bench.run_states_airflow import connect

    writer = await connect(path)
    channel = RunStates.shared(url, POLL)
    subs = [channel.join(DAG_ID, f"scheduled__{n % runs:05d}") for n in range(k)]
    clock = ticks(url)
    await clock(3)
    samples = await idle_ticks(clock, asked)
    for sub in subs:
        channel.leave(sub)
    writer.close()
    return {"ticks": samples, "settle_s": 0.0, "release_s": []}


def derived(run: dict) -> dict:
    """The figures of one run, from its raw samples (the report and the console use the same ones)."""
    n = len(run["ticks"])
    lat = run["release_s"]
    return {
        "questions_per_tick": sum(t["questions"] for t in run["ticks"]) / n,
        "answered_per_tick": sum(t["answered"] for t in run["ticks"]) / n,
        "cpu_ms_per_tick": sum(t["cpu_ms"] for t in run["ticks"]) / n,
        "tick_s": sum(t["wall_s"] for t in run["ticks"]) / n,
        "release_median_s": statistics.median(lat) if lat else None,
        "release_max_s": lat[-1] if lat else None,
    }


if __name__ == "__main__":
    sys.exit(main())
