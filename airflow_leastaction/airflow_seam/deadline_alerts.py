"""Airflow's deadline alerts, as a gate's early warning reads them: ``deadline_callback=`` (Airflow's
``AsyncCallback`` or ``SyncCallback``), the DAG's own ``DeadlineAlert`` that a gate without a deadline
warns against, and calling a callback the way Airflow calls a deadline's.

Airflow calls an ``AsyncCallback`` in the triggerer (``await callback(**kwargs, context=...)``) and a
``SyncCallback`` on an executor: a callable, or a notifier class (``SlackWebhookNotifier``...) built with
the kwargs and then called with the context. A warning calls both in the process that warns: an async
one awaited there, a sync one in a thread of it, so the triggerer's event loop never blocks.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib
import inspect
from collections.abc import Mapping

from airflow_leastaction.exceptions import InvalidDeadlineError
from airflow_leastaction.gating.deadline_warning import DeadlineWarning, check_deadline
from airflow_leastaction.instants import parse_iso_instant
from airflow_leastaction.version_compat import deadline_callback_classes

#: Airflow's reference classes whose time a run's values give, by the ``DeadlineReference`` name.
REFERENCES = {
    "DagRunLogicalDateDeadline": "DAGRUN_LOGICAL_DATE",
    "DagRunQueuedAtDeadline": "DAGRUN_QUEUED_AT",
    "FixedDatetimeDeadline": "FIXED_DATETIME",
}


def callback_spec(dag_id: str | None, task_id: str | None, callback) -> dict | None:
    """``deadline_callback`` as a trigger carries it (``kind``, ``path``, ``kwargs``), or
    :class:`InvalidDeadlineError` naming the DAG and task for anything but Airflow's deadline callbacks."""
    if callback is None:
        return None
    if isinstance(callback, Mapping) and callback.get("kind") in ("async", "sync") and callback.get("path"):
        return dict(callback)  # already in this form (a trigger's kwargs, a serialized operator)
    async_class, sync_class = deadline_callback_classes()
    if isinstance(callback, (async_class, sync_class)):
        kind = "async" if isinstance(callback, async_class) else "sync"
        return {"kind": kind, "path": str(callback.path), "kwargs": dict(callback.kwargs or {})}
    raise InvalidDeadlineError(
        dag_id,
        task_id,
        f"deadline_callback={callback!r}: expected Airflow's AsyncCallback(...) or SyncCallback(...), as a "
        "DeadlineAlert takes (a notifier goes inside one: AsyncCallback(SlackWebhookNotifier, kwargs={...}))",
    )


def declared_warning(
    dag_id: str | None,
    task_id: str | None,
    deadline,
    callback,
    wait_limit: dt.timedelta | None,
    limit_name: str = "max_wait",
) -> DeadlineWarning | None:
    """A gate's own ``deadline=`` and ``deadline_callback=``, checked at parse time. None without either
    (the gate may still warn against its DAG's alert: :func:`gate_warning`); a callback alone is kept for
    the DAG's alert (a warning with neither ``at`` nor ``reference``)."""
    at = check_deadline(dag_id, task_id, deadline, wait_limit, limit_name)
    spec = callback_spec(dag_id, task_id, callback)
    return None if at is None and spec is None else DeadlineWarning(at, callback=spec)


def gate_warning(own: DeadlineWarning | None, dag) -> DeadlineWarning | None:
    """What a gate warns against: its own deadline, else its DAG's alert (:func:`dag_alert`, with the
    gate's own callback if it gave one)."""
    if own is not None and own.at is not None:
        return own
    return dag_alert(dag, own.callback if own is not None else None) if dag is not None else None


def dag_alert(dag, callback: dict | None = None) -> DeadlineWarning | None:
    """The first of ``dag``'s ``DeadlineAlert`` whose time the provider computes for a run (a reference of
    :data:`REFERENCES` and a plain ``timedelta`` interval), with its callback (``callback``: the gate's
    own instead). None when it has none such."""
    alerts = getattr(dag, "deadline", None) or []
    for alert in alerts if isinstance(alerts, (list, tuple)) else [alerts]:
        name = REFERENCES.get(type(getattr(alert, "reference", None)).__name__)
        interval = getattr(alert, "interval", None)
        if name is None or not isinstance(interval, dt.timedelta):
            continue  # AVERAGE_RUNTIME, a custom reference, a VariableInterval: not the provider's to compute
        fixed = getattr(alert.reference, "_datetime", None) if name == "FIXED_DATETIME" else None
        if fixed is not None and fixed.tzinfo is None:
            continue
        try:
            spec = callback or callback_spec(None, None, getattr(alert, "callback", None))
        except InvalidDeadlineError:
            continue
        return DeadlineWarning(None, name, interval, fixed.astimezone(dt.UTC) if fixed else None, spec)
    return None


def queued_at(dag_id: str, run_id: str) -> dt.datetime | None:
    """When Airflow queued the run, as its API tells (``DAGRUN_QUEUED_AT``); None when the API cannot be
    asked (no connection ``[leastaction] airflow_api_conn_id``, or it does not answer)."""
    from airflow_leastaction.airflow_seam.api import AirflowApi

    try:
        value = AirflowApi.from_connection().run(dag_id, run_id).get("queued_at")
    except Exception:  # an alert's time is a convenience: the run's start stands in for it
        return None
    return parse_iso_instant(value) if value else None


# -- calling a callback as Airflow does ------------------------------------------------------------------
def _resolve(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _accepts(fn, name: str | None) -> bool:
    """Whether ``fn`` takes the keyword ``name`` (any keyword, when None) or ``**kwargs``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD or (p.kind in keyword and (name is None or p.name == name))
        for p in params
    )


def _first_call(callback: Mapping, context: dict):
    fn = _resolve(callback["path"])
    kwargs = dict(callback.get("kwargs") or {})
    return fn(**kwargs, context=context) if _accepts(fn, "context") else fn(**kwargs)


async def call_async(callback: Mapping, context: dict) -> None:
    """Call ``callback`` from an event loop: an async one awaited, a sync one in a thread."""
    if callback.get("kind") == "sync":
        await asyncio.to_thread(call_sync, callback, context)
        return
    result = _first_call(callback, context)
    if inspect.isawaitable(result):
        await result


def call_sync(callback: Mapping, context: dict) -> None:
    """Call ``callback`` where no event loop runs (a worker's poke, a thread): a sync one as Airflow's
    executor does (a notifier class built, then called with the context), an async one run to its end."""
    if callback.get("kind") == "async":
        asyncio.run(call_async(callback, context))
        return
    result = _first_call(callback, context)
    if callable(result):  # a notifier class: built with the kwargs, now sent
        if not _accepts(result, None):
            result(context)
        elif _accepts(result, "context"):
            result(context=context)
        else:
            result()


__all__ = [
    "REFERENCES",
    "call_async",
    "call_sync",
    "callback_spec",
    "dag_alert",
    "declared_warning",
    "gate_warning",
    "queued_at",
]
