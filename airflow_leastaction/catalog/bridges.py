"""The catalog's side of the asset bridges: which catalog task each deployment publishes to which asset,
the watchers' cursors as of the last committed event, and the completed slot records a watcher reads.

Not a :class:`~airflow_leastaction.catalog.store.CatalogStore`: it holds its own transactions and reads.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from airflow_leastaction.catalog.schema import asset_bridge, change_counter, in_chunks, task_run, utcnow
from airflow_leastaction.catalog.transactions import Transactions
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.triggers.wire import Cursor


class Completion(NamedTuple):
    """A completed slot record as a watcher emits it, in cursor order (``seq``, ``slot``)."""

    seq: int
    slot: dt.datetime
    revision: int
    rows_written: int | None
    run_id: str | None


class Bridge(NamedTuple):
    """One published asset: the deployment, the asset, the catalog task, the cursor of its last event."""

    deployment: str
    asset_name: str
    asset_uri: str
    identity: TaskIdentity
    key_format: str
    cursor: Cursor | None
    last_revision: int | None
    last_emitted_at: dt.datetime | None


def completions_by_pk(conn: Connection, floors: Mapping[int, int]) -> dict[int, list[Completion]]:
    """Per task pk, its completed slot records written at or after change ``floors[pk]``, in cursor order:
    one statement for any number of tasks."""
    out: dict[int, list[Completion]] = {pk: [] for pk in floors}
    if not floors:
        return out
    c = task_run.c
    terms = [and_(c.task_pk == pk, c.change_seq >= floor) for pk, floor in floors.items()]
    query = (
        select(c.task_pk, c.change_seq, c.slot, c.output_revision, c.rows_written, c.run_id)
        .where(or_(*terms), c.state == "success", c.output_revision > 0)
        .order_by(c.task_pk, c.change_seq, c.slot)
    )
    for row in conn.execute(query):
        out[row.task_pk].append(Completion(row.change_seq, row.slot, row.output_revision, row.rows_written, row.run_id))
    return out


class AssetBridges:
    """Registering bridges and moving their cursors; reading them for the UI."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.transactions = Transactions(engine)

    def register(
        self,
        deployment: str,
        asset_name: str,
        asset_uri: str,
        identity: TaskIdentity,
        key_format: str,
        *,
        from_start: bool = False,
    ) -> Cursor:
        """Record that ``deployment`` publishes ``identity`` to the asset (again: its task and key format are
        brought up to date) and return the bridge's cursor. A new bridge starts at the change counter's value
        now (what completes from then on is published), or at 0 with ``from_start`` (every completed slot)."""
        values = {**identity.as_dict(), "asset_uri": asset_uri, "key_format": key_format}
        for attempt in (1, 2):
            try:
                with self.transactions.write() as conn:
                    return self._register(conn, deployment, asset_name, values, from_start)
            except IntegrityError:  # a watcher of another triggerer registered it at the same instant
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _register(conn: Connection, deployment: str, asset_name: str, values: dict, from_start: bool) -> Cursor:
        row = conn.execute(select(asset_bridge).where(*_bridge_clause(deployment, asset_name))).first()
        cursor = _cursor(row) if row is not None else None
        if cursor is None:
            high = conn.execute(select(change_counter.c.seq).where(change_counter.c.id == 1)).scalar_one()
            cursor = Cursor(0 if from_start else high)
        changed = row is None or row.cursor_seq is None or any(getattr(row, k) != v for k, v in values.items())
        if row is None:
            conn.execute(
                insert(asset_bridge).values(
                    deployment=deployment, asset_name=asset_name, created_at=utcnow(), cursor_seq=cursor.seq, **values
                )
            )
        elif changed:
            conn.execute(
                update(asset_bridge).where(asset_bridge.c.id == row.id).values(cursor_seq=cursor.seq, **values)
            )
        return cursor

    def advance(
        self, deployment: str, asset_name: str, cursor: Cursor, revision: int, at: dt.datetime | None = None
    ) -> bool:
        """Move the bridge's cursor to ``cursor`` (never back); False when it was there already."""
        c = asset_bridge.c
        newer = or_(
            c.cursor_seq.is_(None),
            c.cursor_seq < cursor.seq,
            and_(c.cursor_seq == cursor.seq, or_(c.cursor_slot.is_(None), c.cursor_slot < cursor.slot)),
        )
        with self.transactions.write() as conn:
            done = conn.execute(
                update(asset_bridge)
                .where(*_bridge_clause(deployment, asset_name), newer)
                .values(
                    cursor_seq=cursor.seq,
                    cursor_slot=cursor.slot,
                    last_revision=revision,
                    last_emitted_at=at or utcnow(),
                )
            )
            return bool(done.rowcount)

    def bridges(self, identities: Iterable[TaskIdentity] | None = None) -> list[Bridge]:
        """Every bridge (of ``identities`` only, when given), by task then asset."""
        with self.engine.connect() as conn:
            if identities is not None:
                return [b for found in bridges_of(conn, identities).values() for b in found]
            query = select(asset_bridge).order_by(*_BRIDGE_ORDER)
            return [_bridge(r) for r in conn.execute(query)]


def bridges_of(conn: Connection, identities: Iterable[TaskIdentity]) -> dict[TaskIdentity, list[Bridge]]:
    """The bridges of each of ``identities`` that has any, each task's by deployment and asset: one
    statement (one more per :data:`~airflow_leastaction.catalog.schema.IN_CHUNK` names)."""
    wanted = set(identities)
    found: dict[TaskIdentity, list[Bridge]] = {}
    for chunk in in_chunks(sorted({i.name for i in wanted})):
        query = select(asset_bridge).where(asset_bridge.c.name.in_(chunk)).order_by(*_BRIDGE_ORDER)
        for row in conn.execute(query):
            bridge = _bridge(row)
            if bridge.identity in wanted:
                found.setdefault(bridge.identity, []).append(bridge)
    return found


_BRIDGE_ORDER = (asset_bridge.c.name, asset_bridge.c.project, asset_bridge.c.deployment, asset_bridge.c.asset_name)


def _bridge_clause(deployment: str, asset_name: str):
    return asset_bridge.c.deployment == deployment, asset_bridge.c.asset_name == asset_name


def _cursor(row) -> Cursor | None:
    return Cursor(row.cursor_seq, row.cursor_slot) if row.cursor_seq is not None else None


def _bridge(row) -> Bridge:
    return Bridge(
        row.deployment,
        row.asset_name,
        row.asset_uri,
        TaskIdentity.from_row(row),
        row.key_format,
        _cursor(row),
        row.last_revision,
        row.last_emitted_at,
    )
