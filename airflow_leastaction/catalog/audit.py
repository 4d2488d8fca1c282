"""Gate decisions and consumption records: the audit trail of every admission.

A part of :class:`~airflow_leastaction.catalog.store.CatalogStore` (``store.audit``); kept apart because it
is the one place that writes decisions and turns them into consumption.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import case, func, insert, select
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.audit_statements import (
    consumed_decisions,
    consumption_statement,
    decision_values,
    decisions_insert,
    same_attempt,
    summary_params,
    summary_statement,
)
from airflow_leastaction.catalog.schema import (
    consumption,
    gate_attempt,
    gate_decision,
    late_arrival,
    task,
    task_run,
    utcnow,
)
from airflow_leastaction.catalog.staleness import consumed_slot, is_stale
from airflow_leastaction.catalog.transactions import Transactions
from airflow_leastaction.gating.engine import CONSUMED_RESULTS, DecisionResult, Judgement

#: A degraded run's re-run on late arrival, until its missing dependencies arrived (see
#: :mod:`~airflow_leastaction.catalog.late_arrivals`).
WAITING = "waiting"


@dataclass(frozen=True)
class RerunOnArrival:
    """What to clear, with the gate, when a degraded run re-runs: ``task_ids`` (None: the whole run)."""

    task_ids: tuple[str, ...] | None


@dataclass(frozen=True)
class AttemptKey:
    """One attempt of one Airflow task instance: what gate decisions and consumption hang on."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int = -1
    attempt: int = 1


