"""Report completions from systems outside Airflow, so their tasks can be parents of Airflow tasks."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

from airflow_leastaction.catalog.outcomes import SlotEvent
from airflow_leastaction.catalog.spool_check import check_outcome
from airflow_leastaction.catalog.store import CatalogStore, SlotOutcome, external_meta
from airflow_leastaction.exceptions import InvalidReportError, TaskOwnedByDagError, UnappliableOutcomeError
from airflow_leastaction.identity import TaskIdentity, airflow_task_ids
from airflow_leastaction.instants import parse_iso_instant
from airflow_leastaction.intervals.slots import slot_in_range
from airflow_leastaction.refs import deployment_project


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
    parents: Sequence[TaskIdentity] | None = None,
    repair: bool = False,
) -> SlotOutcome:
    """Publish that task ``project/name`` completed the interval starting at ``slot``.

    The first report of a slot publishes output revision 1; reporting the same slot again with another
    ``run_id`` publishes a repair (revision + 1); repeating the same ``run_id`` changes nothing.

    :param name: the task's name in its project.
    :param project: the owning project (another team's deployment, a warehouse job family...).
    :param slot: interval start, an aware datetime or an ISO-8601 string with an offset.
    :param cron: the task's schedule, so children can compute which slot covers theirs; ``None`` keeps the
        schedule the catalog has (ad hoc for a task reported for the first time).
    :param timezone: the timezone the cron is read in (with ``cron`` only).
    :param rows_written: rows inserted + updated + deleted, for HAS_DATA dependencies.
    :param run_id: the reporting system's run identity (default: derived from the slot).
    :param repair: the slot was computed again: publish a new revision under a run id made for this
        report (each call is one more repair), instead of the slot's default run id, which the catalog
        ignores once recorded.
    :param parents: the catalog tasks this task reads (declared, as a sensor declares an Airflow task's):
        the lineage graph shows them, and a re-run plan of a parent lists this task with the command its
        owner runs.
    :raises InvalidReportError: the report cannot be stored (nothing is written): a slot without an
        offset, negative rows, a name longer than the catalog holds.
    :raises TaskOwnedByDagError: the name is a task (or the runs) of an Airflow DAG: only Airflow records
        its outcomes. A name in this deployment's project (``[leastaction] project``) shaped as an
        Airflow task's is refused even before that task first runs.

    Of two reporters that disagree on a task's ``cron``, the later report's schedule is the task's
    (a warning says so): the schedule is what its owner last said.
    """
    identity = TaskIdentity(name, project, account, partition)
    slot = _aware(slot, identity)
    if rows_written is not None and not 0 <= rows_written < 2**63:
        raise InvalidReportError(
            identity, f"rows_written must be a whole number from 0 to 2**63 - 1, got {rows_written}"
        )
    owner = _airflow_dag_of(identity)
    if owner is not None:
        raise TaskOwnedByDagError(identity, owner)
    meta = external_meta(cron, timezone)
    if repair and run_id:
        raise InvalidReportError(identity, "a repair makes its own run id: give --run-id or --repair, not both")
    run_id = run_id or (f"repair:{slot.isoformat()}:{uuid.uuid4().hex}" if repair else f"external:{slot.isoformat()}")
    try:  # the same checks on every backend (PostgreSQL would refuse a name too long; SQLite would store it)
        check_outcome(SlotEvent("success", identity, slot, slot, meta=meta, run_id=run_id, rows_written=rows_written))
    except UnappliableOutcomeError as exc:
        raise InvalidReportError(identity, str(exc).rpartition(": ")[2]) from None
    for parent in parents or ():
        try:  # a parent is declared as a catalog task: the same widths bound its name
            check_outcome(SlotEvent("success", parent, slot, slot, run_id=run_id))
        except UnappliableOutcomeError as exc:
            raise InvalidReportError(identity, f"parent {str(exc).rpartition(': ')[2]}") from None
    if store is None:
        from airflow_leastaction.hooks.catalog import catalog_store

        store = catalog_store(conn_id)
    if parents:
        store.declare_parents(identity, meta, list(parents))
    outcome = store.report_completion(
        identity, slot, cron=cron, timezone=timezone, rows_written=rows_written, run_id=run_id
    )
    # A degraded run that ran without this slot may be due to re-run (on_late_arrival="rerun"); a report
    # retried after its process died before this sweep finds it all the same.
    from airflow_leastaction.reruns.late_arrival import after_completion

    after_completion(store, task_pk=outcome.task_pk, slot=slot)
    return outcome


def _aware(slot: dt.datetime | str, identity: TaskIdentity) -> dt.datetime:
    if isinstance(slot, str):
        try:
            slot = parse_iso_instant(slot)
        except ValueError:
            raise InvalidReportError(identity, f"slot {slot!r} is not an ISO-8601 time") from None
    if slot.tzinfo is None:
        raise InvalidReportError(identity, f"slot {slot.isoformat()} has no timezone offset")
    try:
        slot_in_range(slot)
    except ValueError as exc:
        raise InvalidReportError(identity, f"slot {exc}") from None
    return slot


def _airflow_dag_of(identity: TaskIdentity) -> str | None:
    """The DAG of this deployment whose task (or runs) ``identity`` names, if it names one."""
    if identity.project != deployment_project():
        return None
    if identity.name.endswith("::run"):
        return identity.name.removesuffix("::run")
    ids = airflow_task_ids(identity.name)
    return ids[0] if ids else None
