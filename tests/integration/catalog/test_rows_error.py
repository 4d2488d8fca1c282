"""Why a slot's rows written are unknown (``la_task_run.rows_error``), on real SQLite and PostgreSQL: a
success recorded with its read's error keeps it, through the spool too; a later success of the slot with a
readable count clears it; the slot reads the gates judge by carry it."""

from __future__ import annotations

import datetime as dt
import json

from airflow_leastaction.catalog.outcomes import SlotEvent, apply, replay, spool
from airflow_leastaction.catalog.spool_files import append
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
LOAD = TaskIdentity("sales.load", "airflow")
SLOT = dt.datetime(2026, 11, 3, tzinfo=UTC)
ERROR = "ConnectionError: the API server cannot be reached"


def success(attempt: int, minute: int, **kw) -> SlotEvent:
    return SlotEvent(
        state="success",
        identity=LOAD,
        slot=SLOT,
        at=dt.datetime(2026, 11, 4, 1, minute, tzinfo=UTC),
        meta=TaskMeta(cron="0 0 * * *"),
        run_id="scheduled__2026-11-03",
        attempt=attempt,
        **kw,
    )


def rows_of(store) -> list[tuple]:
    """(rows written, rows error) of the slot, as each read a gate judges by has it."""
    _, slots = store.snapshot([(LOAD, SLOT)])
    latest = store.runs.latest_runs([LOAD])[LOAD].latest_finished
    record = store.runs.slot_records([(LOAD, SLOT)])[(LOAD, SLOT)]
    return [(s.rows_written, s.rows_error) for s in slots] + [(r.rows_written, r.rows_error) for r in (latest, record)]


def test_a_success_whose_rows_could_not_be_read_keeps_the_error_in_every_slot_read(store):
    apply(store, success(1, 5, rows_error=ERROR))
    assert rows_of(store) == [(None, ERROR)] * 3


def test_a_rerun_of_the_slot_with_a_readable_count_clears_the_error(store):
    apply(store, success(1, 5, rows_error=ERROR))
    apply(store, success(2, 9, rows_written=4))
    assert rows_of(store) == [(4, None)] * 3


def test_a_count_and_an_error_together_keep_the_count_only(store):
    apply(store, success(1, 5, rows_written=2, rows_error=ERROR))
    assert rows_of(store) == [(2, None)] * 3


def test_a_spooled_success_keeps_why_its_rows_are_unknown_through_a_replay(store, tmp_path):
    spool(success(1, 5, rows_error=ERROR), tmp_path)
    [line] = [p.read_text().strip() for p in tmp_path.glob("*.jsonl")]
    assert SlotEvent.from_json(line).rows_error == ERROR
    assert replay(store, tmp_path) == 1
    assert rows_of(store) == [(None, ERROR)] * 3


def test_a_spool_line_written_before_the_field_existed_still_reads_and_applies(store, tmp_path):
    data = json.loads(success(1, 5, rows_written=6).to_json())
    del data["rows_error"]
    append(tmp_path, [json.dumps(data)])  # as the release before spooled it
    assert SlotEvent.from_json(json.dumps(data)).rows_error is None
    assert replay(store, tmp_path) == 1
    assert rows_of(store) == [(6, None)] * 3
