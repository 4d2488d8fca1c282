"""Fixtures of the asset tests that run DAGs: the catalog the runs write to."""

from __future__ import annotations

import pytest


@pytest.fixture
def catalog(store, catalog_url, use_catalog, tmp_path, monkeypatch):
    """The catalog the runs write to, on each backend (SQLite and PostgreSQL), with a spool of its own."""
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    use_catalog(catalog_url)
    return store
