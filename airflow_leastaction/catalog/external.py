"""Report completions from systems outside Airflow, so their tasks can be parents of Airflow tasks."""

from __future__ import annotations

import datetime as dt

from airflow_leastaction.catalog.store import CatalogStore, SlotOutcome
from airflow_leastaction.identity import TaskIdentity


def report_completion(
    name: str,
    project: str,
    slot: dt.datetime | str,
    *,
    account: str = "",
    partition: str = "",
    cron: str | None = None,
    timezone: str = "UTC",
    rows_written: int | None = None,
    run_id: str | None = None,
    conn_id: str | None = None,
    store: CatalogStore | None = None,
) -> SlotOutcome:
    """Publish that task ``project/name`` completed the interval starting at ``slot``.

    The first report of a slot publishes output revision 1; reporting the same slot again with another
    ``run_id`` publishes a repair (revision + 1); repeating the same ``run_id`` changes nothing.

    :param name: the task's name in its project.
    :param project: the owning project (another team's deployment, a warehouse job family...).
    :param slot: interval start, an aware datetime or an ISO-8601 string with an offset.
    :param cron: the task's schedule, so children can compute which slot covers theirs; ``None`` = ad hoc.
    :param timezone: the timezone the cron is read in.
    :param rows_written: rows inserted + updated + deleted, for HAS_DATA dependencies.
    :param run_id: the reporting system's run identity (default: derived from the slot).
    """
    if isinstance(slot, str):
        slot = dt.datetime.fromisoformat(slot.replace("Z", "+00:00"))
    if slot.tzinfo is None:
        raise ValueError(f"slot {slot.isoformat()} for {project}/{name} has no timezone offset")
    if rows_written is not None and rows_written < 0:
        raise ValueError(f"rows_written for {project}/{name} must be >= 0, got {rows_written}")
    store = store or CatalogStore(conn_id=conn_id)
    identity = TaskIdentity(name, project, account, partition)
    return store.report_completion(
        identity, slot, cron=cron, timezone=timezone, rows_written=rows_written, run_id=run_id
    )
