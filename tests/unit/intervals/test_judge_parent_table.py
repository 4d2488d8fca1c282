"""Table of ``judge_parent``: one parent judged for one child interval, straight from catalog snapshots.

Each case is a sentence of the interval rule (docs/interval-dependencies.md and the task-level
dependencies spec) and asserts the verdict and the reason a person reads in the sensor's log and in the
gate decision. The inputs are the pure snapshot dataclasses: no catalog, no Airflow.
"""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import SlotSnapshot, TaskSnapshot, judge_parent
from airflow_leastaction.intervals.parents import judge_parents

UTC = dt.UTC
RAW = TaskIdentity("orders_raw", "sales")
HOURLY = TaskIdentity("orders_hourly", "sales")


def at(text: str) -> dt.datetime:
    """``2026-11-20`` or ``2026-11-20 13:00``, in UTC."""
    return dt.datetime.fromisoformat(text if " " in text else f"{text} 00:00").replace(tzinfo=UTC)


def parent(
    cron: str | None = "0 0 * * *",
    *,
    done: str | None = None,
    state: str = "success",
    first: str | None = None,
    tz: str = "UTC",
) -> TaskSnapshot:
    """``orders_raw`` with its watermark (``done``); ``first`` is its first slot record (it keeps records)."""
    return TaskSnapshot(
        1, RAW, cron, tz, state, at(done) if done else None, first is not None, at(first) if first else None
    )


def record(pk: int, slot: str, state: str, revision: int = 1) -> SlotSnapshot:
    return SlotSnapshot(pk, 1, at(slot), state, revision)


KEEPS_RECORDS = "2026-11-01"  # a parent whose slot records start well before the child's slot

