"""The slot of an Airflow run: the instant its gates judge and its outcomes are recorded at. Pure logic.

One rule for the sensor, the run-condition gates and the catalog listener: the run's data-interval start,
else its logical date, else its ``run_after``. In Airflow 3 a manual trigger or an asset-triggered run may
have no logical date and no data interval; it still has a ``run_after`` (when it was allowed to start), so
every run has a slot, and a gate judges the same instant the listener records the run at.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

#: The run's dates, in the order the rule takes them, with the words reasons use for each.
SOURCES = (
    ("data_interval_start", "the run's data interval start"),
    ("logical_date", "the run's logical date"),
    ("run_after", "the run's run_after (it has no logical date)"),
)


@dataclass(frozen=True)
class RunSlot:
    """A run's slot (UTC) and which of the run's dates it is."""

    instant: dt.datetime
    source: str

    def describe(self) -> str:
        return f"judged at {self.instant.isoformat()}, {self.source}"


def run_slot(dag_run) -> RunSlot | None:
    """The slot of ``dag_run`` by the rule above, or None when the run carries none of the three dates."""
    for attr, source in SOURCES:
        value = getattr(dag_run, attr, None) if dag_run is not None else None
        if value is not None:
            return RunSlot(value.astimezone(dt.UTC), source)
    return None


def explicit_slot(value: dt.datetime) -> RunSlot:
    """A slot the DAG author passed (``child_interval=``) instead of the run's own."""
    return RunSlot(value.astimezone(dt.UTC), "the child_interval argument")


def noted(outcome, slot: RunSlot):
    """``outcome`` with each judgement's reason naming the slot it was judged for and where it came from."""
    judgements = tuple(replace(j, reason=f"{j.reason} ({slot.describe()})") for j in outcome.judgements)
    return replace(outcome, judgements=judgements)
