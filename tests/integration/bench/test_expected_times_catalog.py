"""The backtest's catalog model is the catalog's: the generated history written into a real catalog as it
stood mid-morning gives, through ``expectations_for``, the expectations the replay computes from its own
Nodes, slot for slot."""

from __future__ import annotations

import pytest

from bench.expectation_catalog import time_pure, time_reads, write_catalog
from bench.expectation_replay import Morning
from bench.expected_times import generate

pytestmark = pytest.mark.no_airflow


def test_expectations_read_from_the_catalog_equal_the_replays_mid_morning(catalog_url):
    history = generate(1, 36, dags=2, tasks_per_dag=6, outside=3, feeds=1)
    morning = Morning(history, 32)  # load_02 lands two hours late that morning
    finishes = sorted(morning.members[k].run.finished_at for k in morning.targets)
    now = finishes[len(finishes) // 2]
    pure, found = time_pure(morning, now, repeats=1)
    assert {"complete", "running", "waiting"} <= set(pure["statuses"])  # a morning under way
    assert write_catalog(catalog_url, history, now) > 0
    reads = time_reads(catalog_url, history, 32, now, 1, found)
    assert reads["targets"] == len(morning.targets) == 15
    assert reads["equal_to_pure"] == reads["targets"]
