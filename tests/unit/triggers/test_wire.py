"""The trigger event statuses are a wire format: events stored by one release are read by the next."""

import datetime as dt

from airflow_leastaction.gating.engine import Verdict
from airflow_leastaction.triggers import wire


def test_event_statuses_keep_their_stored_values():
    assert (wire.ADMITTED, wire.FAILED, wire.TIMEOUT, wire.RELAXED, wire.FINISHED) == (
        "admitted",
        "failed",
        "timeout",
        "relaxed",
        "finished",
    )
    assert (wire.ADMIT, wire.SKIP) == ("ADMIT", "SKIP") == (Verdict.ADMIT.value, Verdict.SKIP.value)


UTC = dt.UTC
D1, D2 = dt.datetime(2026, 1, 1, tzinfo=UTC), dt.datetime(2026, 1, 2, tzinfo=UTC)


def test_consumed_revisions_round_trip_in_one_form():
    consumed = {"catalog:sales/orders": {D1: 1, D2: 3}}
    assert wire.decode_consumed(wire.encode_consumed(consumed)) == consumed
    last = {"catalog:sales/orders": (D2, 3)}
    assert wire.encode_last_consumed(last) == {"catalog:sales/orders": {D2.isoformat(): 3}}
    assert wire.decode_last_consumed(wire.encode_last_consumed(last)) == last


def test_a_run_condition_trigger_deferred_by_an_earlier_release_still_reads_its_slot_revision_pair():
    assert wire.decode_last_consumed({"catalog:sales/orders": [D1.isoformat(), 2]}) == {"catalog:sales/orders": (D1, 2)}
