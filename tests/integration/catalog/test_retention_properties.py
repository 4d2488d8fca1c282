"""Retention against an oracle written from the rules' words, on random histories (real SQLite and
PostgreSQL): the rows a prune deletes are exactly the ones the rules let go, and what the stale report
and run conditions read is the same before and after."""

from __future__ import annotations

import datetime as dt

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, insert, select

from airflow_leastaction.catalog.retention import prune
from airflow_leastaction.catalog.schema import consumption, gate_decision, task, task_run

UTC = dt.UTC
CUTOFF = dt.datetime(2025, 6, 1, tzinfo=UTC)
TIMES = {False: dt.datetime(2025, 1, 1, tzinfo=UTC), True: dt.datetime(2025, 7, 1, tzinfo=UTC)}  # new?
DAG, DEP = "child_dag", "catalog:p/parent"


def day(n):
    return None if n is None else dt.datetime(2025, 1, n, tzinfo=UTC)


slot_st = st.fixed_dictionaries(
    {
        "state": st.sampled_from(["success", "failed", "running", "skipped"]),
        "revision": st.integers(0, 3),
        "new": st.booleans(),
    }
)
history_st = st.fixed_dictionaries(
    {
        "slots": st.dictionaries(st.integers(1, 3), slot_st, min_size=1),
        "child_running": st.sets(st.integers(1, 3), max_size=2),
        "consumed": st.lists(
            st.fixed_dictionaries(
                {
                    "task": st.sampled_from(["build", "report"]),
                    "dslot": st.sampled_from([1, 2, None]),
                    "uslot": st.integers(1, 3),
                    "rev": st.integers(1, 2),
                    "new": st.booleans(),
                    "decided_new": st.booleans(),
                }
            ),
            max_size=8,
        ),
        "unconsumed": st.lists(st.tuples(st.integers(1, 3), st.booleans()), max_size=3),
    }
)


def seed(store, h):
    """Write the history ``h`` with direct inserts; returns the oracle's view of every row."""
    with store.write() as conn:
        for table in (consumption, gate_decision, task_run, task):
            conn.execute(delete(table))
        done = [n for n, s in h["slots"].items() if s["state"] == "success" or s["revision"] > 0]
        parent = conn.execute(
            insert(task).values(
                name="parent",
                project="p",
                cron="0 0 * * *",
                prev_interval_start=day(max(done, default=None)),
                updated_at=TIMES[False],
            )
        ).inserted_primary_key[0]
        child = conn.execute(
            insert(task).values(name="child", project="p", dag_id=DAG, task_id="build", updated_at=TIMES[False])
        ).inserted_primary_key[0]
        slots = {}
        for n, s in h["slots"].items():
            rev = max(s["revision"], 1) if s["state"] == "success" else s["revision"]
            slots[n] = dict(s, revision=rev, repair=s["state"] != "success" and rev > 0, task=parent, slot=n)
            slots[n]["id"] = conn.execute(
                insert(task_run).values(
                    task_pk=parent,
                    slot=day(n),
                    state=s["state"],
                    output_revision=rev,
                    repair_pending=slots[n]["repair"],
                    updated_at=TIMES[s["new"]],
                )
            ).inserted_primary_key[0]
        for n in h["child_running"]:
            slots[("child", n)] = {
                "state": "running",
                "new": False,
                "repair": False,
                "task": child,
                "slot": n,
                "id": conn.execute(
                    insert(task_run).values(task_pk=child, slot=day(n), state="running", updated_at=TIMES[False])
                ).inserted_primary_key[0],
            }
        decisions, consumed = [], []
        for c in h["consumed"]:
            if c["uslot"] not in slots:
                continue
            d = _decision(conn, c["dslot"], c["decided_new"])
            decisions.append(d)
            c = dict(c, decision=d["id"])
            c["id"] = conn.execute(
                insert(consumption).values(
                    decision_id=d["id"],
                    dag_id=DAG,
                    task_id=c["task"],
                    run_id="r",
                    attempt=1,
                    downstream_slot=day(c["dslot"]),
                    dependency=DEP,
                    upstream_task_pk=parent,
                    upstream_run_pk=slots[c["uslot"]]["id"],
                    upstream_slot=day(c["uslot"]),
                    upstream_revision=c["rev"],
                    consumed_at=TIMES[c["new"]],
                )
            ).inserted_primary_key[0]
            consumed.append(c)
        decisions += [_decision(conn, n, new) for n, new in h["unconsumed"]]
    return slots, decisions, consumed