CASES = [
    # -- no completion to judge --------------------------------------------------------------------------
    pytest.param(
        None,
        [],
        "2026-11-20",
        None,
        (False, False, "orders_raw: not in the catalog (unknown parent); waiting for it to report"),
        id="a parent that is not in the catalog yet does not satisfy",
    ),
    pytest.param(
        parent(),
        [],
        "2026-11-20",
        None,
        (False, False, "orders_raw: expected slot 2026-11-20 (day), never completed"),
        id="a parent that never completed does not satisfy",
    ),
    # -- the watermark ---------------------------------------------------------------------------------
    pytest.param(
        parent(done="2026-11-19"),
        [],
        "2026-11-20",
        None,
        (False, False, "orders_raw: expected slot 2026-11-20 (day), completed up to 2026-11-19"),
        id="a parent completed up to an earlier slot does not satisfy",
    ),
    pytest.param(
        parent(done="2026-11-20"),
        [],
        "2026-11-20 13:00",
        None,
        (True, False, "orders_raw: slot 2026-11-20 (day) is covered, completed up to 2026-11-20"),
        id="a parent that finished the interval covering the child's satisfies",
    ),
    pytest.param(
        parent(done="2026-11-25"),
        [],
        "2026-11-20",
        None,
        (True, False, "orders_raw: slot 2026-11-20 (day) is covered, completed up to 2026-11-25"),
        id="a parent with no slot record at all is judged by its watermark",
    ),
    pytest.param(
        parent(done="2026-11-19", state="failed"),
        [],
        "2026-11-20",
        None,
        (False, True, "orders_raw: expected slot 2026-11-20 (day), completed up to 2026-11-19; parent is failed"),
        id="a parent in error that has not finished the covering interval rejects",
    ),
    pytest.param(
        parent(done="2026-11-20", state="failed"),
        [],
        "2026-11-20",
        None,
        (False, True, "orders_raw: slot 2026-11-20 (day) is covered, completed up to 2026-11-20; parent is failed"),
        id="a parent is rejected outright in error, fail, cancelled or cancel",
    ),
    # -- the covering slot's own record ----------------------------------------------------------------
    pytest.param(
        parent(done="2026-11-20", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "success")],
        "2026-11-20",
        None,
        (True, False, "orders_raw: slot 2026-11-20 (day) completed (revision 1); judged by its slot records"),
        id="a covering slot that succeeded satisfies and names its revision",
    ),
    pytest.param(
        parent(done="2026-11-20", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "running")],
        "2026-11-20",
        None,
        (False, False, "orders_raw: slot 2026-11-20 (day) is running (being re-run); waiting for it to complete"),
        id="a covering slot that is running again waits, whatever the watermark says",
    ),
    pytest.param(
        parent(done="2026-11-20", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "up_for_retry")],
        "2026-11-20",
        None,
        (False, False, "orders_raw: slot 2026-11-20 (day) is up_for_retry (being re-run); waiting for it to complete"),
        id="a slot Airflow will retry is in progress: it neither satisfies nor rejects",
    ),
    pytest.param(
        parent(done="2026-11-19", state="failed", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "failed", 0)],
        "2026-11-20",
        None,
        (False, True, "orders_raw: slot 2026-11-20 (day) is failed; waiting for a retry or repair"),
        id="a covering slot that failed rejects",
    ),
    pytest.param(
        parent(done="2026-11-19", state="cancelled", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "cancelled", 0)],
        "2026-11-20",
        None,
        (False, True, "orders_raw: slot 2026-11-20 (day) is cancelled; waiting for a retry or repair"),
        id="a covering slot that was cancelled rejects",
    ),
    pytest.param(
        parent(done="2026-11-19", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "skipped", 0)],
        "2026-11-20",
        None,
        (False, False, "orders_raw: slot 2026-11-20 (day) was skipped; waiting for a run that completes it"),
        id="a covering slot that was skipped does not satisfy",
    ),
    pytest.param(
        parent(done="2026-11-25", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "skipped", 1)],
        "2026-11-20",
        None,
        (False, False, "orders_raw: slot 2026-11-20 (day) was skipped; waiting for a run that completes it"),
        id="a covering slot whose re-run was skipped decides by its record",
    ),
    pytest.param(
        parent(done="2026-11-25", state="failed", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "success"), record(8, "2026-11-25", "failed", 0)],
        "2026-11-20",
        None,
        (True, False, "orders_raw: slot 2026-11-20 (day) completed (revision 1); judged by its slot records"),
        id="a later slot that failed does not reject a child whose covering slot completed",
    ),
    # -- fresh output (wait_for_new_output) -------------------------------------------------------------
    pytest.param(
        parent(done="2026-11-20", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "success")],
        "2026-11-20",
        {"2026-11-20": 1},
        (
            False,
            False,
            "orders_raw: slot 2026-11-20 (day) is at revision 1, already consumed; waiting for "
            "revision 2 (a re-run of that slot)",
        ),
        id="a re-run child waits for a newer revision of the slot it already consumed",
    ),
    pytest.param(
        parent(done="2026-11-20", first=KEEPS_RECORDS),
        [record(7, "2026-11-20", "success", 2)],
        "2026-11-20",
        {"2026-11-20": 1},
        (True, False, "orders_raw: slot 2026-11-20 (day) completed (revision 2); judged by its slot records"),
        id="a repair of a consumed slot is new output",
    ),
    # -- slot records and the watermark (partial history) ------------------------------------------------
    pytest.param(
        parent(done="2026-11-25", first=KEEPS_RECORDS),
        [record(8, "2026-11-25", "success")],
        "2026-11-20",
        None,
        (
            False,
            False,
            "orders_raw: expected slot 2026-11-20 (day) has not run yet (later slots completed up to "
            "2026-11-25; judged by its slot records)",
        ),
        id="after the first recorded slot a covering slot with no record has not run whatever the watermark says",
    ),
    pytest.param(
        parent(done="2026-11-19", first=KEEPS_RECORDS),
        [record(6, "2026-11-19", "success")],
        "2026-11-20",
        None,
        (
            False,
            False,
            "orders_raw: expected slot 2026-11-20 (day), completed up to 2026-11-19; judged by its slot records",
        ),
        id="after the first recorded slot a covering slot with no record and the watermark behind waits",
    ),
    pytest.param(
        parent(done="2026-11-19", state="failed", first=KEEPS_RECORDS),
        [record(6, "2026-11-19", "success")],
        "2026-11-20",
        None,
        (
            False,
            True,
            "orders_raw: expected slot 2026-11-20 (day), completed up to 2026-11-19; judged by its slot records; "
            "parent is failed",
        ),
        id="a parent in error with no record of the covering slot rejects and says which source judged it",
    ),
    pytest.param(
        parent(done="2026-11-25", first="2026-11-22"),
        [record(8, "2026-11-22", "success")],
        "2026-11-20",
        None,
        (
            True,
            False,
            "orders_raw: slot 2026-11-20 (day) is covered, completed up to 2026-11-25; judged by its "
            "watermark, as its slot records start at 2026-11-22",
        ),
        id="slots before the first recorded slot are judged by the watermark",
    ),
    pytest.param(
        parent(state="running", first="2026-11-22"),
        [record(8, "2026-11-22", "running", 0)],
        "2026-11-20",
        None,
        (
            False,
            False,
            "orders_raw: expected slot 2026-11-20 (day), never completed; judged by its watermark, as "
            "its slot records start at 2026-11-22",
        ),
        id="the first recorded slot counts records of any state",
    ),
    # -- the expected slot and granularity truncation -------------------------------------------------------
    pytest.param(
        parent("0 2 * * *", done="2026-11-19 02:00"),
        [],
        "2026-11-20 01:59",
        None,
        (True, False, "orders_raw: slot 2026-11-19 (day) is covered, completed up to 2026-11-19"),
        id="the expected slot is the latest parent slot at or before the child's",
    ),
    pytest.param(
        parent("0 2 * * *", done="2026-11-19 02:00"),
        [],
        "2026-11-20 02:00",
        None,
        (False, False, "orders_raw: expected slot 2026-11-20 (day), completed up to 2026-11-19"),
        id="a child slot that falls exactly on a parent slot expects that slot",
    ),
    pytest.param(
        parent("0 0 * * 1", done="2026-11-16"),
        [],
        "2026-11-22 23:00",
        None,
        (True, False, "orders_raw: slot week of 2026-11-16 (week) is covered, completed up to week of 2026-11-16"),
        id="a weekly parent that finished the week of Monday 16th satisfies daily children up to the 22nd",
    ),
    pytest.param(
        parent("0 0 * * 1", done="2026-11-16"),
        [],
        "2026-11-23",
        None,
        (False, False, "orders_raw: expected slot week of 2026-11-23 (week), completed up to week of 2026-11-16"),
        id="a weekly parent does not satisfy a child of the next week",
    ),
    pytest.param(
        parent("0 0 1 * *", done="2026-11-01"),
        [],
        "2026-11-28",
        None,
        (True, False, "orders_raw: slot 2026-11 (month) is covered, completed up to 2026-11"),
        id="a monthly parent is judged by the month",
    ),
    pytest.param(
        parent("*/15 * * * *", done="2026-11-20 10:15"),
        [],
        "2026-11-20 10:59",
        None,
        (False, False, "orders_raw: expected slot 2026-11-20 10:45 (minute), completed up to 2026-11-20 10:15"),
        id="a minute-grained parent never admits a child on data 45 minutes stale",
    ),
    pytest.param(
        parent(done="2026-11-19 23:00", tz="Europe/Paris"),
        [],
        "2026-11-19 23:30",
        None,
        (
            True,
            False,
            "orders_raw: slot 2026-11-20 Europe/Paris (day) is covered, completed up to 2026-11-20 Europe/Paris",
        ),
        id="slots are truncated in the parent's timezone and named in it",
    ),
    # -- ad hoc parents (no cron) --------------------------------------------------------------------------
    pytest.param(
        parent(None, done="2026-11-21 08:00", first="2026-11-21 08:00"),
        [record(9, "2026-11-21 08:00", "success")],
        "2026-11-20",
        None,
        (True, False, "orders_raw: ad hoc run at 2026-11-21T08:00:00+00:00 covers it"),
        id="an ad hoc parent's completed run at or after the child's interval covers it",
    ),
    pytest.param(
        parent(None, done="2026-11-21 08:00"),
        [],
        "2026-11-20",
        None,
        (True, False, "orders_raw: ad hoc, completed up to 2026-11-21T08:00:00+00:00"),
        id="an ad hoc parent without records is judged by its watermark",
    ),
    pytest.param(
        parent(None, done="2026-11-19 08:00", state="failed"),
        [],
        "2026-11-20",
        None,
        (False, True, "orders_raw: ad hoc parent has no completed run at or after 2026-11-20T00:00:00+00:00"),
        id="an ad hoc parent in error with no run after the child's interval rejects",
    ),
]


