"""The catalog as production drives it, for Hypothesis's stateful testing: a ``RuleBasedStateMachine`` whose
rules do what the product's writers do (the listener's outcomes, ``report_completion``, asset events, the
gates' judgement and admission with and without a fallback, a consumer's success, late replays, the
asset watchers' reads, re-run plans) on a real catalog, and whose invariants compare it after every step
with :class:`~tests.helpers.catalog_oracle.Oracle`.

``catalog_machine(store)`` returns the machine class bound to one catalog (SQLite or PostgreSQL); every
example starts from an empty catalog.

Airflow's database is played by the machine where the product reads it: the try of the task that produced
an asset event (its id and number, new with each clear) comes from the machine's own table of tries.

A rule whose oracle is not settled yet, or whose defect is being fixed, is not generated until
``LEASTACTION_MODEL_PENDING`` names it (comma separated, :func:`pending`); none is held back now.
"""

from __future__ import annotations

import datetime as dt
import os
from types import SimpleNamespace

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from sqlalchemy import select

from airflow_leastaction.airflow_seam.child_interval import consumed_revisions
from airflow_leastaction.assets import recording
from airflow_leastaction.assets.recording import ProducingTry, asset_schedule
from airflow_leastaction.assets.recording import record as record_asset_event
from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.catalog.bridges import completions_by_pk
from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.metadata import metadata
from airflow_leastaction.catalog.outcomes import SlotEvent, deliver
from airflow_leastaction.catalog.schema import change_counter, consumption, task, task_run
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.gating.admission import settle
from airflow_leastaction.gating.engine import ALL, decide
from airflow_leastaction.gating.fallback import decide_all_with_fallback
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import snapshot_requests
from airflow_leastaction.intervals.parents import judge_parents
from airflow_leastaction.refs import airflow_asset, airflow_task
from airflow_leastaction.reruns.plan_reads import make_plan
from airflow_leastaction.triggers.wire import Cursor
from tests.helpers.catalog_oracle import BYPASSED, SATISFIED, Decision, Oracle, same

CRON = "0 0 * * *"
SLOTS = [dt.datetime(2024, 1, d, tzinfo=dt.UTC) for d in (1, 2)]
DAY = dt.timedelta(days=1)

EXPORT = TaskIdentity("orders_export", "erp")  # outside Airflow: report_completion
RATES = airflow_task("feeds", "rates")  # an Airflow task: the listener
FX = airflow_asset("fx")  # an asset: its events, produced by fx.fetch
REPORT = airflow_task("report", "build")  # gated on the three
MART = airflow_task("mart", "publish")  # gated on the report and the export
PRODUCER = ("fx", "fetch")

#: Per consumer: its DAG, task, gate task and parents.
CONSUMERS = {
    REPORT.name: ("report", "build", "build__gate", (EXPORT, RATES, FX)),
    MART.name: ("mart", "publish", "publish__gate", (REPORT, EXPORT)),
}
LISTENED = {RATES.name: ("feeds", "rates"), REPORT.name: ("report", "build"), MART.name: ("mart", "publish")}
IDENTITIES = {i.name: i for i in (EXPORT, RATES, FX, REPORT, MART)}
STATES = ["running", "success", "failed", "up_for_retry", "skipped"]


def pending(defect: str) -> bool:
    """Is the rule of a defect being fixed elsewhere generated in this run?"""
    return defect in os.environ.get("LEASTACTION_MODEL_PENDING", "").split(",")


def run_id_of(slot: dt.datetime, k: int) -> str:
    return f"{('scheduled', 'manual')[k]}__{slot.date().isoformat()}"


def empty_catalog(engine) -> None:
    """Delete every row the catalog and the queue hold (the change counter keeps counting)."""
    with engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            if table is not change_counter:
                conn.execute(table.delete())


def catalog_machine(store):
    """The machine class driving ``store``'s catalog."""

    class CatalogMachine(CatalogRules):
        pass

    CatalogMachine.store = store
    return CatalogMachine


