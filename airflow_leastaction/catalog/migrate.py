"""Apply the catalog's Alembic migrations (own version table: ``la_alembic_version``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

VERSION_TABLE = "la_alembic_version"
MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(engine: Engine | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["engine"] = engine
    return cfg


#: Any constant shared by every process that migrates the catalog (PostgreSQL advisory lock key).
MIGRATION_LOCK_KEY = 0x4C41_4D49  # "LAMI"


def upgrade(engine: Engine, revision: str = "heads") -> None:
    """Bring the catalog schema at ``engine`` up to ``revision``.

    Safe when several processes start on a fresh catalog at once (workers, triggerers, the API server):
    the first takes a lock for the whole migration and the others then find the schema at head.
    """
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.info["sqlite_begin"] = "BEGIN IMMEDIATE"
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
            cfg = alembic_config(engine)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def current_revisions(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return set(ctx.get_current_heads())


def head_revisions() -> set[str]:
    return set(ScriptDirectory.from_config(alembic_config()).get_heads())