@pytest.mark.parametrize("task, slots, child, consumed, expected", CASES)
def test_judge_parent(task, slots, child, consumed, expected):
    consumed = {at(slot): revision for slot, revision in (consumed or {}).items()}
    judgement = judge_parent(RAW, task, slots, at(child), consumed=consumed)
    assert (judgement.satisfied, judgement.rejected, judgement.reason) == expected
    assert judgement.dependency == RAW.key
    covering = [s for s in slots if s.slot == judgement.upstream_slot]
    if judgement.upstream_run_pk is not None:  # the decision selects the record that decided
        assert [(s.pk, s.output_revision) for s in covering] == [
            (judgement.upstream_run_pk, judgement.upstream_revision)
        ]


# -- whole-interval coverage (``coverage="interval"``) -------------------------------------------------------
DAY, NEXT_DAY = "2026-11-28", "2026-11-29"


def hourly(*, done: str | None = "2026-11-28 23:00", first: str | None = DAY) -> TaskSnapshot:
    return TaskSnapshot(
        2,
        HOURLY,
        "0 * * * *",
        "UTC",
        "success",
        at(done) if done else None,
        first is not None,
        at(first) if first else None,
    )


def hours(*hs: int, state: str = "success", revision: int = 1, odd: dict | None = None) -> list[SlotSnapshot]:
    """Slot records of ``orders_hourly`` for hours of the 28th; ``odd`` maps an hour to (state, revision)."""
    odd = odd or {}
    return [SlotSnapshot(100 + h, 2, at(DAY) + dt.timedelta(hours=h), *odd.get(h, (state, revision))) for h in hs]


