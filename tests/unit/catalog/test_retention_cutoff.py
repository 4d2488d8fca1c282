"""The cutoff of db prune: a past, aware instant, named when it is not one."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.catalog.retention import (
    check_cutoff,
)
from airflow_leastaction.cli.db import parse_cutoff
from airflow_leastaction.exceptions import InvalidRetentionCutoffError

UTC = dt.UTC


CUTOFF = dt.datetime(2025, 6, 1, tzinfo=UTC)


OLD = dt.datetime(2025, 1, 1, tzinfo=UTC)


NEW = dt.datetime(2025, 7, 1, tzinfo=UTC)


class TestCutoff:
    def test_a_cutoff_in_the_future_is_refused(self):
        with pytest.raises(InvalidRetentionCutoffError, match="after the current time"):
            check_cutoff(NEW, OLD)

    def test_a_cutoff_without_offset_is_refused(self):
        with pytest.raises(InvalidRetentionCutoffError, match="no UTC offset"):
            check_cutoff(dt.datetime(2025, 1, 1), NEW)

    def test_a_bare_date_means_midnight_utc(self):
        assert parse_cutoff("2025-06-01") == CUTOFF
        assert parse_cutoff("2025-06-01T02:00:00+02:00") == CUTOFF

    def test_a_cutoff_that_is_not_a_date_names_the_input(self):
        with pytest.raises(InvalidRetentionCutoffError, match="'yesterday'|yesterday"):
            parse_cutoff("yesterday")
