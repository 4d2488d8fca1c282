"""The spool never loses an outcome: whatever a replay meets (an unreadable file, a failure half-way, a
kill), every spooled outcome is applied, put back for the next replay, or quarantined with its reason.

Real SQLite and PostgreSQL catalogs; the killed replay is a real ``airflow-leastaction catalog replay``
process, killed with SIGKILL while it waits on a lock the test holds, or a real replay process killed at
each of the replay's crash points (:mod:`~airflow_leastaction.crash_points`) and replayed again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.outcomes import SlotEvent, deliver, replay, spool
from airflow_leastaction.catalog.schema import task, task_run
from airflow_leastaction.catalog.spool_check import quarantined
from airflow_leastaction.catalog.spool_files import append
from airflow_leastaction.catalog.store import CatalogStore, TaskMeta
from airflow_leastaction.cli import main as cli
from airflow_leastaction.crash_points import declared
from airflow_leastaction.identity import TaskIdentity
from tests.helpers.crash import run_to_end, run_until_crash

UTC = dt.UTC
SLOT = dt.datetime(2026, 11, 23, tzinfo=UTC)
DAILY = TaskMeta(cron="0 0 * * *", source="external")
ROOT = Path(__file__).resolve().parents[3]


def ident(n: int) -> TaskIdentity:
    return TaskIdentity(f"load_{n:03d}", "spool")


def success(n: int) -> SlotEvent:
    at = dt.datetime(2026, 11, 24, tzinfo=UTC) + dt.timedelta(minutes=n)
    return SlotEvent(state="success", identity=ident(n), slot=SLOT, at=at, meta=DAILY, run_id=f"run-{n}")


def applied(store: CatalogStore) -> list[str]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.select(task.c.name, task_run.c.output_revision).join(task_run, task_run.c.task_pk == task.c.id)
        ).all()
    assert all(revision == 1 for _, revision in rows), rows  # applied once each: never twice, never a repair
    return sorted(name for name, _ in rows)


def files(directory: Path) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    for path in sorted(directory.iterdir()):
        kinds.setdefault(path.name.split("-")[0], []).append(path.name)
    return kinds


@pytest.fixture
def spool_path(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path / "spool"


class TestAnUnreadableSpoolFile:
    def test_a_line_that_is_not_utf8_is_quarantined_alone_and_the_other_files_replayed(self, store, spool_path):
        spool(success(1), spool_path)
        bad = spool_path / "pending-999999.jsonl"
        bad.write_bytes(success(2).to_json().encode() + b"\n" + b'{"state": "succ\xff\xfe"}\n')
        (spool_path / "pending-999998.jsonl").write_text(success(3).to_json() + "\n")
        notes: list[str] = []
        assert replay(store, spool_path, notes) == 3
        assert applied(store) == ["load_001", "load_002", "load_003"]
        [held] = quarantined(spool_path)
        assert "not UTF-8" in held["reason"] and "\\xff\\xfe" in held["outcome"]
        assert len(notes) == 1 and "not UTF-8" in notes[0]
        assert set(files(spool_path)) == {"quarantine"}

    def test_a_spool_entry_that_cannot_be_read_is_set_aside_alone_and_reported(self, store, spool_path):
        spool(success(1), spool_path)
        (spool_path / "pending-4242.jsonl").mkdir()  # not a file: nothing can be read from it
        (spool_path / "pending-4243.jsonl").write_text(success(2).to_json() + "\n")
        notes: list[str] = []
        assert replay(store, spool_path, notes) == 2
        assert applied(store) == ["load_001", "load_002"]
        assert len(notes) == 1 and "pending-4242.jsonl" in notes[0]
        [held] = quarantined(spool_path)
        assert "cannot be read" in held["reason"] and "pending-4242.jsonl" in held["reason"]
        assert set(files(spool_path)) == {"quarantine"}


class TestAReplayThatFailsHalfWay:
    def test_every_outcome_not_applied_goes_back_to_the_spool_whatever_stopped_the_replay(
        self, catalog_url, spool_path
    ):
        class Interrupted(CatalogStore):
            """A replay stopped by the user (Ctrl-C) after its second outcome."""

            calls = 0

            def record_success(self, *args, **kwargs):
                Interrupted.calls += 1
                if Interrupted.calls == 3:
                    raise KeyboardInterrupt
                return super().record_success(*args, **kwargs)

        for n in range(1, 6):
            spool(success(n), spool_path)
        with pytest.raises(KeyboardInterrupt):
            replay(Interrupted(get_engine(catalog_url)), spool_path)
        assert set(files(spool_path)) == {"pending"}
        store = CatalogStore(get_engine(catalog_url))
        assert replay(store, spool_path) == 3
        assert applied(store) == [f"load_{n:03d}" for n in range(1, 6)]
        assert not spool_path.exists() or list(spool_path.iterdir()) == []


class TestDeliverWithABacklog:
    def test_an_unreadable_backlog_never_quarantines_the_new_outcome(self, store, spool_path):
        spool_path.mkdir()
        (spool_path / "pending-77.jsonl").write_bytes(
            b"\xff\xfe not an outcome\n" + success(1).to_json().encode() + b"\n"
        )
        outcome = deliver(success(2), store_factory=lambda: store)
        assert outcome is not None and outcome.applied
        assert applied(store) == ["load_001", "load_002"]
        [held] = quarantined(spool_path)
        assert "not UTF-8" in held["reason"] and "load_002" not in held["outcome"]

    def test_a_backlog_the_catalog_cannot_take_now_leaves_the_new_outcome_spooled_not_quarantined(
        self, spool_path, tmp_path
    ):
        spool(success(1), spool_path)
        # A catalog whose file cannot be opened: every statement fails as an outage does.
        (tmp_path / "missing").mkdir()
        down = CatalogStore(sa.create_engine(f"sqlite:///{tmp_path}/missing/no/such/dir/catalog.db"))
        assert deliver(success(2), store_factory=lambda: down) is None
        assert quarantined(spool_path) == []
        spooled = [SlotEvent.from_json(line).identity for f in spool_path.glob("pending-*") for line in f.open()]
        assert sorted(i.name for i in spooled) == ["load_001", "load_002"]


class TestAKilledReplay:
    def test_a_replay_killed_half_way_loses_nothing_the_next_replay_takes_its_claimed_file_back(
        self, store, catalog_url, use_catalog, spool_path
    ):
        use_catalog(catalog_url)
        for n in range(1, 41):
            spool(success(n), spool_path)
        postgres = store.engine.dialect.name == "postgresql"
        # Hold what the replay must write: on PostgreSQL the 21st task's row (20 outcomes apply first),
        # on SQLite the write lock (the replay has claimed its file and waits to apply the first).
        store.register_task(ident(21), DAILY)
        blocker = _hold_row(store, ident(21)) if postgres else _hold_sqlite(catalog_url)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen(
            [sys.executable, "-m", "airflow_leastaction.cli", "catalog", "replay", "--spool-dir", str(spool_path)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_until(lambda: set(files(spool_path)) == {"replaying"}, proc)
            if postgres:
                _wait_until(lambda: len(applied(store)) == 20, proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
            blocker.close()
        done_before = applied(store)
        assert len(done_before) == (20 if postgres else 0)
        assert set(files(spool_path)) == {"replaying"}  # what the killed replay had claimed
        assert cli(["catalog", "replay", "--spool-dir", str(spool_path)]) == 0
        assert applied(store) == [f"load_{n:03d}" for n in range(1, 41)]
        assert list(spool_path.iterdir()) == []


def _hold_row(store: CatalogStore, identity: TaskIdentity):
    conn = store.engine.connect()
    conn.begin()
    conn.execute(sa.select(task.c.id).where(task.c.name == identity.name).with_for_update())
    return conn


def _hold_sqlite(url: str):
    conn = sqlite3.connect(sa.engine.make_url(url).database, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def _wait_until(condition, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"the replay ended early: {proc.stderr.read().decode()}"
        assert time.monotonic() < deadline, "the replay never got there"
        time.sleep(0.05)


class TestReplayCommand:
    def test_a_spool_dir_that_does_not_exist_is_an_error_not_zero_replayed(
        self, catalog_url, use_catalog, tmp_path, capsys
    ):
        use_catalog(catalog_url)
        assert cli(["catalog", "replay", "--spool-dir", str(tmp_path / "nowhere")]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and "nowhere" in err[0]

    def test_a_spool_dir_that_is_a_file_is_an_error(self, catalog_url, use_catalog, tmp_path, capsys):
        use_catalog(catalog_url)
        (tmp_path / "a-file").write_text("")
        assert cli(["catalog", "replay", "--spool-dir", str(tmp_path / "a-file")]) == 2
        out = capsys.readouterr()
        assert out.err.startswith("error: ") and len(out.err.splitlines()) == 1 and "a-file" in out.err

    def test_a_torn_line_in_a_quarantine_file_is_reported_not_a_traceback(
        self, store, catalog_url, use_catalog, spool_path, capsys
    ):
        use_catalog(catalog_url)
        spool_path.mkdir()
        record = {"reason": "seeded", "quarantined_at": "2026-11-24T00:00:00+00:00", "outcome": "{}"}
        (spool_path / "quarantine-1.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(record)[:25] + "\n")
        held = quarantined(spool_path)
        assert [h["reason"] for h in held][0] == "seeded"
        assert len(held) == 2 and "line 2" in held[1]["reason"] and "cannot be read" in held[1]["reason"]
        assert cli(["catalog", "replay", "--spool-dir", str(spool_path)]) == 0
        assert "2 quarantined outcome(s)" in capsys.readouterr().out


#: A replay in a child process; ``STOP_AT`` > 0 makes its catalog go away at that outcome (an outage: the
#: rest is put back in the spool), as a server restarting half-way through would.
REPLAY_CHILD = """
import sqlalchemy as sa
from pathlib import Path
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.outcomes import replay
from airflow_leastaction.catalog.store import CatalogStore