SPAN = "24 slots from 2026-11-28 00:00 up to 2026-11-29 00:00"
COVERAGE_CASES = [
    pytest.param(
        HOURLY,
        hourly(),
        hours(*range(24)),
        DAY,
        NEXT_DAY,
        None,
        (True, False, f"orders_hourly: all {SPAN} completed (whole interval)", "2026-11-28 23:00"),
        id="with coverage interval every parent slot inside the child's interval must be complete",
    ),
    pytest.param(
        HOURLY,
        hourly(done="2026-11-28 22:00"),
        hours(*range(23)),
        DAY,
        NEXT_DAY,
        None,
        (
            False,
            False,
            f"orders_hourly: 1 of {SPAN} not complete (whole interval): 2026-11-28 23:00 (has not run)",
            "2026-11-28 22:00",
        ),
        id="the waiting reason lists the parent slots that are not complete",
    ),
    pytest.param(
        HOURLY,
        hourly(),
        hours(*range(24), odd={5: ("failed", 0)}),
        DAY,
        NEXT_DAY,
        None,
        (
            False,
            True,
            f"orders_hourly: 1 of {SPAN} not complete (whole interval): 2026-11-28 05:00 (failed)",
            "2026-11-28 05:00",  # the record it waits for: what a degraded run would run without
        ),
        id="a failed slot inside the interval rejects",
    ),
    pytest.param(
        HOURLY,
        hourly(),
        hours(*range(24), odd={5: ("running", 1)}),
        DAY,
        NEXT_DAY,
        None,
        (
            False,
            False,
            f"orders_hourly: 1 of {SPAN} not complete (whole interval): 2026-11-28 05:00 (running)",
            "2026-11-28 05:00",  # the record it waits for: what a degraded run would run without
        ),
        id="a running record (a repair in flight) does not complete its slot",
    ),
    pytest.param(
        HOURLY,
        hourly(),
        hours(*range(24), odd={5: ("skipped", 0)}),
        DAY,
        NEXT_DAY,
        None,
        (
            False,
            False,
            f"orders_hourly: 1 of {SPAN} not complete (whole interval): 2026-11-28 05:00 (skipped)",
            "2026-11-28 05:00",  # the record it waits for: what a degraded run would run without
        ),
        id="a skipped record does not complete its slot",
    ),
    pytest.param(
        HOURLY,
        hourly(first="2026-11-28 12:00"),
        hours(*range(12, 24)),
        DAY,
        NEXT_DAY,
        None,
        (
            True,
            False,
            f"orders_hourly: all {SPAN} completed (whole interval); 12 judged by its watermark, as its "
            "slot records start at 2026-11-28 12:00",
            "2026-11-28 23:00",
        ),
        id="a slot with no record before the parent's first recorded slot is judged by the watermark",
    ),
    pytest.param(
        HOURLY,
        hourly(),
        hours(*range(24)),
        DAY,
        NEXT_DAY,
        {"2026-11-28 23:00": 1},
        (
            False,
            False,
            f"orders_hourly: 1 of {SPAN} not complete (whole interval): 2026-11-28 23:00 (revision 1 already consumed)",
            "2026-11-28 23:00",
        ),
        id="a slot whose revision the child already consumed is not new output",
    ),
    pytest.param(
        HOURLY,
        hourly(done=None, first="2026-11-29 23:00"),
        [],
        DAY,
        "2026-11-30",
        None,
        (
            False,
            False,
            "orders_hourly: 48 of 48 slots from 2026-11-28 00:00 up to 2026-11-30 00:00 not complete "
            "(whole interval): "
            + ", ".join(f"2026-11-{28 + h // 24} {h % 24:02d}:00 (has not run)" for h in range(24))
            + " and 24 more",
            None,
        ),
        id="at most 24 slots are listed then how many more",
    ),
    pytest.param(
        HOURLY,
        hourly(done="2026-11-28 22:00"),
        hours(*range(23)),
        DAY,
        None,
        None,
        (
            True,
            False,
            "orders_hourly: slot 2026-11-28 00:00 (hour) completed (revision 1); judged by its slot records "
            "(the child has no data interval end; the covering slot decides)",
            "2026-11-28 00:00",
        ),
        id="without a data interval end the covering slot decides as the reason says",
    ),
    pytest.param(
        RAW,
        parent(done=DAY, first=KEEPS_RECORDS),
        [record(7, DAY, "success")],
        "2026-11-28 05:00",
        "2026-11-28 06:00",
        None,
        (
            True,
            False,
            "orders_raw: slot 2026-11-28 (day) completed (revision 1); judged by its slot records (no parent "
            "slot inside the child's interval; the covering slot decides)",
            DAY,
        ),
        id="an hourly child of a daily parent has no parent slot inside its interval: the covering slot decides",
    ),
    pytest.param(
        TaskIdentity("orders_hourly", "sales", coverage="slot"),
        hourly(done="2026-11-28 22:00"),
        hours(*range(23)),
        DAY,
        NEXT_DAY,
        None,
        (
            True,
            False,
            "orders_hourly: slot 2026-11-28 00:00 (hour) completed (revision 1); judged by its slot records",
            "2026-11-28 00:00",
        ),
        id="a parent's own coverage wins over the gate's",
    ),
]


