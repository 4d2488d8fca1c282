"""The queue worker's heartbeat: it keeps the environment's lease and the running batch alive, and says when
the environment was lost to another worker."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable

from airflow_leastaction.dbt.queue_store import QueueStore

log = logging.getLogger(__name__)


class Heartbeat:
    """Refreshes the environment lease and the running batch's heartbeat until stopped.

    The environment is lost when a renewal finds the lease or the batch taken by another worker, or when no
    renewal has succeeded for ``grace`` (another worker may take over from then on). Then ``lost`` is set
    and ``on_lost()`` runs once.
    """

    def __init__(
        self,
        store: QueueStore,
        environment: str,
        owner: str,
        interval: float,
        grace: dt.timedelta,
        on_lost: Callable[[], None] | None = None,
    ):
        self.store, self.environment, self.owner, self.interval = store, environment, owner, interval
        self.grace, self.on_lost = grace.total_seconds(), on_lost
        self.batch_id: str | None = None
        self.lost = threading.Event()
        self._renewed = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leastaction-dbt-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def confirm(self) -> bool:
        """Renew now; False once the environment is lost (then it stays lost)."""
        if self.lost.is_set():
            return False
        try:
            held = self.store.renew_lease(self.environment, self.owner, batch_id=self.batch_id)
        except Exception:  # a transient database error: keep going while the lease cannot have expired
            log.exception("heartbeat failed; retrying in %ss", self.interval)
            if time.monotonic() - self._renewed < self.grace:
                return True
            return self._lose(f"no renewal succeeded for {self.grace:.0f}s")
        if held:
            self._renewed = time.monotonic()
            return True
        return self._lose("another worker took the lease or the batch")

    def _lose(self, why: str) -> bool:
        if not self.lost.is_set():
            self.lost.set()
            log.error("worker %s lost environment %r: %s; stopping", self.owner, self.environment, why)
            if self.on_lost is not None:
                self.on_lost()
        return False

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if not self.confirm():
                return
