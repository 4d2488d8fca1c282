"""What travels between a waiting task and its trigger: event statuses, consumed revisions, cursors."""

import datetime as dt
import json

import pytest

from airflow_leastaction.gating.engine import Verdict
from airflow_leastaction.triggers import wire
from airflow_leastaction.triggers.wire import TriggerStatus


def test_every_event_status_reads_back_from_the_text_an_event_carries():
    for status in TriggerStatus:
        text = json.loads(json.dumps({"status": status.value}))["status"]
        assert type(text) is str and TriggerStatus(text) is status and text == status


def test_the_statuses_are_one_lower_case_vocabulary_for_every_trigger():
    assert [s.value for s in TriggerStatus] == [
        "admitted",
        "skipped",
        "failed",
        "timeout",
        "relaxed",
        "undecided",
        "finished",
    ]


def test_a_gates_final_verdict_fires_the_status_of_the_same_name_and_a_wait_fires_none():
    assert TriggerStatus.of(Verdict.ADMIT) is TriggerStatus.ADMITTED
    assert TriggerStatus.of(Verdict.SKIP) is TriggerStatus.SKIPPED
    with pytest.raises(ValueError, match="WAIT verdict fires no trigger event"):
        TriggerStatus.of(Verdict.WAIT)


UTC = dt.UTC
D1, D2 = dt.datetime(2026, 1, 1, tzinfo=UTC), dt.datetime(2026, 1, 2, tzinfo=UTC)


def test_consumed_revisions_round_trip_in_one_form():
    consumed = {"catalog:sales/orders": {D1: 1, D2: 3}}
    assert wire.decode_consumed(wire.encode_consumed(consumed)) == consumed
    last = {"catalog:sales/orders": (D2, 3)}
    assert wire.encode_last_consumed(last) == {"catalog:sales/orders": {D2.isoformat(): 3}}
    assert wire.decode_last_consumed(wire.encode_last_consumed(last)) == last