@pytest.mark.parametrize("identity, task, slots, start, end, consumed, expected", COVERAGE_CASES)
def test_judge_parents_with_interval_coverage(identity, task, slots, start, end, consumed, expected):
    consumed = {identity.key: {at(s): r for s, r in consumed.items()}} if consumed else None
    [judgement] = judge_parents(
        [identity],
        at(start),
        ({identity: task}, slots),
        consumed,
        interval_end=at(end) if end else None,
        coverage="interval",
    )
    satisfied, rejected, reason, selected = expected
    assert (judgement.satisfied, judgement.rejected, judgement.reason) == (satisfied, rejected, reason)
    assert judgement.upstream_slot == (at(selected) if selected else None)


def test_judge_parents_defaults_to_the_covering_slot():
    """``coverage`` unset and no parent coverage: the covering-slot rule, as ``judge_parent`` alone."""
    task, slots = hourly(done="2026-11-28 22:00"), hours(*range(23))
    [judgement] = judge_parents([HOURLY], at(DAY), ({HOURLY: task}, slots), interval_end=at(NEXT_DAY))
    assert judgement == judge_parent(HOURLY, task, slots, at(DAY))
    assert (
        judgement.reason
        == "orders_hourly: slot 2026-11-28 00:00 (hour) completed (revision 1); judged by its slot records"
    )
