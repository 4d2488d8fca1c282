"""A queue worker's heartbeat is a positive interval shorter than its grace period: 0, a negative or a
non-number would renew the lease in a busy loop (or never)."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.dbt.worker import QueueWorker
from airflow_leastaction.exceptions import ConfigurationError


@pytest.mark.parametrize("heartbeat", [0, -1, 0.0, float("nan"), float("-inf"), 300, 301])
def test_a_heartbeat_that_is_not_a_positive_interval_below_the_grace_period_is_refused(heartbeat):
    with pytest.raises(ConfigurationError, match="heartbeat_interval"):
        QueueWorker(None, None, "default", grace=dt.timedelta(seconds=300), heartbeat_interval=heartbeat)


def test_a_heartbeat_below_the_grace_period_is_taken():
    worker = QueueWorker(None, None, "default", grace=dt.timedelta(seconds=300), heartbeat_interval=0.5)
    assert worker.heartbeat_interval == 0.5
