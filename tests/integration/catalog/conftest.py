"""Fixtures of the catalog's scenario tests."""

from __future__ import annotations

import pytest

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.migrate import upgrade


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_before(request):
    """A catalog on each backend, migrated only up to the test module's ``BEFORE`` revision: a migration
    test upgrades it from there."""
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    engine = get_engine(url, migrate=False)
    upgrade(engine, request.module.BEFORE)
    return engine
