"""The catalog connection type and its hook."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from airflow_leastaction.catalog.engine import DEFAULT_CONN_ID, get_engine, resolve_url
from airflow_leastaction.catalog.store import CatalogStore


class CatalogHook(BaseHook):
    """Reach the LeastAction catalog through an Airflow connection of type ``leastaction_catalog``.

    Put a full SQLAlchemy URL in the extra field (``{"url": "postgresql+psycopg2://..."}``) or fill
    host, port, login, password and schema (the database). The catalog is resolved like every other
    component's (:func:`~airflow_leastaction.catalog.engine.resolve_url`).

    :param catalog_conn_id: the connection id (default: ``[leastaction] catalog_conn_id``).
    """

    conn_name_attr = "catalog_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "leastaction_catalog"
    hook_name = "LeastAction Catalog"

    def __init__(self, catalog_conn_id: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.catalog_conn_id = catalog_conn_id

    def get_url(self) -> str:
        return resolve_url(self.catalog_conn_id)

    def get_store(self) -> CatalogStore:
        return CatalogStore(get_engine(self.get_url()))

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