def _decision(conn, dslot, new):
    row = {
        "dag_id": DAG,
        "task_id": "wait",
        "run_id": "r",
        "attempt": 1,
        "downstream_slot": day(dslot),
        "dependency": DEP,
        "result": "SATISFIED",
        "reason": "seeded",
        "decided_at": TIMES[new],
    }
    return {"dslot": dslot, "new": new, "id": conn.execute(insert(gate_decision).values(**row)).inserted_primary_key[0]}


def oracle(slots, decisions, consumed):
    """The rows each rule keeps, in the words of docs/operations.md#retention."""

    def same_slot(c):
        return [g for g in consumed if (g["task"], g["dslot"], g["uslot"]) == (c["task"], c["dslot"], c["uslot"])]

    def stale(c):  # the consumer has not consumed the slot's current revision since
        current = slots[c["uslot"]]["revision"]
        return c["rev"] < current and not any(g["rev"] >= current for g in same_slot(c))

    def consumed_last(c):
        return not any((g["uslot"], g["rev"]) > (c["uslot"], c["rev"]) for g in consumed if g["task"] == c["task"])

    kept_c = [c for c in consumed if c["new"] or any(g["new"] or stale(g) for g in same_slot(c)) or consumed_last(c)]
    running_child = {s["slot"] for k, s in slots.items() if isinstance(k, tuple)}
    kept_d = [
        d for d in decisions if d["new"] or any(c["decision"] == d["id"] for c in kept_c) or d["dslot"] in running_child
    ]
    parent_slots = [s for k, s in slots.items() if not isinstance(k, tuple)]
    watermark = max((s["slot"] for s in parent_slots if s["state"] == "success" or s["revision"] > 0), default=None)
    kept_s = [
        s
        for s in slots.values()
        if s["new"]
        or s["state"] == "running"
        or s["repair"]
        or not any(o["task"] == s["task"] and o["slot"] > s["slot"] for o in slots.values())
        or (s["task"] == parent_slots[0]["task"] and s["slot"] == watermark)
        or any(c["uslot"] == s["slot"] and s["task"] == parent_slots[0]["task"] for c in kept_c)
    ]
    return {
        "la_consumption": {c["id"] for c in kept_c},
        "la_gate_decision": {d["id"] for d in kept_d},
        "la_task_run": {s["id"] for s in kept_s},
    }


def remaining(store):
    with store.engine.connect() as conn:
        return {t.name: set(conn.execute(select(t.c.id)).scalars()) for t in (consumption, gate_decision, task_run)}


def readings(store):
    """What the stale report and run conditions read from the history."""
    return (
        store.audit.stale_consumers(DAG),
        {t: store.audit.last_consumed(DAG, t, [DEP]) for t in ("build", "report")},
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(h=history_st)
def test_a_prune_deletes_exactly_what_the_rules_let_go(store, h):
    rows = seed(store, h)
    before = readings(store)
    dry = prune(store.engine, CUTOFF, dry_run=True, batch_size=3)
    prune(store.engine, CUTOFF, batch_size=3)
    kept = oracle(*rows)
    assert remaining(store) == kept
    seeded = {"la_consumption": len(rows[2]), "la_gate_decision": len(rows[1]), "la_task_run": len(rows[0])}
    assert {t: dry.counts()[t] for t in kept} == {t: seeded[t] - len(kept[t]) for t in kept}
    assert readings(store) == before
