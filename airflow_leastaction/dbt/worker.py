"""The queue worker: one owner per environment claims compatible batches and builds each with one dbt call.

Ownership is a lease row (``la_dbt_worker_lease``), refreshed by a heartbeat thread together with the
running batch's heartbeat; a second worker finds the lease held and exits without claiming. A worker that
dies stops heartbeating; once the grace period has passed the next worker takes the lease and returns
the dead worker's rows to pending. A worker that finds its lease taken (it was paused or cut off past the
grace period), or that cannot renew it for the grace period, has lost the environment: it stops its dbt
process, runs no further dbt command, claims nothing more and ends its batch with the unfinished models
``not_run``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from airflow_leastaction.crash_points import CrashPoint
from airflow_leastaction.dbt.heartbeat import Heartbeat
from airflow_leastaction.dbt.passes import Passes, PassOptions, records
from airflow_leastaction.dbt.policy import (
    FailureKind,
    ModelOutcome,
    TierPolicy,
    classify_failure,
    model_outcomes,
)
from airflow_leastaction.dbt.queue_store import Batch, ClaimedRow, QueueStore
from airflow_leastaction.dbt.runner import DbtRunner, DbtSession, Invocation, NodeResults
from airflow_leastaction.dbt.schema import BatchStatus
from airflow_leastaction.exceptions import ConfigurationError, DbtLeaseLostError

log = logging.getLogger(__name__)

# The step boundaries of a batch: each step is its own transaction (or dbt itself); recovery after a
# kill at any of them requeues what was not settled, and keeps what was.
AFTER_CLAIM = CrashPoint("dbt_queue.after_claim", "a batch is claimed; dbt has not started")
AFTER_REUSE = CrashPoint("dbt_queue.after_reuse", "the reused models are settled; dbt has not built the rest")
AFTER_DBT = CrashPoint("dbt_queue.after_dbt", "dbt has run; nothing it did is settled")
AFTER_SETTLE = CrashPoint("dbt_queue.after_settle", "the batch is settled; the catalog has not recorded it")


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class BatchReport:
    batch_id: str
    selection: list[str]
    status: str  # a BatchStatus value: how the batch ended
    outcomes: dict[str, str]  # unique id -> model outcome, of the models dbt was asked to build
    settled: dict[str, str]  # unique id -> row status after the batch (done, failed, pending)
    invocations: list[str] = field(default_factory=list)  # "build", "rerun (conflict)", "retry"...
    exit_code: int | None = None
    reused: list[str] = field(default_factory=list)  # models that stood on their last build: not built
    reasons: dict[str, str] = field(default_factory=dict)  # unique id -> why it was built or reused
    message: str | None = None  # what went wrong, when not everything was built (as the batch records it)

    @property
    def built(self) -> list[str]:
        return sorted(u for u, o in self.outcomes.items() if o == ModelOutcome.SUCCESS.value)

    @property
    def failed(self) -> list[str]:
        return sorted(u for u, s in self.settled.items() if s == "failed")


@dataclass
class DrainReport:
    environment: str
    owner: str
    owned: bool  # False: another worker holds the environment; nothing was claimed
    lease_lost: bool = False  # True: another worker took the environment over during this drain
    requeued: list[str] = field(default_factory=list)
    batches: list[BatchReport] = field(default_factory=list)
    next_eligible_at: str | None = None

    def as_dict(self) -> dict:
        data = asdict(self)
        data["claimed"] = sorted(u for b in self.batches for u in [*b.outcomes, *b.reused])
        data["built"] = sorted(u for b in self.batches for u in b.built)
        data["reused"] = sorted(u for b in self.batches for u in b.reused)
        data["failed"] = sorted(u for b in self.batches for u in b.failed)
        return data


class QueueWorker:
    """Drain one environment's queue.

    :param store: the queue store.
    :param runner: the dbt runner of the project the queued models belong to.
    :param environment: the queue environment (e.g. the dbt target).
    :param owner: this worker's name in leases and batches (default: host:pid:random).
    :param policy: tier policy deciding which eligible rows go first.
    :param grace: how long a silent worker keeps its lease and batches before they are taken back.
    :param heartbeat_interval: seconds between heartbeats (well under ``grace``).
    :param max_batch_size: most models in one dbt selection.
    :param conflict_retries: reruns of a selection that failed on a write conflict.
    :param conflict_backoff: seconds to wait before the first rerun (doubles each time).
    :param max_attempts: claims in a row a model may end unfinished before it is failed.
    :param airflow_ti: identity of the Airflow task instance running this worker, kept on its batches.
    :param is_alive: ``is_alive(batch_row)`` -> True when the task that owns a stale batch is still alive.
    :param same_task: prefix of the owner names of every try of this worker's Airflow task instance: a lease
        held under it is an earlier try's and is taken back at once.
    :param passes: reuse and catalog options (:class:`~airflow_leastaction.dbt.passes.PassOptions`).
    """

    def __init__(
        self,
        store: QueueStore,
        runner: DbtRunner,
        environment: str,
        *,
        owner: str | None = None,
        policy: TierPolicy | None = None,
        grace: dt.timedelta = dt.timedelta(minutes=5),
        heartbeat_interval: float = 10.0,
        max_batch_size: int = 100,
        conflict_retries: int = 3,
        conflict_backoff: float = 2.0,
        max_attempts: int = 3,
        airflow_ti: str | None = None,
        is_alive: Callable[[Mapping], bool | None] | None = None,
        same_task: str | None = None,
        passes: PassOptions | None = None,
    ):
        if not 0 < heartbeat_interval < grace.total_seconds():  # also refuses NaN: the lease loop would spin
            raise ConfigurationError(
                f"heartbeat_interval ({heartbeat_interval}s) must be above 0 and shorter than grace ({grace})"
            )
        self.store, self.runner, self.environment = store, runner, environment
        self.owner = owner or default_owner()
        self.policy = policy or TierPolicy()
        self.grace, self.heartbeat_interval = grace, heartbeat_interval
        self.max_batch_size, self.max_attempts = max_batch_size, max_attempts
        self.conflict_retries, self.conflict_backoff = conflict_retries, conflict_backoff
        self.airflow_ti, self.is_alive, self.same_task = airflow_ti, is_alive, same_task
        self.passes = Passes(store, runner, passes or PassOptions())
        self._dbt_pid: int | None = None

    def drain(self, max_batches: int | None = None) -> DrainReport:
        """Claim and build batches until nothing is eligible (or ``max_batches``, or the lease is lost)."""
        report = DrainReport(self.environment, self.owner, owned=False)
        acquired = self.store.acquire_lease(
            self.environment, self.owner, self.grace, same_task=self.same_task, is_alive=self.is_alive
        )
        if not acquired:
            log.info("environment %r is owned by another worker; exiting without claiming", self.environment)
            return report
        report.owned = True
        try:
            beat = Heartbeat(
                self.store, self.environment, self.owner, self.heartbeat_interval, self.grace, self._stop_dbt
            )
            with beat:
                self.passes.load()  # a manifest dbt cannot read fails the drain before anything is claimed
                report.requeued = self.store.requeue_stale(
                    self.environment, self.grace, is_alive=self.is_alive, airflow_ti=self.airflow_ti,
                    owner=self.owner,
                )  # fmt: skip
                self._claim_and_build(report, beat, max_batches)
            report.lease_lost = beat.lost.is_set()
            if not report.lease_lost:
                nxt = self.store.next_eligible(self.environment, self.policy)
                report.next_eligible_at = nxt.isoformat() if nxt else None
        finally:
            self.store.release_lease(self.environment, self.owner)
        return report

    def _claim_and_build(self, report: DrainReport, beat: Heartbeat, max_batches: int | None) -> None:
        while (max_batches is None or len(report.batches) < max_batches) and not beat.lost.is_set():
            try:
                batch = self.store.claim(
                    self.environment,
                    self.owner,
                    self.policy,
                    max_size=self.max_batch_size,
                    airflow_ti=self.airflow_ti,
                )
            except DbtLeaseLostError:
                beat.lost.set()
                log.error("worker %s lost environment %r; claiming nothing more", self.owner, self.environment)
                return
            if batch is None:
                return
            AFTER_CLAIM()
            beat.batch_id = batch.id
            report.batches.append(self.build(batch, beat))
            beat.batch_id = None

    def build(self, batch: Batch, beat: Heartbeat | None = None) -> BatchReport:
        """Run one batch and settle its rows. Whatever did not finish goes back to the queue.

        Models whose code and inputs have not changed since their last build are settled first, reused;
        dbt builds the rest. With ``beat``, every dbt command waits for a confirmed lease; once the lease is
        lost no further command runs and the batch ends ``abandoned``, its unfinished models ``not_run``.
        """
        steps: list[str] = []
        results, last, judged, reused, todo = NodeResults(), None, None, [], list(batch.rows)
        try:
            with self.runner.session(batch.key.target or None) as session:
                judged = self.passes.judge(batch, session, steps)
                reused = self.passes.settle_reused(batch, judged)
                AFTER_REUSE()
                todo = [r for r in batch.rows if r.unique_id not in reused]
                if todo:
                    self.passes.started(todo)
                    results, last = self._execute(session, batch, [r.fqn for r in todo], steps, beat)
                    AFTER_DBT()
        finally:
            report = self._settle(batch, todo, reused, judged, steps, results, last, beat)
        AFTER_SETTLE()
        self.passes.settled(batch, {u: ModelOutcome(o) for u, o in report.outcomes.items()}, judged)
        return report

    def _settle(self, batch, todo: Sequence[ClaimedRow], reused, judged, steps, results, last, beat) -> BatchReport:
        uids = [r.unique_id for r in todo]
        outcomes = model_outcomes(uids, results.statuses, results.tests_of)
        status, message = _batch_status(outcomes.values()), _failure_summary(last, results)
        if not todo:
            message = f"all {len(reused)} model(s) stand on their last build; dbt not run"
        if beat is not None and beat.lost.is_set():
            # What did not succeed might have been retried had the lease held: it is not_run, and goes
            # back to the queue (unless recovery took it back already). What was built stays built.
            outcomes = {u: _unless_built(o) for u, o in outcomes.items()}
            status, message = (
                BatchStatus.ABANDONED.value,
                f"lease lost after {len(steps)} dbt command(s); " + (message or ""),
            )
        settled = self.store.finish(
            batch,
            outcomes,
            status=status,
            invocations=len(steps),
            exit_code=last.exit_code if last else None,
            message=message,
            messages={u: results.messages.get(u, "") for u in uids},
            passes=records(judged, uids),
            reused=len(reused),
            max_attempts=self.max_attempts,
        )
        reasons = {u: d.reason for u, d in (judged.decisions if judged else {}).items()}
        return BatchReport(
            batch.id,
            [r.fqn for r in todo],
            status,
            {u: o.value for u, o in outcomes.items()},
            {**dict.fromkeys(reused, "done"), **settled},
            steps,
            last.exit_code if last else None,
            reused,
            reasons,
            message,
        )

    def _execute(
        self, session: DbtSession, batch: Batch, selection: list[str], steps: list[str], beat: Heartbeat | None
    ) -> tuple[NodeResults, Invocation | None]:
        log.info("batch %s: dbt %s --select %s", batch.id, batch.key.action, " ".join(selection))
        results, inv, step = NodeResults(), None, batch.key.action
        while step is not None:
            # Confirmed here, in this thread, right before dbt starts: a worker resumed after losing the
            # environment must not start one more command next to the new owner's.
            if beat is not None and not beat.confirm():
                log.warning("batch %s: the environment was lost; not running dbt %s", batch.id, step)
                break
            try:
                if step == "retry":
                    inv = session.retry(inv, on_start=self._started)
                else:
                    inv = session.build(
                        selection, command=batch.key.action, args=batch.key.dbt_args(), on_start=self._started
                    )
            finally:
                self._dbt_pid = None
            steps.append(step)
            results = results.merge(inv.node_results())
            step = self._next_step(batch, inv, results, steps)
        return results, inv

    def _next_step(self, batch: Batch, inv: Invocation, results: NodeResults, steps: list[str]) -> str | None:
        """What to run after a failed command: a rerun on a write conflict, else one dbt retry."""
        if not _has_errors(inv, results):
            return None
        kind = classify_failure(results.failure_messages() + [inv.output])
        reruns = steps.count("rerun (conflict)")
        if kind is FailureKind.CONFLICT and reruns < self.conflict_retries:
            wait = self.conflict_backoff * 2**reruns
            log.warning("batch %s hit a write conflict; rerunning the selection in %.1fs", batch.id, wait)
            time.sleep(wait)
            return "rerun (conflict)"
        if kind is FailureKind.OTHER and "retry" not in steps and (inv.target_path / "run_results.json").exists():
            log.warning("batch %s failed; dbt retry of the failed nodes", batch.id)
            return "retry"
        return None

    def _started(self, pid: int) -> None:
        self._dbt_pid = pid

    def _stop_dbt(self) -> None:
        """Stop the running dbt command: the environment now belongs to another worker."""
        pid = self._dbt_pid
        if pid is None:
            return
        log.error("stopping dbt (pid %s): this worker no longer owns the environment", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def _unless_built(outcome: ModelOutcome) -> ModelOutcome:
    return outcome if outcome is ModelOutcome.SUCCESS else ModelOutcome.NOT_RUN


def _has_errors(inv: Invocation, results: NodeResults) -> bool:
    # Exit code 2: dbt itself failed (no node ran). Test failures alone ("fail") are not retried: a test is
    # a verdict on the data, and rerunning it against the same data gives the same verdict.
    return inv.exit_code == 2 or any(s == "error" for s in results.statuses.values())


def _batch_status(outcomes) -> str:
    outcomes = list(outcomes)
    return BatchStatus.of(sum(o is ModelOutcome.SUCCESS for o in outcomes), len(outcomes)).value


def _failure_summary(inv: Invocation | None, results: NodeResults) -> str | None:
    if inv is None:
        return "dbt did not start"
    failures = [
        f"{u}: {results.messages.get(u, '')}".strip()
        for u, s in sorted(results.statuses.items())
        if s in ("error", "fail")
    ]
    if failures:
        return "\n".join(failures)
    if inv.exit_code != 0:
        return "\n".join(inv.output.strip().splitlines()[-20:])
    return None
