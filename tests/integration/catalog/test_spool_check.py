"""A poisoned spool: outcomes that can never be applied are quarantined, and later outcomes still apply."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa

from airflow_leastaction.catalog.outcomes import SlotEvent, apply, deliver, replay, spool
from airflow_leastaction.catalog.spool_check import can_never_apply, check_outcome, quarantined
from airflow_leastaction.cli import main as cli
from airflow_leastaction.exceptions import UnappliableOutcomeError
from airflow_leastaction.identity import TaskIdentity

UTC = dt.UTC
SLOT = dt.datetime(2026, 11, 23, tzinfo=UTC)
GOOD = TaskIdentity("orders.load", "airflow")
TOO_LONG = TaskIdentity("x" * 251, "airflow")


def event(
    identity: TaskIdentity, state: str = "success", minutes: int = 0, run_id: str = "scheduled__1", **kwargs
) -> SlotEvent:
    at = dt.datetime(2026, 11, 24, tzinfo=UTC) + dt.timedelta(minutes=minutes)
    return SlotEvent(state=state, identity=identity, slot=SLOT, at=at, run_id=run_id, **kwargs)


@pytest.fixture
def spool_path(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path / "spool"


def pending(directory) -> list[str]:
    return [line for f in directory.glob("pending-*.jsonl") for line in f.read_text().splitlines()]


class TestPoisonedSpool:
    def test_one_unappliable_spooled_outcome_does_not_hold_back_later_outcomes(self, store, spool_path):
        spool(event(TOO_LONG, minutes=0))  # spooled by a version that did not check, or by hand
        spool(event(GOOD, "running", minutes=1))
        outcome = deliver(event(GOOD, "success", minutes=2), store_factory=lambda: store)
        assert outcome is not None and outcome.applied
        assert store.get_task(GOOD)["state"] == "success"
        assert pending(spool_path) == []
        [held] = quarantined(spool_path)
        assert "task name is 251 characters, the catalog holds 250" in held["reason"]
        assert json.loads(held["outcome"])["identity"]["name"] == TOO_LONG.name

    def test_an_outcome_that_can_never_be_applied_is_quarantined_not_spooled(self, spool_path, caplog):
        def catalog_down():
            raise sa.exc.OperationalError("connect", {}, Exception("connection refused"))

        assert deliver(event(TOO_LONG), store_factory=catalog_down) is None
        assert pending(spool_path) == []
        assert len(quarantined(spool_path)) == 1
        assert "outcome can never be applied to the catalog (outcome of airflow/xxx" in caplog.text
        assert deliver(event(GOOD), store_factory=catalog_down) is None  # a real outage still spools
        assert len(pending(spool_path)) == 1

    def test_a_spool_line_cut_short_is_quarantined_and_the_rest_replayed(self, store, spool_path):
        spool(event(GOOD, "running", minutes=0))
        with open(next(spool_path.glob("pending-*.jsonl")), "a", encoding="utf-8") as fh:
            fh.write(event(GOOD, "success", minutes=1).to_json()[:40] + "\n")
        spool(event(GOOD, "failed", minutes=2))
        notes: list[str] = []
        assert replay(store, spool_path, notes) == 2
        assert store.get_task(GOOD)["state"] == "failed"
        assert len(notes) == 1 and len(quarantined(spool_path)) == 1

    def test_catalog_replay_says_what_it_quarantined_and_exits_1(self, catalog_url, use_catalog, spool_path, capsys):
        use_catalog(catalog_url)
        spool(event(TOO_LONG, minutes=0))
        spool(event(GOOD, minutes=1))
        assert cli(["catalog", "replay"]) == 1
        out = capsys.readouterr().out
        assert "replayed 1 spooled outcome(s)" in out
        assert f"quarantined (can never be applied): outcome of airflow/{TOO_LONG.name}" in out
        assert "1 quarantined outcome(s) in" in out
        assert cli(["catalog", "replay"]) == 0  # nothing new set aside; the held one is still mentioned
        assert "1 quarantined outcome(s) in" in capsys.readouterr().out


class TestWhatCanNeverApply:
    @pytest.mark.parametrize(
        "change, why",
        [
            ({"identity": TaskIdentity("t", "p", partition="9" * 251)}, "task partition is 251 characters"),
            ({"state": "x" * 21}, "state is 21 characters"),
            ({"run_id": "r" * 251}, "run_id is 251 characters"),
            ({"rows_written": 2**63}, "rows_written 9223372036854775808 is not a 64-bit whole number"),
            ({"slot": dt.datetime(2026, 11, 23)}, "slot 2026-11-23 00:00:00 is not a time with an offset"),
        ],
    )
    def test_an_outcome_the_catalog_would_refuse_is_named_with_its_reason(self, change, why):
        bad = event(GOOD)
        for key, value in change.items():
            setattr(bad, key, value)
        with pytest.raises(UnappliableOutcomeError, match=why):
            check_outcome(bad)

    def test_an_outcome_at_the_column_limits_is_accepted(self):
        check_outcome(event(TaskIdentity("n" * 250, "p" * 250, "a" * 250, "9" * 250), run_id="r" * 250))

    @pytest.mark.postgres
    def test_postgresql_refusing_a_value_can_never_apply_but_a_lost_connection_can(self, pg_url):
        from airflow_leastaction.catalog.engine import get_engine
        from airflow_leastaction.catalog.store import CatalogStore

        with pytest.raises(sa.exc.DataError) as refused:
            apply(CatalogStore(get_engine(pg_url, migrate=True)), event(TOO_LONG))
        assert can_never_apply(refused.value)
        down = sa.create_engine(pg_url.replace(":55432", ":1").rsplit("/", 1)[0] + "/x")
        with pytest.raises(sa.exc.OperationalError) as unreachable:
            down.connect()
        assert not can_never_apply(unreachable.value)
