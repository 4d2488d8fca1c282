"""Airflow's backfill API as ``rerun_apply.apply_plan`` calls it, answered from memory: the integration tier
has no API server (the system tier runs plans against a real one, ``tests/system/test_deadlines_cluster.py``).
Every backfill has completed at its first look; the runs named in ``failing`` finished failed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable


class BackfillApiStandIn:
    def __init__(self, failing: dict[str, set[dt.datetime]] | None = None, on_backfill: Callable | None = None):
        self.failing = failing or {}
        self.on_backfill = on_backfill or (lambda dag_id: None)
        #: Every backfill started, in order: (dag_id, from, to).
        self.started: list[tuple[str, dt.datetime, dt.datetime]] = []

    def version(self) -> str:
        return "3.3.2"

    def dag(self, dag_id: str) -> dict:
        return {"dag_id": dag_id, "max_active_runs": 1}

    def backfill(self, dag_id: str, start: dt.datetime, end: dt.datetime, max_active_runs: int) -> dict:
        self.started.append((dag_id, start, end))
        self.on_backfill(dag_id)
        return {"id": len(self.started)}

    def backfill_state(self, backfill_id: int) -> dict:
        return {"id": backfill_id, "completed_at": "2026-12-01T00:00:00+00:00"}

    def failed_runs(self, dag_id: str, start: dt.datetime, end: dt.datetime) -> list[str]:
        return [f"backfill__{s.isoformat()}" for s in sorted(self.failing.get(dag_id, ())) if start <= s <= end]
