"""A triggerer reads only the changes of the tasks its gates watch (``changed_tasks`` with ``watched``), on
SQLite and PostgreSQL: one statement on an idle tick, whatever it watches; the changed watched tasks
alone otherwise, through ``ix_la_task_change_seq_name`` (migration 0018)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import event, inspect, select, text

from airflow_leastaction.catalog.changes import changed_tasks
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.migrate import downgrade, upgrade
from airflow_leastaction.catalog.schema import task
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity

BEFORE = "0017_deadline_warnings"
AFTER = "0018_change_names"
DAILY = TaskMeta(cron="0 0 * * *")
DAY = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
COLUMNS = [task.c.id, task.c.name]


def parent(i: int) -> TaskIdentity:
    return TaskIdentity(f"parent_{i}", "sales")


class Statements:
    def __init__(self, engine):
        self.sql: list[str] = []
        event.listen(engine, "before_cursor_execute", self._seen)
        self.engine = engine

    def _seen(self, conn, cursor, statement, *args):
        self.sql.append(statement)

    def close(self):
        event.remove(self.engine, "before_cursor_execute", self._seen)


def tick(store, since, names=(), watched=None):
    asked = []

    def watching():
        asked.append(True)
        return watched

    statements = Statements(store.engine)
    try:
        with store.poll_read() as conn:
            rows, high = changed_tasks(conn, COLUMNS, since, list(names), watching if watched is not None else None)
    finally:
        statements.close()
    selects = [s for s in statements.sql if s.lstrip().upper().startswith("SELECT")]
    return sorted({r.name for r in rows}), high, len(selects), bool(asked)


def test_a_triggerer_reads_the_changes_of_the_tasks_it_watches_and_no_others(store):
    for i in range(6):
        store.record_success(parent(i), DAY, meta=DAILY, run_id="r")
    _, since, _, _ = tick(store, None)
    for i in range(6):  # every parent changes
        store.record_success(parent(i), DAY + dt.timedelta(days=1), meta=DAILY, run_id="r2")
    watched = {parent(1).name, parent(4).name, "never_written"}
    read, _, statements, asked = tick(store, since, watched=watched)
    assert read == [parent(1).name, parent(4).name]
    assert (statements, asked) == (2, True)
    everything, _, _, _ = tick(store, since)  # no watched set: every change, as a reader of all tasks
    assert everything == sorted(parent(i).name for i in range(6))


def test_an_idle_tick_is_one_statement_that_never_asks_what_is_watched(store):
    store.record_success(parent(0), DAY, meta=DAILY, run_id="r")
    _, since, _, _ = tick(store, None)
    read, high, statements, asked = tick(store, since, watched={f"parent_{i}" for i in range(50_000)})
    assert (read, high, statements, asked) == ([], since, 1, False)


def test_a_new_subscriptions_tasks_are_read_whether_they_changed_or_not(store):
    for i in range(3):
        store.record_success(parent(i), DAY, meta=DAILY, run_id="r")
    _, since, _, _ = tick(store, None)
    store.record_success(parent(2), DAY + dt.timedelta(days=1), meta=DAILY, run_id="r2")
    read, _, _, _ = tick(store, since, names=[parent(0).name], watched={parent(2).name})
    assert read == [parent(0).name, parent(2).name]


def test_the_watched_change_read_is_served_by_an_index_on_each_catalog(store):
    """PostgreSQL: the range of ``ix_la_task_change_seq_name`` above the last tick, names filtered in it.
    SQLite: one probe of ``ix_la_task_name_id`` per watched name, never a scan of every task."""
    store.record_success(parent(0), DAY, meta=DAILY, run_id="r")
    query = select(*COLUMNS).where(task.c.change_seq > 5, task.c.name.in_(["parent_0", "parent_1"]))
    with store.engine.connect() as conn:
        compiled = query.compile(conn, compile_kwargs={"literal_binds": True})
        if conn.dialect.name == "sqlite":
            plan = " ".join(str(r[-1]) for r in conn.execute(text(f"EXPLAIN QUERY PLAN {compiled}")))
            assert plan.startswith("SEARCH la_task USING INDEX ix_la_task_name_id"), plan
        else:  # the index must be able to serve it: a tiny table is otherwise scanned whole
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            plan = " ".join(r[0] for r in conn.execute(text(f"EXPLAIN {compiled}")))
            assert "ix_la_task_change_seq_name" in plan, plan


class TestMigration0018:
    def test_upgrading_replaces_the_change_index_with_the_change_and_name_index_and_downgrading_restores_it(
        self, catalog_before
    ):
        def indexes(engine):
            return {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("la_task")}

        before = indexes(catalog_before)
        assert before["ix_la_task_change_seq"] == ["change_seq"]
        upgrade(catalog_before, AFTER)
        after = indexes(get_engine(str(catalog_before.url)))
        assert after["ix_la_task_change_seq_name"] == ["change_seq", "name"]
        assert set(after) - set(before) == {"ix_la_task_change_seq_name"}
        assert set(before) - set(after) == {"ix_la_task_change_seq"}
        downgrade(catalog_before, BEFORE)
        assert indexes(catalog_before) == before
