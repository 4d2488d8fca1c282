"""Where the catalog lives: the connection it is read from, and its URL."""

from __future__ import annotations

import errno
import json
import socket

import pytest
from sqlalchemy import exc as sa_exc

from airflow_leastaction.catalog.engine import dispose_all, is_outage, resolve_url
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.exceptions import CatalogError, ConnectionLookupError, UnknownConnectionError


class TestCatalogConnection:
    def test_the_default_connection_falls_back_to_sqlite_under_airflow_home(self, monkeypatch, tmp_path):
        monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
        monkeypatch.delenv("AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT", raising=False)
        dispose_all()
        assert resolve_url() == f"sqlite:///{tmp_path}/leastaction/catalog.db"
        store = CatalogStore()  # created and migrated on first use
        assert store.get_task.__self__ is store and (tmp_path / "leastaction" / "catalog.db").exists()
        dispose_all()

    def test_a_connection_url_in_extra_is_used(self, monkeypatch, sqlite_url):
        monkeypatch.setenv(
            "AIRFLOW_CONN_MY_CATALOG", json.dumps({"conn_type": "leastaction_catalog", "extra": {"url": sqlite_url}})
        )
        dispose_all()
        assert resolve_url("my_catalog") == sqlite_url

    def test_host_fields_build_a_postgresql_url(self, monkeypatch):
        monkeypatch.setenv(
            "AIRFLOW_CONN_PG_CATALOG",
            json.dumps(
                {
                    "conn_type": "leastaction_catalog",
                    "host": "db.internal",
                    "port": 5433,
                    "login": "la",
                    "password": "s3cret",
                    "schema": "catalog",
                }
            ),
        )
        dispose_all()
        assert resolve_url("pg_catalog") == "postgresql+psycopg2://la:s3cret@db.internal:5433/catalog"

    def test_an_unknown_connection_id_is_an_error_naming_it(self):
        dispose_all()
        with pytest.raises(UnknownConnectionError, match="'no_such_catalog' is not defined"):
            CatalogStore(conn_id="no_such_catalog")


class TestIsOutage:
    """Only what waiting cures is an outage: a gate waits through it, anything else fails the task."""

    @pytest.mark.parametrize(
        "exc",
        [
            ConnectionRefusedError(111, "Connection refused"),
            TimeoutError("timed out"),
            OSError(errno.EHOSTUNREACH, "No route to host"),
            socket.gaierror(-3, "Temporary failure in name resolution"),
            NotADirectoryError(errno.ENOTDIR, "the embedded catalog's directory is a file"),
            sa_exc.OperationalError("SELECT 1", {}, Exception("server closed the connection unexpectedly")),
            sa_exc.InterfaceError("SELECT 1", {}, Exception("connection already closed")),
            sa_exc.DisconnectionError("connection invalidated"),
            sa_exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached"),
            ConnectionLookupError("leastaction_catalog_default", "secrets backend Vault failed: timed out"),
        ],
        ids=repr,
    )
    def test_what_waiting_cures_is_an_outage(self, exc):
        assert is_outage(exc)

    @pytest.mark.parametrize(
        "exc",
        [
            KeyError("slot_key"),
            ValueError("a bug"),
            sa_exc.OperationalError("SELECT 1", {}, Exception("no such table: la_task")),
            sa_exc.ProgrammingError("SELECT 1", {}, Exception('relation "la_task" does not exist')),
            CatalogError("catalog connection 'x' has neither extra 'url' nor a host"),
        ],
        ids=repr,
    )
    def test_a_bug_or_a_schema_error_is_no_outage(self, exc):
        assert not is_outage(exc)
