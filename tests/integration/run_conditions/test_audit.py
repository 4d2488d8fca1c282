"""Gate decisions and consumption: one decision per judged dependency per attempt, consumption only
from the SATISFIED decisions of the admitting attempt when the task succeeds, relaxed gates, stale
consumers after a repair. Catalog tests run on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from airflow_leastaction.catalog.schema import consumption
from airflow_leastaction.catalog.store import AttemptKey, TaskMeta
from airflow_leastaction.cli import main
from airflow_leastaction.gating.engine import DependencyType, Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_task
from tests.helpers.run_conditions import consumed, day, decisions, states

UP = TaskIdentity("rc_upstream", "other-team")
DOWN = airflow_task("rc_audit", "report")


def judged(dep: str, ok: bool, run=None, slot=None, revision=None) -> Judgement:
    return Judgement(
        dep,
        ok,
        f"{dep}: {'ok' if ok else 'not yet'}",
        DependencyType.SUCCESS,
        final=True,
        upstream_task_pk=run and run.task_pk,
        upstream_run_pk=run and run.run_pk,
        upstream_slot=slot,
        upstream_revision=revision,
    )


def gate_attempt(n: int) -> AttemptKey:
    return AttemptKey("rc_audit", "report__gate", "run-1", -1, n)


class TestDecisionsAndConsumption:
    def test_a_retried_gate_gets_new_decisions_and_only_its_latest_attempt_is_consumed(self, store):
        up = store.record_success(UP, day(1), meta=TaskMeta(cron="0 0 * * *"), run_id="u1")
        store.audit.record_decisions(gate_attempt(1), [judged("catalog:a", False)], downstream_slot=day(1))
        store.audit.record_decisions(
            gate_attempt(2), [judged(UP.key, True, up, day(1), 1), judged("task:b", False)], downstream_slot=day(1)
        )
        store.record_success(
            DOWN,
            day(1),
            run_id="run-1",
            consumer=AttemptKey("rc_audit", "report", "run-1"),
            gate_task_ids=["report__gate"],
        )
        assert [d["result"] for d in store.audit.decisions_for(gate_attempt(1))] == ["UNSATISFIED"]
        assert len(store.audit.decisions_for(gate_attempt(2))) == 2
        [row] = consumed(store, "rc_audit")
        assert (row["dependency"], row["upstream_revision"], row["task_id"]) == (UP.key, 1, "report")

    def test_failed_work_consumes_nothing(self, store):
        store.audit.record_decisions(gate_attempt(1), [judged(UP.key, True, None, day(1), 1)], downstream_slot=day(1))
        store.record_finished(DOWN, day(1), "failed", run_id="run-1")
        assert consumed(store, "rc_audit") == []

    def test_bypassed_decisions_consume_nothing(self, store):
        store.audit.record_decisions(
            gate_attempt(1), [judged(UP.key, False)], downstream_slot=day(1), bypass_reason="gates=warn"
        )
        store.record_success(
            DOWN,
            day(1),
            run_id="run-1",
            consumer=AttemptKey("rc_audit", "report", "run-1"),
            gate_task_ids=["report__gate"],
        )
        assert [d["result"] for d in store.audit.decisions_for(gate_attempt(1))] == ["BYPASSED"]
        assert consumed(store, "rc_audit") == []

    def test_under_relaxed_gates_satisfied_dependencies_are_recorded_satisfied_and_consumed(self, store):
        up = store.record_success(UP, day(1), meta=TaskMeta(cron="0 0 * * *"), run_id="u1")
        store.audit.record_decisions(
            gate_attempt(1),
            [judged(UP.key, True, up, day(1), 1), judged("task:b", False)],
            downstream_slot=day(1),
            bypass_reason="gates=off",
        )
        store.record_success(
            DOWN,
            day(1),
            run_id="run-1",
            consumer=AttemptKey("rc_audit", "report", "run-1"),
            gate_task_ids=["report__gate"],
        )
        rows = store.audit.decisions_for(gate_attempt(1))
        assert [(d["dependency"], d["result"]) for d in rows] == [(UP.key, "SATISFIED"), ("task:b", "BYPASSED")]
        assert rows[0]["reason"] == f"{UP.key}: ok" and rows[1]["reason"] == "gates=off: task:b: not yet"
        [row] = consumed(store, "rc_audit")
        assert (row["dependency"], row["upstream_revision"]) == (UP.key, 1)

    def test_stale_lists_consumers_of_a_slot_that_was_repaired_since(self, store, catalog_url, use_catalog, capsys):
        up = store.record_success(UP, day(1), meta=TaskMeta(cron="0 0 * * *"), run_id="u1")
        store.audit.record_decisions(gate_attempt(1), [judged(UP.key, True, up, day(1), 1)], downstream_slot=day(1))
        store.record_success(
            DOWN,
            day(1),
            run_id="run-1",
            consumer=AttemptKey("rc_audit", "report", "run-1"),
            gate_task_ids=["report__gate"],
        )
        use_catalog(catalog_url)
        assert main(["stale"]) == 0
        assert "no stale consumers" in capsys.readouterr().out
        store.record_running(UP, day(1), run_id="u1-repair")
        assert store.record_success(UP, day(1), run_id="u1-repair").output_revision == 2
        assert main(["stale", "--dag-id", "rc_audit"]) == 0
        out = capsys.readouterr().out
        assert "rc_audit.report" in out and "revision 1, current revision 2" in out
        [row] = store.audit.stale_consumers()
        assert (row["consumed_revision"], row["current_revision"]) == (1, 2)

    @pytest.mark.parametrize("downstream_slot", ["recorded", "none"])
    def test_a_consumer_that_re_ran_after_the_repair_is_no_longer_stale(self, store, downstream_slot):
        def consume(attempt: int, run) -> None:
            store.audit.record_decisions(
                gate_attempt(attempt), [judged(UP.key, True, run, day(1), run.output_revision)], downstream_slot=day(1)
            )
            store.record_success(
                DOWN,
                day(1),
                run_id="run-1",
                consumer=AttemptKey("rc_audit", "report", "run-1", -1, attempt),
                gate_task_ids=["report__gate"],
            )
            if downstream_slot == "none":  # a consumer without a downstream slot: matched as "both none"
                with store.write() as conn:
                    conn.execute(sa.update(consumption).values(downstream_slot=None))

        consume(1, store.record_success(UP, day(1), meta=TaskMeta(cron="0 0 * * *"), run_id="u1"))
        store.record_running(UP, day(1), run_id="u1-repair")
        repaired = store.record_success(UP, day(1), run_id="u1-repair")
        [row] = store.audit.stale_consumers()
        assert (row["consumed_revision"], row["current_revision"]) == (1, 2)
        store.record_running(DOWN, day(1), run_id="run-1")  # the consumer re-runs its slot
        consume(2, repaired)
        assert store.audit.stale_consumers() == []

    def test_latest_runs_reads_the_latest_and_latest_finished_run_and_the_average_length(self, store):
        t0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
        for n, minutes in ((1, 10), (2, 20)):
            store.record_running(UP, day(n), run_id=f"u{n}", at=t0 + dt.timedelta(days=n))
            store.record_success(UP, day(n), run_id=f"u{n}", at=t0 + dt.timedelta(days=n, minutes=minutes))
        store.record_running(UP, day(3), run_id="u3", at=t0 + dt.timedelta(days=3))
        runs = store.runs.latest_runs([UP])[UP]
        assert runs.latest.slot == day(3) and runs.latest.state == "running"
        assert runs.latest_finished.slot == day(2)
        assert runs.average == dt.timedelta(minutes=15)
        assert (
            store.runs.latest_runs([TaskIdentity("nobody", "nowhere")])[TaskIdentity("nobody", "nowhere")].task_pk
            is None
        )


class TestRelaxedGates:
    @pytest.mark.parametrize("mode", ["warn", "off"])
    def test_warn_and_off_admit_the_task_record_the_unsatisfied_bypassed_and_consume_the_satisfied(
        self, rc_catalog, run_dag, monkeypatch, mode
    ):
        monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", mode)
        run = run_dag("rc_condition_all", day(20))  # a succeeds, b fails, c succeeds; ALL of them
        assert states(run)["child"] == "success"
        rows = {r["dependency"]: r for r in decisions(rc_catalog, "rc_condition_all", "child__gate")}
        assert {d: r["result"] for d, r in rows.items()} == {
            "task:a": "SATISFIED",
            "task:b": "BYPASSED",
            "task:c": "SATISFIED",
        }
        assert rows["task:b"]["reason"].startswith(f"gates={mode}: b (SUCCESS): upstream failed")
        assert not rows["task:a"]["reason"].startswith("gates=")
        eaten = consumed(rc_catalog, "rc_condition_all")
        assert sorted((r["dependency"], r["decision_id"]) for r in eaten) == [
            ("task:a", rows["task:a"]["id"]),
            ("task:c", rows["task:c"]["id"]),
        ]

    def test_a_run_records_decisions_and_consumes_them_on_each_backend(self, rc_catalog_any, run_dag):
        assert states(run_dag("rc_condition_n2", day(21)))["child"] == "success"
        rows = decisions(rc_catalog_any, "rc_condition_n2", "child__gate")
        assert sorted((r["dependency"], r["result"]) for r in rows) == [
            ("task:a", "SATISFIED"),
            ("task:b", "UNSATISFIED"),
            ("task:c", "SATISFIED"),
        ]
        assert all(r["attempt"] == 1 and r["downstream_slot"] == day(21) for r in rows)
        eaten = consumed(rc_catalog_any, "rc_condition_n2")
        assert sorted(r["dependency"] for r in eaten) == ["task:a", "task:c"]
        assert {r["decision_id"] for r in eaten} <= {r["id"] for r in rows}
