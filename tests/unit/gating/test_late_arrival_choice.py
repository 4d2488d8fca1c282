"""Whether a degraded run re-runs on late arrival: one rule for a declared fallback and the form a trigger carries."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.gating.fallback import Fallback, reruns_on_late_arrival

AT = dt.time(6, 0)


@pytest.mark.parametrize(("on_late_arrival", "reruns"), [("rerun", True), (None, False)])
def test_a_fallback_reruns_only_when_it_says_rerun_declared_or_carried_to_a_trigger(on_late_arrival, reruns):
    fallback = Fallback(at=AT, require=1, on_late_arrival=on_late_arrival)
    assert reruns_on_late_arrival(fallback) is reruns
    assert reruns_on_late_arrival(fallback.as_dict()) is reruns
    assert reruns_on_late_arrival(Fallback.from_dict(fallback.as_dict())) is reruns


def test_without_a_fallback_nothing_reruns():
    assert reruns_on_late_arrival(None) is False
    assert reruns_on_late_arrival({}) is False
