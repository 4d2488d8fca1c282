"""How the pages show times and states: one format, Airflow's default timezone named, one tone per state."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.www.links import AirflowLinks, TaskInstanceRef
from airflow_leastaction.www.present import TONES, Clock, ago, tone, worker_name

UTC = dt.UTC
AMS = Clock.named("Europe/Amsterdam")


class TestClock:
    def test_an_instant_is_shown_in_the_zone_with_the_zone_named(self):
        at = dt.datetime(2026, 1, 15, 23, 30, tzinfo=UTC)
        assert Clock().when(at) == "2026-01-15 23:30:00 UTC"
        assert AMS.when(at) == "2026-01-16 00:30:00 CET"
        assert AMS.when(dt.datetime(2026, 7, 1, 12, tzinfo=UTC)) == "2026-07-01 14:00:00 CEST"

    def test_nothing_is_an_em_dash(self):
        assert AMS.when(None) == "—"

    def test_a_naive_value_from_the_catalog_is_utc(self):
        assert Clock().when(dt.datetime(2026, 1, 1, 3)) == "2026-01-01 03:00:00 UTC"

    def test_a_form_value_without_offset_is_local_time_in_the_named_zone(self):
        assert AMS.read("2026-01-16T00:30:00") == dt.datetime(2026, 1, 15, 23, 30, tzinfo=UTC)
        assert AMS.read("2026-01-16T00:30:00+00:00") == dt.datetime(2026, 1, 16, 0, 30, tzinfo=UTC)

    def test_a_datetime_field_shows_24_hour_local_time(self):
        assert AMS.input_value(dt.datetime(2026, 1, 15, 15, 5, tzinfo=UTC)) == "2026-01-15 16:05:00"

    @given(st.datetimes(min_value=dt.datetime(1000, 1, 2), max_value=dt.datetime(8999, 12, 30), timezones=st.just(UTC)))
    def test_what_a_form_shows_it_reads_back(self, when):
        when = when.replace(microsecond=0)
        assert AMS.read(AMS.input_value(when)) == when or AMS.local(when).fold  # a repeated DST hour reads as its first

    def test_times_inside_a_reason_take_the_same_format(self):
        reason = "slot 2026-11-24 (day) completed (judged at 2026-11-24T23:00:00+00:00, the run's data interval start)"
        assert AMS.in_text(reason) == (
            "slot 2026-11-24 (day) completed (judged at 2026-11-25 00:00:00 CET, the run's data interval start)"
        )

    def test_an_unknown_zone_name_falls_back_to_utc(self):
        assert Clock.named("Mars/Olympus").name == "UTC"

    def test_durations_read_at_a_glance(self):
        now = dt.datetime(2026, 1, 1, 12, tzinfo=UTC)
        assert ago(now - dt.timedelta(minutes=3), now) == "3 min ago"
        assert ago(now + dt.timedelta(hours=2, minutes=5), now) == "in 2 h"
        assert ago(None, now) == ""


class TestTones:
    @pytest.mark.parametrize(
        ("state", "expected"),
        [
            ("success", "success"),
            ("deferred", "deferred"),
            ("error", "failed"),
            ("SATISFIED", "success"),
            ("UNSATISFIED", "upstream_failed"),
            ("admitted", "success"),
            ("waiting", "deferred"),
            ("pending", "queued"),
            (None, "none"),
            ("<script>", "none"),
        ],
    )
    def test_every_state_has_one_of_airflows_tones(self, state, expected):
        assert tone(state) == expected

    @given(st.text())
    def test_any_text_maps_to_a_tone_the_stylesheet_defines(self, text):
        assert tone(text) in TONES


class TestLinks:
    def test_links_follow_airflow_3_routes_under_the_ui_base(self):
        links = AirflowLinks.under("/airflow/leastaction")
        assert links.dag("a b") == "/airflow/dags/a%20b"
        assert links.run("d", "scheduled__2026-01-01T00:00:00+00:00") == (
            "/airflow/dags/d/runs/scheduled__2026-01-01T00%3A00%3A00%2B00%3A00"
        )
        assert links.task_instance("d", "r", "t", 3) == "/airflow/dags/d/runs/r/tasks/t/mapped/3"
        assert links.log("d", "r", "t", -1, 2) == "/airflow/dags/d/runs/r/tasks/t?try_number=2"
        assert AirflowLinks.under("/leastaction").dag_tab("d") == "/dags/d/plugin/leastaction-dag"

    def test_a_dbt_request_names_its_task_instance(self):
        assert TaskInstanceRef.parse("dbt_ingest|backfill__x|enqueue|-1") == TaskInstanceRef(
            "dbt_ingest", "backfill__x", "enqueue", -1
        )
        assert TaskInstanceRef.parse("finance/enqueue") is None
        assert TaskInstanceRef.parse("a|b|c|x") is None

    def test_a_drain_workers_name_reads_as_its_try_and_host(self):
        assert worker_name("ti-810cb6969c69f1a1:try1:vm:13644:4ae0e9e0") == "try 1 on vm (pid 13644)"
        assert worker_name("worker-1") == "worker-1"
        assert worker_name(None) == "—"
