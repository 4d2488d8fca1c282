"""The backtest's catalog model is the catalog's: the generated history written into a real catalog as it
stood mid-morning gives, through ``expectations_for``, the expectations the replay computes from its own
Nodes, slot for slot."""

from __future__ import annotations

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.expectations.estimate import expect
from airflow_leastaction.expectations.reads import expectations_for
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.expectation_catalog import PROJECT, write_catalog
from tests.helpers.expectation_replay import Morning
from tests.helpers.expected_times import generate

pytestmark = pytest.mark.no_airflow


def test_expectations_read_from_the_catalog_equal_the_replays_mid_morning(catalog_url):
    history = generate(1, 36, dags=2, tasks_per_dag=6, outside=3, feeds=1)
    morning = Morning(history, 32)  # load_02 lands two hours late that morning
    finishes = sorted(morning.members[k].run.finished_at for k in morning.targets)
    now = finishes[len(finishes) // 2]
    replayed = expect(morning.nodes_at(now), now)
    assert {"complete", "running", "waiting"} <= {e.status for e in replayed.values()}  # a morning under way
    assert write_catalog(catalog_url, history, now) > 0

    targets = [(TaskIdentity(morning.members[k].task, PROJECT), morning.members[k].run.slot) for k in morning.targets]
    read = expectations_for(CatalogStore(get_engine(catalog_url)), targets, now)
    assert len(read) == len(targets) == 15
    for key, (identity, slot) in zip(morning.targets, targets, strict=True):
        mine, theirs = replayed[key], read[(str(identity), slot)]
        assert (theirs.status, theirs.median, theirs.p90) == (mine.status, mine.median, mine.p90), key
