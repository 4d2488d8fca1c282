"""The catalog checked against a model of its rules (``tests/helpers/catalog_oracle.py``): random sequences of
what production does (reports late, out of order, repeated or never; repairs; asset events and their
retries; gate judgements with and without a fallback; consumption on success; asset watchers; re-run
plans), on SQLite and PostgreSQL, with the oracle's invariants checked after every step.

The default run is bounded; ``make soak`` runs the same machine for ``LEASTACTION_SOAK_SECONDS``.
"""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.helpers.catalog_machine import catalog_machine

pytestmark = pytest.mark.no_airflow

BOUNDED = settings(
    max_examples=int(os.environ.get("LEASTACTION_MODEL_EXAMPLES", "25")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
SOAK_SECONDS = os.environ.get("LEASTACTION_SOAK_SECONDS")


def test_the_catalog_keeps_the_documented_rules_under_random_production_sequences(store):
    run_state_machine_as_test(catalog_machine(store), settings=BOUNDED)


@pytest.mark.skipif(not SOAK_SECONDS, reason="the soak runs through `make soak` (LEASTACTION_SOAK_SECONDS)")
def test_soak(store, catalog_url):
    """Half of ``LEASTACTION_SOAK_SECONDS`` per backend, in short rounds of fresh examples (so it stops near
    its time), with a line per round: how many examples ran so far, even if the run is cut short."""
    budget = float(SOAK_SECONDS) / 2
    started = time.monotonic()
    backend = catalog_url.split(":", 1)[0]
    machine = catalog_machine(store)
    examples = 0
    original = machine.__init__

    def counted(self):
        nonlocal examples
        examples += 1
        original(self)

    machine.__init__ = counted
    round_settings = settings(BOUNDED, max_examples=10, stateful_step_count=50, database=None)
    outcome = "a counterexample (above)"
    try:
        while time.monotonic() - started < budget:
            run_state_machine_as_test(machine, settings=round_settings)
            print(f"soak on {backend}: {examples} examples in {time.monotonic() - started:.0f} s", flush=True)
        outcome = "no counterexample"
    finally:
        print(f"soak on {backend}: {examples} examples in {time.monotonic() - started:.0f} s, {outcome}", flush=True)