class Restarting(CatalogStore):
    calls = 0

    def record_success(self, *args, **kwargs):
        Restarting.calls += 1
        if Restarting.calls == STOP_AT:
            raise sa.exc.OperationalError("INSERT", {}, ConnectionRefusedError("the server is restarting"))
        return super().record_success(*args, **kwargs)

try:
    print("applied", replay(Restarting(get_engine(URL)), Path(SPOOL)))
except sa.exc.OperationalError as exc:
    print("stopped", exc.orig)
"""

#: (crash point, the pass it kills on, the outcome at which the catalog goes away: 0 never).
KILLS = [
    ("spool.after_claim_file", 2, 0),  # two of three files claimed
    ("spool.after_apply", 1, 0),  # the first outcome applied
    ("spool.after_apply", 7, 0),  # half applied, a file and a half of them
    ("spool.after_apply_all", 1, 0),  # all applied, no file removed
    ("spool.after_release_file", 1, 0),  # one replayed file removed, two left
    ("spool.after_requeue", 1, 5),  # the catalog went away at the 5th: the rest put back, files still held
]


def spool_in_three_files(spool_path: Path) -> None:
    for first in (1, 5, 9):
        append(spool_path, [success(n).to_json() for n in range(first, first + 4)], name=f"pending-{first}.jsonl")


def replay_child(url: str, spool_path: Path, stop_at: int = 0) -> str:
    return f"URL = {url!r}\nSPOOL = {str(spool_path)!r}\nSTOP_AT = {stop_at}\n" + REPLAY_CHILD


@pytest.mark.crash_points
class TestAReplayKilledAtEachStep:
    @pytest.mark.parametrize("point, nth, stop_at", KILLS, ids=[f"{p}:{n}" for p, n, _ in KILLS])
    def test_every_outcome_is_applied_exactly_once_after_a_kill_and_a_restarted_replay(
        self, store, catalog_url, spool_path, point, nth, stop_at
    ):
        spool_in_three_files(spool_path)
        run_until_crash(replay_child(catalog_url, spool_path, stop_at), point, nth=nth, warm=True)
        assert set(files(spool_path)) <= {"pending", "replaying"}  # nothing lost with the process
        out = run_to_end(replay_child(catalog_url, spool_path), warm=True)
        assert out.startswith("applied"), out
        assert applied(store) == [f"load_{n:03d}" for n in range(1, 13)]  # each once: revision 1, none lost
        assert list(spool_path.iterdir()) == []

    def test_every_step_boundary_of_a_replay_is_a_crash_point_this_test_kills_at(self):
        import airflow_leastaction.catalog.outcomes  # noqa: F401  (declares the replay's points)

        assert set(declared("spool.")) == {point for point, _, _ in KILLS}
