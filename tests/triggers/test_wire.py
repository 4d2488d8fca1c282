"""The trigger event statuses are a wire format: events stored by one release are read by the next."""

from airflow_leastaction.gate import Verdict
from airflow_leastaction.triggers import wire


def test_event_statuses_keep_their_stored_values():
    assert (wire.ADMITTED, wire.FAILED, wire.TIMEOUT, wire.RELAXED, wire.FINISHED) == (
        "admitted", "failed", "timeout", "relaxed", "finished")
    assert (wire.ADMIT, wire.SKIP) == ("ADMIT", "SKIP") == (Verdict.ADMIT.value, Verdict.SKIP.value)
