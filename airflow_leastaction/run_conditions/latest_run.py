"""Judging a dependency on another DAG's task by that task's latest run. Pure logic, no Airflow import.

A run-condition gate does not look at intervals: the upstream's latest finished run decides, and a run
still in progress may be waited for. A dependency consumes each upstream run once; a repair (the same run
with a higher output revision) is new output when the dependency consumes repairs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from airflow_leastaction.gating.engine import DependencyType, Judgement
from airflow_leastaction.gating.has_data import has_data
from airflow_leastaction.states import IN_FLIGHT_STATES, REJECTING_STATES

__all__ = ["RunRecord", "LatestRuns", "is_fresh", "judge_finished_run", "judge_latest_run"]


@dataclass(frozen=True)
class RunRecord:
    """One slot record of a catalog task, as the run-condition gate reads it."""

    pk: int
    task_pk: int
    slot: dt.datetime
    run_id: str | None
    state: str
    output_revision: int
    rows_written: int | None
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    #: Why ``rows_written`` is unknown: its read failed (None: read, or nothing reported).
    rows_error: str | None = None


@dataclass(frozen=True)
class LatestRuns:
    """A catalog task's latest run, its latest finished run and its average run length."""

    task_pk: int | None
    latest: RunRecord | None
    latest_finished: RunRecord | None
    average: dt.timedelta | None


def is_fresh(run: RunRecord, consumed: tuple[dt.datetime, int] | None, consume_repairs: bool) -> bool:
    """Is ``run`` new output for a dependency that last consumed ``consumed`` = (upstream slot, revision)?

    A later run (a later slot) is new. The same run is new only when it published a higher revision (a
    repair) and the dependency consumes repairs. An older run never becomes new.
    """
    if consumed is None:
        return True
    slot, revision = consumed
    if run.slot != slot:
        return run.slot > slot
    return consume_repairs and run.output_revision > (revision or 0)


def judge_finished_run(
    dependency: str,
    typ: DependencyType,
    label: str,
    run: RunRecord | None,
    consumed: tuple[dt.datetime, int] | None = None,
    consume_repairs: bool = True,
) -> Judgement:
    """Judge a dependency on another DAG's task by its latest finished run. The judgement is final, but
    for HAS_DATA on a success whose rows written could not be read (:mod:`~airflow_leastaction.gating.has_data`)."""
    if run is None:
        return Judgement(dependency, False, f"{label} ({typ.value}): no finished run in the catalog", typ, final=True)
    sel = dict(
        upstream_task_pk=run.task_pk,
        upstream_run_pk=run.pk,
        upstream_slot=run.slot,
        upstream_revision=run.output_revision,
    )
    what = f"latest finished run (slot {run.slot.isoformat()}, revision {run.output_revision}) is {run.state}"
    state = "success" if run.state == "success" else ("failed" if run.state in REJECTING_STATES else "skipped")
    ok = {
        DependencyType.SUCCESS: state == "success",
        DependencyType.HAS_DATA: state == "success",
        DependencyType.FAILURE: state == "failed",
        DependencyType.ALWAYS: True,
    }[typ]
    reason, data = what, has_data(run.rows_written, run.rows_error)
    if ok and typ is DependencyType.HAS_DATA and not data.met:
        ok = False
        reason += f", but {data.what} (HAS_DATA needs at least one)"
    elif ok and typ is DependencyType.HAS_DATA:
        reason += f", {run.rows_written} rows written"
    unreadable = typ is DependencyType.HAS_DATA and state == "success" and data.unreadable
    if ok and not is_fresh(run, consumed, consume_repairs):
        ok = False
        reason += f"; already consumed (revision {consumed[1]}); waiting for a newer run" + (
            "" if consume_repairs else ", repairs are not consumed"
        )
    return Judgement(
        dependency,
        ok,
        f"{label} ({typ.value}): {reason}",
        typ,
        final=not unreadable,
        rejected=state == "failed" and typ is not DependencyType.FAILURE,
        rows_unreadable=unreadable,
        **sel,
    )


def judge_latest_run(
    dependency: str,
    typ: DependencyType,
    label: str,
    runs: LatestRuns | None,
    *,
    may_wait: bool,
    consumed: tuple[dt.datetime, int] | None = None,
    consume_repairs: bool = True,
) -> Judgement:
    """Judge a dependency on another DAG's task: wait while its latest run is in progress (``may_wait``),
    else its latest finished run decides."""
    latest = runs.latest if runs else None
    if latest is not None and latest.state in IN_FLIGHT_STATES and may_wait:
        since = latest.started_at.isoformat() if latest.started_at else "?"
        avg = f"; average run length {runs.average}" if runs.average else ""
        return Judgement(
            dependency,
            False,
            f"{label} ({typ.value}): latest run (slot {latest.slot.isoformat()}) "
            f"is {latest.state} since {since}{avg}; waiting for it",
            typ,
            final=False,
            upstream_task_pk=latest.task_pk,
            in_flight=True,
            awaited_slot=latest.slot,
        )
    if runs is None or runs.task_pk is None:
        return Judgement(
            dependency,
            False,
            f"{label} ({typ.value}): not in the catalog; it has never reported a run",
            typ,
            final=True,
        )
    return judge_finished_run(dependency, typ, label, runs.latest_finished, consumed, consume_repairs)
