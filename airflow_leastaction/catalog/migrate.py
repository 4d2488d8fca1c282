"""Apply the catalog's Alembic migrations (own version table: ``la_alembic_version``)."""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

from sqlalchemy.engine import Engine

VERSION_TABLE = "la_alembic_version"
MIGRATIONS = Path(__file__).parent / "migrations"
_ASSIGNMENT = re.compile(r"^(revision|down_revision)\s*=\s*(.+?)\s*$", re.M)


def alembic_config(engine: Engine | None = None):
    from alembic.config import Config

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
    from alembic import command

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
    from alembic import command

    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def current_revisions(engine: Engine) -> set[str]:
    from alembic.migration import MigrationContext

    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return set(ctx.get_current_heads())


def head_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    return set(ScriptDirectory.from_config(alembic_config()).get_heads())


@lru_cache(maxsize=1)
def script_heads() -> frozenset[str]:
    """The head revisions, read from the revision files' own assignments without loading Alembic.

    Every task process opens the catalog; this keeps the "is it up to date?" check to one query.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        values = dict(_ASSIGNMENT.findall(path.read_text()))
        revisions.add(ast.literal_eval(values["revision"]))
        down = ast.literal_eval(values.get("down_revision", "None"))
        parents.update(down if isinstance(down, tuple) else [down] if down else [])
    return frozenset(revisions - parents)


def ensure_current(engine: Engine) -> None:
    """Upgrade the catalog unless its recorded revisions already are the heads."""
    try:
        with engine.connect() as conn:
            applied = set(conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").scalars())
    except Exception:  # no version table yet: a fresh catalog
        applied = set()
    if applied != script_heads():
        upgrade(engine)
