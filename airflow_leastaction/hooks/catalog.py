"""The catalog connection type and its hook: how every task, trigger, listener and command reaches the catalog.

The stores themselves are handed an engine; this module resolves the connection and builds the engine
(cached per URL, migrated on first use) and the store on it, so that one place decides how a component
reaches the catalog.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook
from sqlalchemy.engine import Engine

from airflow_leastaction.catalog.engine import DEFAULT_CONN_ID, get_engine, reach, resolve_url
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.dbt.queue_store import QueueStore


class CatalogHook(BaseHook):
    """Reach the LeastAction catalog through an Airflow connection of type ``leastaction_catalog``.

    Put a full SQLAlchemy URL in the extra field (``{"url": "postgresql+psycopg2://..."}``) or fill
    host, port, login, password and schema (the database). The catalog is resolved like every other
    component's (:func:`~airflow_leastaction.catalog.engine.resolve_url`).

    :param catalog_conn_id: the connection id (default: ``[leastaction] catalog_conn_id``).
    :param url: the catalog's URL, already resolved (a trigger is handed it): no connection is looked up.
    """

    conn_name_attr = "catalog_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "leastaction_catalog"
    hook_name = "LeastAction Catalog"

    def __init__(self, catalog_conn_id: str | None = None, *, url: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.catalog_conn_id = catalog_conn_id
        self.url = url

    def get_url(self) -> str:
        return self.url or resolve_url(self.catalog_conn_id)

    def get_engine(self, *, migrate: bool | None = None, reachable: bool = False) -> Engine:
        """The catalog's engine. ``migrate`` as :func:`~airflow_leastaction.catalog.engine.get_engine` takes it
        (False: the schema is left as it is, for the ``db`` commands);
        ``reachable``: connect once first, so that a catalog that is down fails here."""
        engine = get_engine(self.get_url(), migrate=migrate)
        return reach(engine) if reachable else engine

    def get_store(self, *, reachable: bool = False) -> CatalogStore:
        return CatalogStore(self.get_engine(reachable=reachable))

    def get_queue_store(self, *, reachable: bool = False) -> QueueStore:
        return QueueStore(self.get_engine(reachable=reachable))

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": [],
            "relabeling": {"schema": "Database"},
            "placeholders": {
                "extra": '{"url": "postgresql+psycopg2://user:pass@host:5432/catalog"}',
                "host": "catalog-db.internal",
            },
        }


def catalog_store(conn_id: str | None = None, *, reachable: bool = False) -> CatalogStore:
    """The catalog store of connection ``conn_id`` (default: ``[leastaction] catalog_conn_id``)."""
    return CatalogHook(conn_id).get_store(reachable=reachable)


def store_at(url: str) -> CatalogStore:
    """The catalog store at ``url``, already resolved (engines are cached per URL; the first one may migrate:
    call it off the event loop)."""
    return CatalogHook(url=url).get_store()


def catalog_engine(
    conn_id: str | None = None, *, url: str | None = None, migrate: bool | None = None, reachable: bool = False
) -> Engine:
    """The catalog's engine, for the reads that are not the store's (asset bridges, the UI's reads)."""
    return CatalogHook(conn_id, url=url).get_engine(migrate=migrate, reachable=reachable)


def queue_store(conn_id: str | None = None, *, reachable: bool = False) -> QueueStore:
    """The dbt queue's store on the catalog of connection ``conn_id``."""
    return CatalogHook(conn_id).get_queue_store(reachable=reachable)
