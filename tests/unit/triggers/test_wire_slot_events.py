"""The payload of a catalog slot published as an asset event, and a watcher's cursor."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.triggers.wire import CATALOG_SLOT, Cursor, read_slot_event, slot_event

SLOTS = st.sampled_from([dt.datetime(2026, 11, d, tzinfo=dt.UTC) for d in (14, 15, 16)])
CURSORS = st.builds(Cursor, st.integers(0, 4), st.none() | SLOTS)


def emitted_oracle(cursor: Cursor, seq: int, slot: dt.datetime) -> bool:
    """From the rule's words: records are emitted in (change number, slot) order; a record is emitted
    already when it comes at or before the last one emitted; a cursor that emitted nothing yet covers every
    record written up to its change number."""
    if cursor.slot is None:
        return seq <= cursor.seq
    return (seq, slot) <= (cursor.seq, cursor.slot)


@given(cursor=CURSORS, seq=st.integers(0, 4), slot=SLOTS)
def test_a_record_is_emitted_already_when_it_is_at_or_before_the_cursor(cursor, seq, slot):
    assert cursor.passed(seq, slot) == emitted_oracle(cursor, seq, slot)


@given(cursor=CURSORS)
def test_a_cursor_survives_its_stored_form(cursor):
    assert Cursor.decode(cursor.encode()) == cursor


def test_no_stored_cursor_reads_as_none():
    assert Cursor.decode(None) is None and Cursor.decode({}) is None and Cursor.decode({"seq": None}) is None


def test_a_slot_event_names_its_revision_and_says_a_repair_and_reads_back_from_an_asset_events_extra():
    slot = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)
    payload = slot_event({"name": "feed", "project": "partners"}, slot, "2026-11-16T00:00:00", 2, Cursor(7, slot))
    assert (payload["leastaction"], payload["revision"], payload["repair"]) == (CATALOG_SLOT, 2, True)
    assert read_slot_event({"from_trigger": True, "payload": payload}) == payload
    assert slot_event({}, slot, "k", 1, Cursor(1, slot))["repair"] is False


def test_other_asset_events_are_not_slot_events():
    assert read_slot_event(None) is None
    assert read_slot_event({"rows_written": 3}) is None
    assert read_slot_event({"from_trigger": True, "payload": {"path": "/tmp/x"}}) is None
