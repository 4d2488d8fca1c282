"""Read queries behind the UI: SQLAlchemy Core, every value a bound parameter, keyset pagination.

Lists are ordered newest first on ``(time, id)`` and paged with a cursor that names the last row shown,
so page 1,000 costs what page 1 costs: an index range scan of ``limit + 1`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Select, case, func, literal, select, tuple_
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.bridges import Bridge, bridges_of
from airflow_leastaction.catalog.deadline_warnings import warnings_of
from airflow_leastaction.catalog.declared_parents import parse_parents
from airflow_leastaction.catalog.schema import consumption, gate_decision, late_arrival, task, task_run
from airflow_leastaction.catalog.staleness import consumed_slot, is_stale
from airflow_leastaction.gating.engine import DecisionResult
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.slots import cron_granularity
from airflow_leastaction.www.attempt_reads import attempt_keys, first_decisions, row_dicts, summaries
from airflow_leastaction.www.names import rows_by_identity
from airflow_leastaction.www.params import MAX_ID
from airflow_leastaction.www.queries import (
    EVERY_DAG,
    BadCursorError,
    CatalogFilter,
    ConsumptionFilter,
    Cursor,
    DagScope,
    DecisionFilter,
    Page,
)

#: Slot records shown per task on the catalog page.
RECENT_SLOTS = 5
#: Decisions shown per gate attempt in a list of attempts, and on the page of one task instance (its
#: verdict counts them all).
ROWS_PER_ATTEMPT = 10
ROWS_OF_ONE_ATTEMPT = 200

#: What a consumption row shows of an upstream task of a DAG the reader may not read: nothing of it, as
#: the graph leaves such a task out (one withholding policy: :mod:`airflow_leastaction.www.access`).
WITHHELD_UPSTREAM = {
    "dependency": "",
    "upstream_task_pk": None,
    "upstream_run_pk": None,
    "upstream_name": None,
    "upstream_project": None,
    "upstream_slot": None,
    "upstream_revision": None,
    "current_revision": None,
    "stale": False,
}


@dataclass
class CatalogRow:
    task: dict
    granularity: str | None
    parents: list[TaskIdentity]
    slots: list[dict] = field(default_factory=list)
    #: Declared parents left out: tasks of DAGs the reader may not read.
    withheld: int = 0
    #: The assets the task is published to (:mod:`airflow_leastaction.assets`).
    assets: list[Bridge] = field(default_factory=list)

    @property
    def identity(self) -> str:
        """The task's catalog identity as a person writes it (``project/name``), e.g. to plan a re-run."""
        return str(TaskIdentity.from_row(self.task))


def _unreadable(conn, identities: set[TaskIdentity], scope: DagScope) -> set[TaskIdentity]:
    """Which of ``identities`` are catalog tasks of DAGs outside ``scope`` (a parent the catalog does not
    have belongs to no DAG, and stays)."""
    if scope.dag_ids is None or not identities:
        return set()
    rows = rows_by_identity(conn, identities)
    return {i for i, row in rows.items() if not scope.allows(row["dag_id"])}


def _newest_first(stmt: Select, at_col, id_col, cursor: Cursor | None, limit: int) -> Select:
    if cursor is not None:
        # A row-value comparison walks the (time, id) index from the cursor on both backends.
        stmt = stmt.where(tuple_(at_col, id_col) < tuple_(_typed(at_col, cursor.at), cursor.id))
    return stmt.order_by(at_col.desc(), id_col.desc()).limit(limit + 1)


def _in_sets(stmt: Select, pairs) -> Select:
    for col, values in pairs:
        if values is not None:
            stmt = stmt.where(col.in_(values))
    return stmt


def _typed(col, value):
    return literal(value, col.type)


def _page(rows: list, limit: int, at_key: str) -> Page:
    more = len(rows) > limit
    rows = rows[:limit]
    nxt = Cursor(rows[-1][at_key], rows[-1]["id"]).encode() if more and rows else None
    return Page(rows, nxt)


