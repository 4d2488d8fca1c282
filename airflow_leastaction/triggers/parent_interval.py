"""The trigger behind a deferred :class:`~airflow_leastaction.sensors.parent_interval.ParentIntervalSensor`."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_leastaction.admission import gate_mode
from airflow_leastaction.catalog.engine import aresolve_url
from airflow_leastaction.gate import ALL, Verdict, decide
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.coverage import snapshot_requests
from airflow_leastaction.intervals.judging import judge_parents
from airflow_leastaction.triggers import wire
from airflow_leastaction.triggers.poller import CatalogPoller, DeadlineReached, next_until


class ParentIntervalTrigger(BaseTrigger):
    """Wait until every parent has finished the interval that covers ``child_interval``.

    All instances in one triggerer share one catalog poll per tick (see
    :class:`~airflow_leastaction.triggers.poller.CatalogPoller`). Fires ``admitted`` when the parents
    are satisfied, ``failed`` when a parent is in a failed state and ``on_parent_failure == "fail"``,
    ``relaxed`` when ``[leastaction] gates`` is no longer ``enforce``, and ``timeout`` at ``deadline``
    (whether or not the catalog answers), each with the per-parent reasons. While the catalog cannot be
    reached it keeps waiting and says so once.

    :param parents: parent identities, as dicts (``TaskIdentity.as_dict()``), each with an optional
        ``coverage`` (``slot`` or ``interval``).
    :param child_interval: ISO-8601 start of the child's interval.
    :param interval_end: ISO-8601 end of the child's interval (for parents judged on the whole interval).
    :param consumed: per parent key, the revision already consumed per parent slot (ISO keys).
    :param catalog_conn_id: catalog connection id (None: the configured default).
    :param poll_interval: seconds between catalog polls.
    :param deadline: ISO-8601 instant at which to give up, or None.
    :param on_parent_failure: ``wait`` (default) or ``fail``.
    """

    def __init__(
        self,
        parents: list[dict[str, str]],
        child_interval: str,
        consumed: dict[str, dict[str, int]] | None = None,
        catalog_conn_id: str | None = None,
        poll_interval: float = 5.0,
        deadline: str | None = None,
        on_parent_failure: str = "wait",
        interval_end: str | None = None,
    ):
        super().__init__()
        self.parents = parents
        self.child_interval = child_interval
        self.consumed = consumed or {}
        self.catalog_conn_id = catalog_conn_id
        self.poll_interval = float(poll_interval)
        self.deadline = deadline
        self.on_parent_failure = on_parent_failure
        self.interval_end = interval_end

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "parents": self.parents,
                "child_interval": self.child_interval,
                "consumed": self.consumed,
                "catalog_conn_id": self.catalog_conn_id,
                "poll_interval": self.poll_interval,
                "deadline": self.deadline,
                "on_parent_failure": self.on_parent_failure,
                "interval_end": self.interval_end,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        parents = [TaskIdentity.from_dict(p) for p in self.parents]
        child = dt.datetime.fromisoformat(self.child_interval)
        end = dt.datetime.fromisoformat(self.interval_end) if self.interval_end else None
        consumed = wire.decode_consumed(self.consumed)
        deadline = dt.datetime.fromisoformat(self.deadline) if self.deadline else None
        poller = CatalogPoller.shared(await aresolve_url(self.catalog_conn_id), self.poll_interval)
        last_state: tuple | None = None
        reasons: list[str] = []
        judgements: list = []
        requests = snapshot_requests(parents, [p.coverage for p in parents], child, end)
        async with poller.subscribe(requests) as sub:
            while True:
                try:
                    snapshot = await next_until(sub, deadline)
                except DeadlineReached:
                    yield TriggerEvent(self._event(wire.TIMEOUT, judgements, reasons))
                    return
                except Exception as exc:  # the catalog is down: keep waiting, judge nothing
                    reasons, judgements = [f"catalog unreachable: {exc}"], []
                    state: tuple = ("catalog unreachable",)
                else:
                    judgements = judge_parents(parents, child, snapshot, consumed, interval_end=end)
                    outcome = decide(ALL, judgements)
                    if outcome.verdict is Verdict.ADMIT:
                        yield TriggerEvent(self._event(wire.ADMITTED, judgements))
                        return
                    reasons = outcome.waiting_reasons
                    state = tuple(reasons)
                if state != last_state:  # once per change, whatever the poll interval
                    self.log.info("not admitted yet: %s", "; ".join(reasons))
                    last_state = state
                mode = gate_mode()
                if mode != "enforce":
                    # The deployment relaxed its gates after this wait began: the worker admits and
                    # records BYPASSED decisions.
                    yield TriggerEvent({**self._event(wire.RELAXED, judgements, reasons), "mode": mode})
                    return
                if self.on_parent_failure == "fail" and any(j.rejected for j in judgements):
                    yield TriggerEvent(self._event(wire.FAILED, judgements))
                    return

    def _event(self, status: str, judgements, reasons: list[str] | None = None) -> dict[str, Any]:
        return {
            "status": status,
            "judgements": [j.as_event() for j in judgements],
            "reasons": reasons if reasons is not None else [j.reason for j in judgements if not j.satisfied],
        }
