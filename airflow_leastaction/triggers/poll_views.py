"""What a triggerer's poller keeps of the catalog between ticks, per read kind, and what it hands each
subscriber: what the store's full read of that subscriber's own requests returns
(:meth:`CatalogStore.snapshot`; ``store.runs``: :meth:`~airflow_leastaction.catalog.run_reads.RunReads.slot_records`,
:meth:`~airflow_leastaction.catalog.run_reads.RunReads.latest_runs`);
a snapshot may also hold the rows of tasks other subscribers watch and slot records of its parents
outside its own windows (read for other subscribers), which judging never looks at.

Each view caches, per watched task, the data its subscribers read. :meth:`View.read` reads it afresh for
some tasks (those that changed, or that a new subscription watches) in one statement, given their task
rows from the tick query (:func:`airflow_leastaction.catalog.changes.changed_tasks`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter
from types import MappingProxyType

from airflow_leastaction.catalog.bridges import completions_by_pk
from airflow_leastaction.catalog.run_reads import latest_runs_by_pk, slot_records_by_pk
from airflow_leastaction.catalog.snapshots import read_slots, wanted_windows
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import SlotIndex, TaskSnapshot
from airflow_leastaction.run_conditions.latest_run import LatestRuns

Tasks = dict[TaskIdentity, TaskSnapshot]


class View:
    """The cache of one read kind: per watched task, its row and the data read for it."""

    def __init__(self):
        self.tasks: Tasks = {}
        self.data: dict[TaskIdentity, object] = {}

    def identity(self, request) -> TaskIdentity:
        return request[0]

    def keyed(self, request, identity: TaskIdentity):
        """``request`` naming its task by ``identity`` (an equal one)."""
        return (identity, *request[1:])

    def read(self, conn, tasks: Tasks, requests: dict[TaskIdentity, frozenset]) -> dict[TaskIdentity, object]:
        """Per task of ``tasks`` (those in the catalog among the ones re-read), its data for ``requests`` (per
        task re-read, its subscribers' distinct requests: the same object as long as they do not change)."""
        raise NotImplementedError

    def build(self, requests: list):
        """A subscriber's value for its ``requests``, from the cache."""
        raise NotImplementedError

    def update(self, identities: Iterable[TaskIdentity], tasks: Tasks, data: dict) -> None:
        """Replace the cache of ``identities``: a task not in ``tasks`` is not in the catalog."""
        for ident in identities:
            if ident in tasks:
                self.tasks[ident] = tasks[ident]
                self.data[ident] = data.get(ident)
            else:
                self.forget(ident)

    def forget(self, ident: TaskIdentity) -> None:
        self.tasks.pop(ident, None)
        self.data.pop(ident, None)


class SnapshotView(View):
    """Parents' task rows and their slot records inside the windows their subscribers judge.

    Every subscriber of one cache state is handed the same snapshot, built once per state: the rows of
    every watched task (a read-only view; judging looks up its own parents only) and one index of every
    slot record kept (judging reads only its parents' records, in the windows it needs). So a tick that
    wakes thousands of gates builds nothing per gate, and a (parent, interval) pair many gates wait on is
    judged once (:class:`SlotIndex`). A state is never changed once handed out: a tick's update replaces it.
    """

    def __init__(self):
        super().__init__()
        self._snapshot: tuple[Mapping[TaskIdentity, TaskSnapshot], SlotIndex] | None = None
        # Per task, its requests (as last handed in) and the intervals they ask for: the same frozenset of
        # intervals tick after tick, whose hash the read windows' cache keeps (read_windows).
        self._intervals: dict[TaskIdentity, tuple[frozenset, frozenset]] = {}

    def _wanted(self, ident: TaskIdentity, requests: frozenset) -> frozenset:
        known = self._intervals.get(ident)
        if known is None or known[0] is not requests:
            known = self._intervals[ident] = (requests, frozenset(wanted_windows(requests).get(ident, ())))
        return known[1]

    def read(self, conn, tasks, requests):
        wanted = {i: self._wanted(i, reqs) for i, reqs in requests.items() if reqs}
        slots = read_slots(conn, {i: t for i, t in tasks.items() if i in wanted}, wanted)
        by_pk: dict[int, list] = {t.pk: [] for t in tasks.values()}
        for s in slots:
            by_pk[s.task_pk].append(s)
        for records in by_pk.values():
            if len(records) > 1:
                records.sort(key=attrgetter("slot"))
        return {i: by_pk[t.pk] for i, t in tasks.items()}

    def update(self, identities, tasks, data) -> None:
        self.tasks, self.data = dict(self.tasks), dict(self.data)  # the state handed out stays as it was
        super().update(identities, tasks, data)
        self._snapshot = None

    def forget(self, ident: TaskIdentity) -> None:
        # In place: a state handed out keeps only tasks their subscribers still watch, and nobody watches
        # this one any more; the next state is built without it.
        super().forget(ident)
        self._intervals.pop(ident, None)
        self._snapshot = None

    def build(self, requests):
        if self._snapshot is None:
            self._snapshot = (
                MappingProxyType(self.tasks),
                SlotIndex.grouped({self.tasks[i].pk: records for i, records in self.data.items() if records}),
            )
        return self._snapshot


class SlotRecordsView(View):
    """The slot record of each (task, slot) pair that has one."""

    def read(self, conn, tasks, requests):
        pairs = {(tasks[i].pk, slot) for i, reqs in requests.items() if i in tasks for _, slot in reqs}
        by_pk: dict[int, dict] = {t.pk: {} for t in tasks.values()}
        for (pk, slot), record in (slot_records_by_pk(conn, pairs) if pairs else {}).items():
            by_pk[pk][slot] = record
        return {i: by_pk[t.pk] for i, t in tasks.items()}

    def build(self, requests):
        out = {}
        for ident, slot in requests:
            record = (self.data.get(ident) or {}).get(slot)
            if record is not None:
                out[(ident, slot)] = record
        return out


class LatestRunsView(View):
    """Per task: its latest run, latest finished run and average run length."""

    def identity(self, request) -> TaskIdentity:
        return request

    def keyed(self, request, identity: TaskIdentity):
        return identity

    def read(self, conn, tasks, requests):
        by_pk = latest_runs_by_pk(conn, [t.pk for t in tasks.values()]) if tasks else {}
        return {i: by_pk[t.pk] for i, t in tasks.items()}

    def build(self, requests):
        return {i: self.data.get(i) or LatestRuns(None, None, None, None) for i in requests}


class CompletionsView(View):
    """An asset watcher's read: per task, its row and its completed slot records written at or after the
    change number its request names (``(task, change number)``), in cursor order."""

    def read(self, conn, tasks, requests):
        floors = {tasks[i].pk: min(seq for _, seq in reqs) for i, reqs in requests.items() if i in tasks and reqs}
        by_pk = completions_by_pk(conn, floors)
        return {i: by_pk.get(t.pk, []) for i, t in tasks.items()}

    def build(self, requests):
        return {ident: (self.tasks.get(ident), self.data.get(ident) or []) for ident, _ in requests}


#: The store read each view stands for (the poller's ``read``).
VIEWS: dict[str, type[View]] = {
    "snapshot": SnapshotView,
    "slot_records": SlotRecordsView,
    "latest_runs": LatestRunsView,
    "completions": CompletionsView,
}