class CatalogReads:
    """The UI's read side of the catalog; one method per page.

    Each read takes a connection of its own, unless the reader is :meth:`held`: a request's reads then
    share one (a page of verdicts reads decisions, their attempts' first rows and summaries: one pool
    checkout and one transaction instead of three, each a round trip on PostgreSQL).
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        self._holding = False
        self._held: Connection | None = None

    @contextmanager
    def held(self) -> Iterator[CatalogReads]:
        """Every read inside shares one connection, opened at the first read, closed at the end."""
        self._holding = True
        try:
            yield self
        finally:
            self._holding = False
            held, self._held = self._held, None
            if held is not None:
                held.close()

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """The held connection, or a connection for this read alone."""
        if not self._holding:
            with self.engine.connect() as conn:
                yield conn
            return
        if self._held is None:
            self._held = self.engine.connect()
        yield self._held

    def decisions(self, f: DecisionFilter, cursor: Cursor | None, limit: int, scope: DagScope = EVERY_DAG) -> Page:
        d = gate_decision.c
        stmt = scope.where(select(gate_decision), d.dag_id)
        for col, value in (
            (d.dag_id, f.dag_id),
            (d.run_id, f.run_id),
            (d.map_index, f.map_index),
            (d.result, f.result),
        ):
            if value is not None:
                stmt = stmt.where(col == value)
        if f.task_id is not None:
            stmt = stmt.where(d.task_id.in_([t for t in (f.task_id, f.gate_task_id) if t is not None]))
        stmt = _in_sets(stmt, ((d.dag_id, f.dag_ids), (d.task_id, f.task_ids)))
        if f.run_part is not None:
            stmt = stmt.where(func.lower(d.run_id).contains(f.run_part.lower(), autoescape=True))
        if f.since is not None:
            stmt = stmt.where(d.decided_at >= f.since)
        if f.until is not None:
            stmt = stmt.where(d.decided_at < f.until)
        stmt = _newest_first(stmt, d.decided_at, d.id, cursor, limit)
        with self.connect() as conn:
            rows = row_dicts(conn.execute(stmt))
        return _page(rows, limit, "decided_at")

    def consumption(self, f: ConsumptionFilter, cursor: Cursor | None, limit: int, scope: DagScope = EVERY_DAG) -> Page:
        """Consumption records with the upstream slot's current revision, each flagged stale or not by the
        same rule as ``airflow-leastaction stale`` (:func:`~airflow_leastaction.catalog.staleness.is_stale`).

        The page's rows are chosen first (filtered, newest first, one more than ``limit``), and only they are
        joined and checked for staleness: SQLite computes a select list before sorting, so a stale flag in
        the choosing query was checked for every matching row, not the page's (a busy upstream's hundred
        thousand consumers took minutes where its index was missing)."""
        c = consumption.c
        up = task_run.alias("up")
        ut = task.alias("ut")
        current = up.c.output_revision
        stale = is_stale(up)
        chosen = select(c.id, c.consumed_at)
        if f.stale_only:  # the choice itself needs the current revision
            chosen = chosen.select_from(consumption.outerjoin(up, consumed_slot(up))).where(stale)
            if scope.dag_ids is not None:  # an unreadable upstream's staleness is withheld: not chosen by it
                readable = scope.where(select(task.c.id), task.c.dag_id, no_dag_readable=True)
                chosen = chosen.where(c.upstream_task_pk.in_(readable))
        chosen = scope.where(chosen, c.dag_id)
        for col, value in ((c.dag_id, f.dag_id), (c.task_id, f.task_id), (c.upstream_task_pk, f.upstream_task_pk)):
            if value is not None:
                chosen = chosen.where(col == value)
        chosen = _in_sets(
            chosen, ((c.dag_id, f.dag_ids), (c.task_id, f.task_ids), (c.upstream_task_pk, f.upstream_task_pks))
        )
        page = _newest_first(chosen, c.consumed_at, c.id, cursor, limit).subquery("page")
        stmt = (
            select(
                consumption,
                current.label("current_revision"),
                ut.c.name.label("upstream_name"),
                ut.c.project.label("upstream_project"),
                ut.c.dag_id.label("upstream_dag_id"),
                case((stale, True), else_=False).label("stale"),
            )
            .select_from(
                page.join(consumption, c.id == page.c.id)
                .outerjoin(up, consumed_slot(up))
                .outerjoin(ut, ut.c.id == c.upstream_task_pk)
            )
            .order_by(page.c.consumed_at.desc(), page.c.id.desc())
        )
        with self.connect() as conn:
            rows = [dict(r) for r in conn.execute(stmt).mappings()]
        for row in rows:
            row["stale"] = bool(row["stale"])
            row["withheld"] = not scope.allows(row.pop("upstream_dag_id"))
            if row["withheld"]:
                row.update(WITHHELD_UPSTREAM)
        return _page(rows, limit, "consumed_at")

    def catalog(self, f: CatalogFilter, after: str | None, limit: int, scope: DagScope = EVERY_DAG) -> Page:
        """Tasks ordered by ``(name, id)``, each with its most recent slot records."""
        t = task.c
        stmt = scope.where(select(task), t.dag_id, no_dag_readable=True)
        if f.search:
            stmt = stmt.where(func.lower(t.name).contains(f.search.lower(), autoescape=True))
        for col, value in ((t.project, f.project), (t.state, f.state), (t.source, f.source), (t.dag_id, f.dag_id)):
            if value:
                stmt = stmt.where(col == value)
        if after:
            name, _, pk = after.rpartition("|")
            if not pk.isdigit() or len(pk) > 19 or int(pk) > MAX_ID:
                raise BadCursorError(after)
            stmt = stmt.where(tuple_(t.name, t.id) > tuple_(name, int(pk)))
        stmt = stmt.order_by(t.name, t.id).limit(limit + 1)
        with self.connect() as conn:
            tasks = [dict(r) for r in conn.execute(stmt).mappings()]
            more = len(tasks) > limit
            tasks = tasks[:limit]
            slots = self._recent_slots(conn, [r["id"] for r in tasks])
            parents = {r["id"]: parse_parents(r["parents"]) for r in tasks}
            hidden = _unreadable(conn, {p for ps in parents.values() for p in ps}, scope)
            assets = bridges_of(conn, [TaskIdentity.from_row(r) for r in tasks])
        rows = [
            CatalogRow(
                r,
                _granularity(r["cron"]),
                [p for p in parents[r["id"]] if p not in hidden],
                slots.get(r["id"], []),
                withheld=sum(p in hidden for p in parents[r["id"]]),
                assets=assets.get(TaskIdentity.from_row(r), []),
            )
            for r in tasks
        ]
        nxt = f"{tasks[-1]['name']}|{tasks[-1]['id']}" if more and tasks else None
        return Page(rows, nxt)

    def _recent_slots(self, conn, task_pks: list[int]) -> dict[int, list[dict]]:
        if not task_pks:
            return {}
        r = task_run.c
        ranked = (
            select(task_run, func.row_number().over(partition_by=r.task_pk, order_by=r.slot.desc()).label("rn"))
            .where(r.task_pk.in_(task_pks))
            .subquery()
        )
        stmt = select(ranked).where(ranked.c.rn <= RECENT_SLOTS).order_by(ranked.c.task_pk, ranked.c.slot.desc())
        out: dict[int, list[dict]] = {}
        for row in conn.execute(stmt).mappings():
            out.setdefault(row["task_pk"], []).append(dict(row))
        return out

    def attempt_rows(self, attempts, scope: DagScope = EVERY_DAG, limit: int = ROWS_PER_ATTEMPT) -> list[dict]:
        """The decisions of the given attempts (:class:`~airflow_leastaction.catalog.audit.AttemptKey`), the
        first ``limit`` of each, each with the Airflow run, DAG and task of the upstream slot it selected
        (``upstream_run_id``...; None for an upstream outside Airflow or of a DAG outside ``scope``). One
        statement, one index range of ``limit`` rows per attempt: an attempt may have judged thousands."""
        with self.connect() as conn:
            rows = first_decisions(conn, attempt_keys(attempts), limit)
        for row in rows:
            if row["upstream_dag_id"] is None or not scope.allows(row["upstream_dag_id"]):
                row.update(upstream_run_id=None, upstream_dag_id=None, upstream_task_id=None)
        return rows

    def attempt_tallies(self, attempts) -> dict:
        """Per attempt: how many decisions it recorded, how many SATISFIED and BYPASSED, when, and how many
        MISSING (its summary, written with its decisions)."""
        keys = attempt_keys(attempts)
        if not keys:
            return {}
        with self.connect() as conn:
            return summaries(conn, keys)

    def deadline_warnings(self, gates) -> dict:
        """Per gate task instance ((DAG, run, task, map index)), its early warnings, newest deadline first."""
        wanted = list(dict.fromkeys(gates))
        if not wanted:
            return {}
        with self.connect() as conn:
            return warnings_of(conn, wanted)

    def task_by_pk(self, pk: int) -> dict | None:
        with self.connect() as conn:
            row = conn.execute(select(task).where(task.c.id == pk)).mappings().first()
        return dict(row) if row else None

    def tasks_of_dag(self, dag_id: str) -> list[dict]:
        with self.connect() as conn:
            rows = conn.execute(select(task).where(task.c.dag_id == dag_id).order_by(task.c.task_id, task.c.id))
            return [dict(r) for r in rows.mappings()]

    def degraded_runs(self, dag_id: str, limit: int = 20) -> list[dict]:
        """The DAG's latest runs admitted degraded at a fallback's deadline, newest first: per (run, gate),
        what they ran without, and their re-run on late arrival if they have one."""
        d, la = gate_decision.c, late_arrival.c
        # MISSING decisions are few (only a degraded admission records them): walk the result index's range
        # and pick the DAG's. The DAG's own (time, id) index, which SQLite chose, holds every decision of a
        # busy DAG, and with none MISSING it read them all (140 ms at 100,000); ``|| ''`` keeps it out.
        missing = (
            select(d.run_id, d.task_id, d.downstream_slot, d.dependency, d.decided_at)
            .where(d.result == DecisionResult.MISSING.value, d.dag_id.concat("") == dag_id)
            .order_by(d.decided_at.desc(), d.id.desc())
            .limit(limit * 10)
        )
        runs: dict[tuple[str, str], dict] = {}
        with self.connect() as conn:
            for r in conn.execute(missing).mappings():
                run = runs.setdefault((r["run_id"], r["task_id"]), {**r, "without": []})
                run["without"].append(r["dependency"])
            shown = list(runs.values())[:limit]
            if not shown:
                return []
            reruns = conn.execute(
                select(la.run_id, la.gate_task_id, la.state, la.detail).where(
                    la.dag_id == dag_id, la.run_id.in_([r["run_id"] for r in shown])
                )
            ).mappings()
            by_run = {(r["run_id"], r["gate_task_id"]): dict(r) for r in reruns}
        for run in shown:
            run["rerun"] = by_run.get((run["run_id"], run["task_id"]))
        return shown


def _granularity(cron: str | None) -> str | None:
    if cron is None:
        return None
    try:
        return cron_granularity(cron)
    except ValueError:
        return None


__all__ = [
    "CatalogReads",
    "Cursor",
    "Page",
    "DagScope",
    "EVERY_DAG",
    "DecisionFilter",
    "ConsumptionFilter",
    "CatalogFilter",
    "BadCursorError",
]
