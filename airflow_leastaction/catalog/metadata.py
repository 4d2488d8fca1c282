"""The catalog's ``MetaData`` and column types, shared by the catalog and the dbt queue tables.

Every datetime column holds an aware UTC instant (:class:`UtcDateTime`), on SQLite as on PostgreSQL.
Both table modules import this one, so neither imports the other to reach the metadata.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, DateTime, Integer, MetaData, TypeDecorator

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)

BigId = BigInteger().with_variant(Integer, "sqlite")


class UtcDateTime(TypeDecorator):
    """Stores aware datetimes as UTC; returns aware UTC datetimes (SQLite keeps no zone itself)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()} given to the catalog; pass an aware one")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)