class CatalogRules(RuleBasedStateMachine):
    store = None

    def __init__(self):
        super().__init__()
        empty_catalog(self.store.engine)
        self.oracle = Oracle()
        # The outcomes of Airflow tasks are stamped by a clock the test moves; reports from outside
        # Airflow and asset events by the real one, always later (the oracle orders them by a counter).
        self.now = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=30)
        self.real_order = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
        self.history: list[SlotEvent] = []
        self.cursors: dict[str, Cursor] = {}
        self.emitted: dict[str, set[tuple[dt.datetime, int]]] = {}
        self.seen_revisions: dict[tuple[str, dt.datetime], int] = {}
        self.gate_attempts: dict[tuple[str, str], int] = {}
        # Airflow's task instances of the asset's producer: the current try number in each run.
        self.producer_tries: dict[str, int] = {}

    def record_asset_event(self, event) -> None:
        """Record ``event`` as the listener would, Airflow's try read from this machine's producer tries.
        Swapped around this one call only: a machine is not always torn down (the counterexample tests
        step one by hand), and a reader left behind would key every later real event of the process by
        this machine's tries, so a re-run's event would be taken for the first one."""
        real = recording.read_producing_try
        recording.read_producing_try = self.airflow_try
        try:
            record_asset_event(event, lambda: self.store)
        finally:
            recording.read_producing_try = real

    def airflow_try(self, dag_id: str, run_id: str, task_id: str, map_index: int) -> ProducingTry:
        """The try of the producer's task instance in ``run_id``, as Airflow's database holds it."""
        number = self.producer_tries.get(run_id, 1)
        return ProducingTry(f"ti-{run_id}-{number}", number)

    def producer_key(self, run_id: str) -> str:
        return f"{PRODUCER[0]}/{run_id}/{PRODUCER[1]}@{self.producer_tries.get(run_id, 1)}"

    def tick(self) -> dt.datetime:
        self.now += dt.timedelta(minutes=1)
        return self.now

    def real_tick(self) -> dt.datetime:
        self.real_order += dt.timedelta(seconds=1)
        return self.real_order

    def pk_names(self) -> dict[int, str]:
        with self.store.engine.connect() as conn:
            return dict(conn.execute(select(task.c.id, task.c.name)).all())

    # -- what production writes ------------------------------------------------------------------------
    @rule(slot=st.sampled_from(SLOTS), run=st.sampled_from([None, "nightly-2", "fix-3"]))
    def report_from_outside(self, slot, run):
        report_completion(EXPORT.name, EXPORT.project, slot, cron=CRON, run_id=run, store=self.store)
        self.oracle.success(EXPORT.name, slot, run or f"external:{slot.isoformat()}", 1, self.real_tick())

    @rule(
        slot=st.sampled_from(SLOTS), k=st.sampled_from([0, 1]), attempt=st.integers(1, 3), state=st.sampled_from(STATES)
    )
    def parent_outcome(self, slot, k, attempt, state):
        self.deliver(self.event(RATES.name, slot, k, attempt, state))

    @rule(slot=st.sampled_from(SLOTS), k=st.sampled_from([0, 1]), retries=st.integers(1, 2))
    def asset_event(self, slot, k, retries):
        """An asset event of a producing run, delivered ``retries`` times (the same event again)."""
        run_id = run_id_of(slot, k)
        for _ in range(retries):
            self.record_asset_event(asset_event_of(slot, run_id))
            self.oracle.success(FX.name, slot, self.producer_key(run_id), 1, self.real_tick())

    @rule(slot=st.sampled_from(SLOTS), k=st.sampled_from([0, 1]))
    def asset_event_after_clear(self, slot, k):
        """The producing task cleared and re-run in the same run (a new try): its new event is a repair."""
        run_id = run_id_of(slot, k)
        self.producer_tries[run_id] = self.producer_tries.get(run_id, 1) + 1
        self.record_asset_event(asset_event_of(slot, run_id))
        self.oracle.success(FX.name, slot, self.producer_key(run_id), 1, self.real_tick())

    @rule(consumer=st.sampled_from(sorted(CONSUMERS)), slot=st.sampled_from(SLOTS), k=st.sampled_from([0, 1]))
    def parents_complete(self, consumer, slot, k):
        """Every parent of a consumer completes the slot, each through its own writer (a new run, or a
        repair of the slot); the consumer's own parent among them completes only once its gate admitted it."""
        for parent in CONSUMERS[consumer][3]:
            if parent == EXPORT:
                self.report_from_outside(slot, f"run-{self.tick().isoformat()}")
            elif parent == FX:
                self.asset_event(slot, k, 1)
            elif parent == RATES:
                self.parent_outcome(slot, k, 1, "success")
            elif self.oracle.admitted(CONSUMERS[parent.name][2], run_id_of(slot, k)):
                self.deliver(self.event(parent.name, slot, k, 1, "success"))

    @rule(
        consumer=st.sampled_from(sorted(CONSUMERS)),
        slot=st.sampled_from(SLOTS),
        k=st.sampled_from([0, 1]),
        fallback=st.booleans(),
        wait_new=st.booleans(),
        relaxed=st.booleans(),
    )
    def gate(self, consumer, slot, k, fallback, wait_new, relaxed=False):
        """A gate judges its parents and admits (degraded past a fallback's deadline; relaxed, with
        ``[leastaction] gates = warn``, bypassing what is unsatisfied), or waits."""
        dag_id, task_id, gate_id, parents = CONSUMERS[consumer]
        run_id = run_id_of(slot, k)
        attempt = self.gate_attempts.get((gate_id, run_id), 0) + 1
        now = self.tick()
        consumed = consumed_revisions(self.store, dag_id, [task_id], slot) if wait_new else {}
        snapshot = self.store.snapshot(snapshot_requests(list(parents), [None] * len(parents), slot, None))
        judged = judge_parents(list(parents), slot, snapshot, consumed)
        outcome = decide_all_with_fallback(judged, (now - DAY, 1), now) if fallback else decide(ALL, judged)
        expected = self.expected_judgements(consumer, parents, slot, wait_new)
        assert [j.satisfied for j in judged] == [e is not None for e in expected], (judged, expected)
        admission = settle(self.store, AttemptKey(dag_id, gate_id, run_id, -1, attempt), outcome,
                           downstream_slot=slot, mode="warn" if relaxed else "enforce")  # fmt: skip
        met = [e is not None for e in expected]
        assert admission.admitted == (all(met) or (fallback and any(met)) or relaxed)
        if not admission.admitted:
            return
        assert admission.degraded == (not all(met) and fallback and any(met))
        bypassed = [Decision(p.key, p.name, None, None, BYPASSED, named=False) for p in parents]
        if admission.degraded:
            bypassed = [self.oracle.missing(p.name, p.key, slot) for p in parents]
        decisions = [e or other for e, other in zip(expected, bypassed, strict=True)]
        self.gate_attempts[(gate_id, run_id)] = attempt
        self.oracle.admit(gate_id, run_id, attempt, decisions)
        self.check_decisions(AttemptKey(dag_id, gate_id, run_id, -1, attempt), decisions)

    @rule(consumer=st.sampled_from(sorted(CONSUMERS)), slot=st.sampled_from(SLOTS), k=st.sampled_from([0, 1]),
          attempt=st.integers(1, 3), state=st.sampled_from(STATES))  # fmt: skip
    def consumer_outcome(self, consumer, slot, k, attempt, state):
        if state == "success" and not self.oracle.admitted(CONSUMERS[consumer][2], run_id_of(slot, k)):
            state = "running"  # a gated task runs only once its gate admitted it
        self.deliver(self.event(consumer, slot, k, attempt, state))

    @precondition(lambda self: self.gate_attempts)
    @rule(data=st.data(), attempt=st.integers(1, 3))
    def admitted_task_succeeds(self, data, attempt):
        """A task its gate admitted runs and succeeds, consuming what the gate admitted it on."""
        self.succeed_admitted(*data.draw(st.sampled_from(sorted(self.gate_attempts))), attempt)

    def succeed_admitted(self, gate_id: str, run_id: str, attempt: int) -> None:
        consumer = next(name for name, spec in CONSUMERS.items() if spec[2] == gate_id)
        slot = next(s for s in SLOTS if run_id.endswith(s.date().isoformat()))
        self.deliver(self.event(consumer, slot, int(run_id.startswith("manual")), attempt, "success"))

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def late_replay(self, data):
        """An outcome delivered again, late (a spool replayed, a listener retried): at its own time."""
        self.replay(data.draw(st.integers(0, len(self.history) - 1)))

    def replay(self, index: int) -> None:
        self.deliver(self.history[index], replay=True)

    def check(self) -> None:
        """Every invariant, for a plain test replaying a counterexample step by step."""
        self.slot_records_match()
        self.consumption_matches()
        self.stale_matches()

    # -- what production reads -------------------------------------------------------------------------
    @rule(name=st.sampled_from([EXPORT.name, RATES.name, FX.name, REPORT.name]))
    def watcher_polls(self, name):
        """An asset watcher of the task reads its completed slots past its cursor and emits each once."""
        row = self.store.get_task(IDENTITIES[name])
        if row is None:
            return
        cursor = self.cursors.get(name, Cursor(0))
        with self.store.engine.connect() as conn:
            records = completions_by_pk(conn, {row["id"]: cursor.seq})[row["id"]]
        emitted = self.emitted.setdefault(name, set())
        for c in records:
            if cursor.passed(c.seq, c.slot):
                continue
            assert (c.slot, c.revision) not in emitted, f"{name} slot {c.slot} revision {c.revision} published twice"
            emitted.add((c.slot, c.revision))
            cursor = Cursor(c.seq, c.slot)
        self.cursors[name] = cursor
        current = {(s, r.revision) for (n, s), r in self.oracle.records.items() if n == name and r.state == "success"}
        assert current <= emitted, f"{name}: completed {sorted(current - emitted)} never published"

    @rule(name=st.sampled_from(sorted(IDENTITIES)), first=st.sampled_from(SLOTS), days=st.integers(0, 2))
    def plan(self, name, first, days):
        expected = self.oracle.plan(name, first, first + days * DAY)
        if not expected:
            return  # nothing in range: the plan refuses it (PlanError), as the CLI's tests check
        plan = make_plan(self.store, IDENTITIES[name], first, first + days * DAY)
        names = self.pk_names()
        assert {names[pk]: set(slots) for pk, slots in plan.runs.items()} == expected

    # -- helpers ---------------------------------------------------------------------------------------
    def event(self, name: str, slot, k: int, attempt: int, state: str) -> SlotEvent:
        """A listener's outcome of one attempt. An attempt succeeds once: its success again is the same
        event again (a replay, at its own time); it may run again (a deferred task resuming)."""
        dag_id, task_id = LISTENED[name]
        run_id = run_id_of(slot, k)
        for seen in self.history if state == "success" else ():
            if (seen.identity.name, seen.run_id, seen.attempt, seen.state) == (name, run_id, attempt, state):
                return seen
        meta = TaskMeta(cron=CRON, dag_id=dag_id, task_id=task_id)
        event = SlotEvent(state, IDENTITIES[name], slot, self.tick(), meta=meta, run_id=run_id, attempt=attempt)
        if state == "success" and name in CONSUMERS:
            event.consumer = AttemptKey(dag_id, task_id, run_id, -1, attempt)
            event.gate_task_ids = [CONSUMERS[name][2]]
        return event

    def deliver(self, event: SlotEvent, replay: bool = False) -> None:
        outcome = deliver(event, lambda: self.store)
        assert outcome is not None, f"{event} was not applied"
        name, run_id = event.identity.name, event.run_id
        if event.state == "success":
            done = self.oracle.success(name, event.slot, run_id, event.attempt, event.at)
            if event.consumer is not None and done != "replay":
                self.oracle.consume(name, event.gate_task_ids[0], run_id, event.attempt, event.slot, done == "older")
        else:
            self.oracle.unpublished(name, event.slot, event.state, run_id, event.attempt, event.at)
        if not replay and event not in self.history:
            self.history.append(event)

    def expected_judgements(self, consumer, parents, slot, wait_new) -> list[Decision | None]:
        out = []
        for p in parents:
            floor = self.oracle.consumed(consumer, slot, p.key, slot) if wait_new else 0
            out.append(self.oracle.judge(p.name, p.key, slot, floor) or self.by_watermark(p, slot))
        return out

    def by_watermark(self, parent: TaskIdentity, slot) -> Decision | None:
        """A slot before the parent's first record is judged by its watermark (docs: "the covering slot
        predates the parent's slot records: only its watermark knows about it")."""
        slots = [s for n, s in self.oracle.records if n == parent.name]
        wm = self.oracle.watermark.get(parent.name)
        if slots and min(slots) >= slot + DAY and wm is not None and wm >= slot:
            return Decision(parent.key, parent.name, None, None, SATISFIED)
        return None

    def check_decisions(self, attempt: AttemptKey, expected: list[Decision]) -> None:
        names = self.pk_names()
        real = [
            (r["dependency"], names.get(r["upstream_task_pk"]), r["upstream_slot"], r["upstream_revision"], r["result"])
            for r in self.store.audit.decisions_for(attempt)
        ]
        # A bypassed dependency is recorded with whatever its judge named: only its result is checked.
        real = [(d[0], None, None, None, BYPASSED) if d[4] == BYPASSED else d for d in real]
        wanted = [
            (d.dependency, d.upstream if d.named else None, d.upstream_slot, d.revision, d.result)
            for d in expected
        ]  # fmt: skip
        assert real == wanted, f"decisions of {attempt}: recorded {real}, expected {wanted}"

    # -- what must hold after every step ---------------------------------------------------------------
    @invariant()
    def slot_records_match(self):
        with self.store.engine.connect() as conn:
            rows = conn.execute(
                select(task.c.name, task_run.c.slot, task_run.c.state, task_run.c.output_revision).join(
                    task, task.c.id == task_run.c.task_pk
                )
            ).all()
            marks = dict(conn.execute(select(task.c.name, task.c.prev_interval_start)).all())
        real = {(r.name, r.slot): (r.state, r.output_revision) for r in rows}
        expected = {(key, (r.state, r.revision)) for key, r in self.oracle.records.items()}
        same(set(real.items()), expected, "slot records")
        for key, (_, revision) in real.items():
            assert revision >= self.seen_revisions.get(key, 0), f"{key} went back to revision {revision}"
            self.seen_revisions[key] = revision
        assert {n: m for n, m in marks.items() if m is not None} == self.oracle.watermark

    @invariant()
    def consumption_matches(self):
        names = self.pk_names()
        c = consumption.c
        with self.store.engine.connect() as conn:
            rows = conn.execute(
                select(c.downstream_task_pk, c.run_id, c.attempt, c.downstream_slot, c.dependency, c.upstream_slot,
                       c.upstream_revision, c.result)
            ).all()  # fmt: skip
        real = sorted((names[r[0]], *r[1:]) for r in rows)
        expected = sorted(
            (u.consumer, u.run_id, u.attempt, u.downstream_slot, u.decision.dependency, u.decision.upstream_slot,
             u.decision.revision, u.decision.result)
            for u in self.oracle.uses
        )  # fmt: skip
        same(real, expected, "consumption records")

    @invariant()
    def stale_matches(self):
        consumer = {(d, t): name for name, (d, t, _, _) in CONSUMERS.items()}
        real = {
            (consumer[(s["dag_id"], s["task_id"])], s["downstream_slot"], s["dependency"], s["upstream_slot"],
             s["current_revision"])
            for s in self.store.audit.stale_consumers()
        }  # fmt: skip
        same(real, self.oracle.stale(), "stale consumers")


def asset_event_of(slot: dt.datetime, run_id: str):
    """Airflow's asset event as the listener hands it: a partitioned asset declared with its schedule,
    produced by a task run."""
    return SimpleNamespace(
        asset=SimpleNamespace(name="fx", uri="fx", extra=asset_schedule(CRON)),
        extra={},
        partition_key=None,
        partition_date=slot,
        source_dag_id=PRODUCER[0],
        source_task_id=PRODUCER[1],
        source_run_id=run_id,
        source_map_index=-1,
    )