class AuditRecords:
    """Decision and consumption operations of the catalog store (``store.audit``): reads on ``engine``, writes
    in ``transactions`` (the store's own, so that a success and its consumption share one transaction)."""

    def __init__(self, engine: Engine, transactions: Transactions):
        self.engine = engine
        self.transactions = transactions

    # -- gate decisions and consumption -------------------------------------------------------------
    def record_decisions(
        self,
        attempt: AttemptKey,
        judgements: Sequence[Judgement],
        *,
        downstream_slot: dt.datetime | None,
        bypass_reason: str | None = None,
        at: dt.datetime | None = None,
        degraded: bool = False,
        rerun: RerunOnArrival | None = None,
        project: str | None = None,
    ) -> list[int]:
        """Append one decision per judged dependency of this attempt; their ids, in ``judgements`` order.

        ``bypass_reason`` (a relaxed gate admitting anyway) records each *unsatisfied* dependency
        BYPASSED with that reason; a satisfied one is SATISFIED all the same, and is consumed.
        ``degraded`` (admitted at a fallback's deadline) records each unsatisfied dependency MISSING, naming
        the slot it waited for (:meth:`~airflow_leastaction.gating.engine.Judgement.as_missing`); with ``rerun``, in
        the same transaction, the run is to re-run once they arrive (``la_late_arrival``, one row per run
        and gate: a run admitted degraded again keeps it). The attempt's summary (``la_gate_attempt``: how
        many decisions, how many met, bypassed or missing, when) counts them in the same transaction.
        ``project``: the catalog project of the attempt's DAG's tasks, naming a MISSING task of its run.
        """
        now = at or utcnow()
        missing = downstream_slot if degraded else None
        own_run = (attempt.dag_id, project) if project is not None else None
        rows = [decision_values(j, bypass_reason, degraded, missing, own_run) for j in judgements]
        if not rows:
            return []
        with self.transactions.write() as conn:
            ids = sorted(conn.execute(*decisions_insert(conn, attempt, downstream_slot, now, rows)).scalars())
            conn.execute(summary_statement(conn.dialect), summary_params(attempt, now, rows))
            if degraded and rerun is not None:
                _expect_late_arrival(conn, attempt, rerun, downstream_slot, now)
            return ids

    def consume(
        self,
        conn: Connection,
        who: AttemptKey,
        task_pk: int | None,
        slot,
        now,
        gate_task_ids: Sequence[str] = (),
        consume_own: bool = True,
        late: bool = False,
    ) -> int:
        """Turn admission decisions into consumption records for the attempt ``who`` that succeeded, in
        ``conn``: the transaction recording the success
        (:meth:`~airflow_leastaction.catalog.store.CatalogStore.record_success`).

        The sources are ``who``'s own SATISFIED decisions (unless it is a gate admitting other tasks:
        ``consume_own=False``) and, for each gate task directly upstream of
        it in the same run (a ``ParentIntervalSensor``, a run-condition gate), the SATISFIED decisions of
        that gate's latest attempt.

        ``late``: the success is older than its slot's outcome (a replay, perhaps again). A gate that
        admitted the run with every dependency bypassed is then no source: ``who`` may have run on that
        admission, which left nothing to consume and so no record that it was consumed, and its gate's
        latest attempt may be a later admission (the run cleared), which ``who`` never ran on.
        """
        gates = list(dict.fromkeys(gate_task_ids))
        if late and gates:
            gates = [gate for gate in gates if gate not in self._bypassing_gates(conn, who, gates)]
        if not consume_own and not gates:
            return 0
        params = {
            "c_dag_id": who.dag_id,
            "c_task_id": who.task_id,
            "c_run_id": who.run_id,
            "c_map_index": who.map_index,
            "c_attempt": who.attempt,
            "c_downstream_task_pk": task_pk,
            "c_downstream_slot": slot,
            "c_consumed_at": now,
        }
        params.update({f"c_result_{i}": r.value for i, r in enumerate(CONSUMED_RESULTS)})
        params.update({f"c_gate_{i}": gate for i, gate in enumerate(gates)})
        # INSERT ... SELECT: the decisions never travel through Python, one statement whatever their number.
        return conn.execute(consumption_statement(conn.dialect, consume_own, len(gates)), params).rowcount

    def _bypassing_gates(self, conn: Connection, who: AttemptKey, gates: Sequence[str]) -> set[str]:
        """Those of ``gates`` that admitted ``who``'s run at least once with every dependency BYPASSED."""
        a = gate_attempt.c
        query = select(a.task_id).where(
            a.dag_id == who.dag_id, a.run_id == who.run_id, a.map_index == who.map_index, a.task_id.in_(list(gates))
        )
        return set(conn.execute(query.where(a.bypassed == a.decisions)).scalars())

    def admitting_decisions(self, who: AttemptKey, gate_task_ids: Sequence[str] = ()) -> list:
        """The SATISFIED decisions the attempt ``who`` consumes when it succeeds (its own and those of the
        latest attempt of each gate admitting it, as :meth:`consume` records them; not the MISSING ones a
        degraded run ran without), each with the upstream task's identity columns (None for a task of the
        same run), in decision order."""
        gates = list(dict.fromkeys(gate_task_ids))
        decisions = consumed_decisions(True, len(gates))
        params = {f"c_gate_{i}": gate for i, gate in enumerate(gates)}
        params.update(
            c_dag_id=who.dag_id, c_task_id=who.task_id, c_run_id=who.run_id, c_map_index=who.map_index,
            c_attempt=who.attempt, c_result_0=DecisionResult.SATISFIED.value,
        )  # fmt: skip
        query = (
            select(decisions, task.c.name, task.c.project, task.c.account, task.c.partition)
            .outerjoin(task, task.c.id == decisions.c.upstream_task_pk)
            .order_by(decisions.c.id)
        )
        with self.engine.connect() as conn:
            return conn.execute(query, params).mappings().all()

    def consumed_by(self, conn: Connection, who: AttemptKey, slot) -> bool:
        """Has the attempt ``who`` of ``slot`` already recorded consumption (a replayed success must not repeat
        it)? The slot keeps the lookup to the consumer index's range of that slot."""
        c = consumption.c
        return (
            conn.execute(select(c.id).where(same_attempt(consumption, who), c.downstream_slot == slot).limit(1)).first()
            is not None
        )

    def consumed_revisions(
        self, dag_id: str, task_ids: Sequence[str], downstream_slot: dt.datetime
    ) -> dict[tuple[str, dt.datetime | None], int]:
        """Per (dependency, upstream slot), the highest revision these tasks' slot has consumed (a
        dependency a degraded run ran without was not consumed)."""
        c = consumption.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.dependency, c.upstream_slot, func.max(c.upstream_revision).label("rev"))
                .where(
                    c.dag_id == dag_id,
                    c.task_id.in_(list(task_ids)),
                    c.downstream_slot == downstream_slot,
                    c.result == DecisionResult.SATISFIED.value,
                )
                .group_by(c.dependency, c.upstream_slot)
            ).all()
        return {(r.dependency, r.upstream_slot): r.rev for r in rows if r.rev is not None}

    def decisions_for(self, attempt: AttemptKey):
        with self.engine.connect() as conn:
            return (
                conn.execute(
                    select(gate_decision).where(same_attempt(gate_decision, attempt)).order_by(gate_decision.c.id)
                )
                .mappings()
                .all()
            )

    def run_decisions(self, dag_id: str, task_id: str, run_id: str):
        """The decisions of the latest attempt of ``task_id`` in run ``run_id`` that recorded any (empty:
        none recorded yet). A DAG's run gate resumes with them when its run is retried or cleared."""
        d = gate_decision.c
        with self.engine.connect() as conn:
            attempt = conn.execute(
                select(func.max(d.attempt)).where(d.dag_id == dag_id, d.task_id == task_id, d.run_id == run_id)
            ).scalar()
            if attempt is None:
                return []
            return (
                conn.execute(
                    select(gate_decision)
                    .where(
                        d.dag_id == dag_id,
                        d.task_id == task_id,
                        d.run_id == run_id,
                        d.attempt == attempt,
                    )
                    .order_by(d.id)
                )
                .mappings()
                .all()
            )

    def last_consumed(
        self, dag_id: str, task_id: str, dependencies: Sequence[str], other_than: str | None = None
    ) -> dict:
        """Per dependency, the (upstream slot, revision) this task consumed last, across all its runs but
        ``other_than`` (the run judging: what it consumed itself, before it was cleared to run again, is not
        output an earlier run already used). A dependency a degraded run ran without was not consumed."""
        c = consumption.c
        if not dependencies:
            return {}
        query = (
            select(c.dependency, c.upstream_slot, c.upstream_revision)
            .where(
                c.dag_id == dag_id,
                c.task_id == task_id,
                c.dependency.in_(list(dependencies)),
                c.upstream_slot.is_not(None),
                c.result == DecisionResult.SATISFIED.value,
            )
            .order_by(c.id)
        )
        if other_than is not None:
            query = query.where(c.run_id != other_than)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        out: dict[str, tuple[dt.datetime, int]] = {}
        for r in rows:
            seen = out.get(r.dependency)
            if seen is None or (r.upstream_slot, r.upstream_revision or 0) > (seen[0], seen[1] or 0):
                out[r.dependency] = (r.upstream_slot, r.upstream_revision or 0)
        return out

    def stale_consumers(self, dag_id: str | None = None) -> list[dict]:
        """Consumers whose latest consumed revision of an upstream slot is older than its current one
        (:func:`is_stale`): a repair of the upstream, or, for a degraded run, the arrival of what it ran
        without (``missing``: its consumed revision is the one the slot had at the deadline, none).

        One row per (consumer task, downstream slot, dependency, upstream slot): what to re-run.
        """
        c, r = consumption.c, task_run.c
        consumed = func.max(c.upstream_revision).label("consumed_revision")
        ran_without = func.max(case((c.result == DecisionResult.MISSING.value, 1), else_=0)).label("missing")
        query = (
            select(
                c.dag_id,
                c.task_id,
                c.downstream_slot,
                c.dependency,
                c.upstream_slot,
                consumed,
                r.output_revision.label("current_revision"),
                func.max(c.run_id).label("run_id"),
                ran_without,
            )
            .select_from(consumption.join(task_run, consumed_slot(task_run)))
            .where(is_stale(task_run))
            .group_by(c.dag_id, c.task_id, c.downstream_slot, c.dependency, c.upstream_slot, r.output_revision)
            .order_by(c.dag_id, c.task_id, c.downstream_slot, c.dependency)
        )
        if dag_id:
            query = query.where(c.dag_id == dag_id)
        with self.engine.connect() as conn:
            return [{**row, "missing": bool(row["missing"])} for row in conn.execute(query).mappings()]


def _expect_late_arrival(conn: Connection, attempt: AttemptKey, rerun: RerunOnArrival, downstream_slot, now) -> None:
    la = late_arrival.c
    known = select(la.id).where(
        la.dag_id == attempt.dag_id, la.run_id == attempt.run_id, la.gate_task_id == attempt.task_id
    )
    if conn.execute(known).first() is not None:
        return
    conn.execute(
        insert(late_arrival).values(
            dag_id=attempt.dag_id,
            run_id=attempt.run_id,
            gate_task_id=attempt.task_id,
            gate_attempt=attempt.attempt,
            task_ids=None if rerun.task_ids is None else json.dumps(list(rerun.task_ids)),
            downstream_slot=downstream_slot,
            state=WAITING,
            created_at=now,
            updated_at=now,
        )
    )
