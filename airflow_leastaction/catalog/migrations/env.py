"""Alembic environment for the catalog; the caller passes a connection in ``config.attributes``."""

from __future__ import annotations

from alembic import context

from airflow_leastaction.catalog.migrate import VERSION_TABLE
from airflow_leastaction.catalog.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the catalog migrations through airflow_leastaction.catalog.migrate")

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
