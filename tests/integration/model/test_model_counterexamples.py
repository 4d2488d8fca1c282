"""Counterexamples the catalog model found, kept as plain steps of the machine with every invariant checked
after each step, on SQLite and PostgreSQL (docs/contributing.md: turning a counterexample into a test)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from airflow_leastaction.catalog.schema import consumption
from tests.helpers.catalog_machine import REPORT, SLOTS, catalog_machine

pytestmark = pytest.mark.no_airflow

DAY1 = SLOTS[0]
#: The report's three parents complete day 1 (the rates at revision 1), each through its own writer.
PARENTS_COMPLETE = (
    ("report_from_outside", DAY1, None),
    ("asset_event", DAY1, 0, 1),
    ("parent_outcome", DAY1, 0, 1, "success"),
)


def steps(store, *calls):
    """Run ``calls`` (a machine method's name and its arguments) on a fresh machine, checking after each."""
    machine = catalog_machine(store)()
    for name, *args in calls:
        getattr(machine, name)(*args)
        machine.check()
    return machine


def test_a_run_degraded_while_its_parent_slot_was_being_repaired_is_stale_only_once_the_repair_lands(store):
    machine = steps(
        store,
        ("report_from_outside", DAY1, None),
        ("asset_event", DAY1, 0, 1),
        ("parent_outcome", DAY1, 0, 1, "success"),  # revision 1
        ("parent_outcome", DAY1, 1, 1, "running"),  # its repair, in flight at the deadline
        ("gate", REPORT.name, DAY1, 0, True, False),  # admitted degraded: missing at revision 1
        ("succeed_admitted", "build__gate", "scheduled__2024-01-01", 1),
    )
    assert machine.store.audit.stale_consumers() == []
    machine.parent_outcome(DAY1, 1, 1, "success")  # the repair lands: revision 2
    machine.check()
    assert [s["current_revision"] for s in machine.store.audit.stale_consumers()] == [2]


def test_a_run_degraded_while_its_consumed_parent_slot_runs_again_is_stale_again_only_once_that_run_lands(store):
    machine = steps(
        store,
        *PARENTS_COMPLETE,
        ("gate", REPORT.name, DAY1, 0, False, False),
        ("succeed_admitted", "build__gate", "scheduled__2024-01-01", 1),  # consumed revision 1
        ("parent_outcome", DAY1, 1, 1, "success"),  # a manual run: revision 2, the report is stale
        ("parent_outcome", DAY1, 1, 2, "running"),  # the parent's slot runs again
        ("gate", REPORT.name, DAY1, 1, True, False),  # the report's re-run, degraded: missing at revision 2
        ("succeed_admitted", "build__gate", "manual__2024-01-01", 1),
    )
    assert machine.store.audit.stale_consumers() == []
    machine.parent_outcome(DAY1, 1, 2, "success")  # revision 3
    machine.check()
    assert [s["current_revision"] for s in machine.store.audit.stale_consumers()] == [3]


def test_a_plan_from_a_parent_that_admitted_a_run_by_its_watermark_reaches_no_slot_it_never_selected(store):
    steps(
        store,
        ("report_from_outside", DAY1, None),
        ("asset_event", DAY1, 0, 1),
        ("parent_outcome", SLOTS[1], 0, 1, "success"),  # its records start the day after: the watermark judges
        ("gate", REPORT.name, DAY1, 0, False, False),
        ("succeed_admitted", "build__gate", "scheduled__2024-01-01", 1),
        ("plan", "feeds.rates", DAY1, 1),
        ("plan", "orders_export", DAY1, 1),
    )


def test_a_replayed_success_of_a_run_that_bypassed_every_parent_is_not_credited_with_its_reruns_admission(store):
    machine = steps(
        store,
        ("gate", REPORT.name, DAY1, 0, False, False, True),  # gates = warn: every parent bypassed
        ("succeed_admitted", "build__gate", "scheduled__2024-01-01", 1),  # consumes nothing
        ("report_from_outside", DAY1, None),
        ("gate", REPORT.name, DAY1, 0, False, False, True),  # the run cleared: the export is satisfied now
        ("succeed_admitted", "build__gate", "scheduled__2024-01-01", 2),  # consumes the export
        ("replay", 0),  # the first try's success again, late (a spool replayed twice)
    )
    with machine.store.engine.connect() as conn:
        assert conn.execute(select(consumption.c.attempt)).scalars().all() == [2]  # the second try's only


def test_a_success_applied_again_after_outcomes_reported_out_of_order_consumes_once(store):
    steps(
        store,
        *PARENTS_COMPLETE,
        ("consumer_outcome", REPORT.name, DAY1, 0, 2, "running"),  # a later try, stamped by a slower clock
        ("consumer_outcome", REPORT.name, DAY1, 1, 1, "running"),  # a manual run of the same slot
        ("gate", REPORT.name, DAY1, 0, False, False),
        ("succeed_admitted", "build__gate", "scheduled__2024-01-01", 1),
        ("replay", 1),  # the later try again: it wins over the success by its try number
        ("replay", 2),  # the manual run's start again: it wins by its time
        ("replay", 3),  # the success again, newer by its time: applied again, consumed once
    )


def test_a_machine_stepped_by_hand_leaves_airflows_try_reader_as_it_was(store):
    """A machine stepped by hand is never torn down: if it kept Airflow's try reader swapped for its own, every
    later asset event of the process would be keyed by the machine's tries, and a re-run's event taken for
    the first one (the real re-run tests, run after these in one process, recorded no repair)."""
    from airflow_leastaction.assets import recording

    real = recording.read_producing_try
    machine = steps(store, *PARENTS_COMPLETE, ("asset_event_after_clear", DAY1, 0))
    assert recording.read_producing_try is real
    assert machine.producer_tries == {"scheduled__2024-01-01": 2}
