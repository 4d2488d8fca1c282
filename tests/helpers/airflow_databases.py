"""Airflow metadata databases for test deployments, copied from one migrated template.

``airflow db migrate`` on an empty database costs every deployment tens of seconds; the schema it makes
depends only on the Airflow release and on the settings that add tables (the auth manager, external
database managers). The first deployment of a run migrates a template for those, and every deployment
after it starts from a copy: ``CREATE DATABASE ... TEMPLATE`` on PostgreSQL, a file copy on SQLite.
The copy is what ``airflow db migrate`` would have made, so a deployment started from it is the same.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import sqlalchemy as sa

#: Settings that decide which tables ``airflow db migrate`` creates.
SCHEMA_SETTINGS = ("AIRFLOW__CORE__AUTH_MANAGER", "AIRFLOW__DATABASE__EXTERNAL_DB_MANAGERS")
_SQLITE_TEMPLATES: dict[str, Path] = {}


def schema_key(environ: dict[str, str]) -> str:
    """A name for the schema ``environ`` migrates to: the Airflow release and the settings that add tables."""
    from importlib.metadata import version

    parts = [version("apache-airflow"), *(environ.get(name, "") for name in SCHEMA_SETTINGS)]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def _migrate(environ: dict[str, str], conn: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env={**environ, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": conn},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"airflow db migrate of a template exited {done.returncode}\n{done.stderr[-4000:]}")


def copy_migrated(environ: dict[str, str], conn: str) -> None:
    """Make the empty database ``conn`` (PostgreSQL, or a SQLite file not yet created) a migrated one."""
    url = sa.engine.make_url(conn)
    if url.get_backend_name() == "postgresql":
        _copy_postgres(environ, url)
    elif url.get_backend_name() == "sqlite" and url.database and not Path(url.database).exists():
        shutil.copyfile(_sqlite_template(environ), url.database)
    else:
        _migrate(environ, conn)


def _sqlite_template(environ: dict[str, str]) -> Path:
    key = schema_key(environ)
    if key not in _SQLITE_TEMPLATES:
        path = Path(tempfile.mkdtemp(prefix="leastaction-airflow-template-")) / "airflow.db"
        _migrate(environ, f"sqlite:///{path}")
        _SQLITE_TEMPLATES[key] = path
    return _SQLITE_TEMPLATES[key]


def _copy_postgres(environ: dict[str, str], url: sa.engine.URL) -> None:
    template = f"la_template_airflow_{schema_key(environ)}"
    admin = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            # One builder at a time across the suite's processes; the others wait, then copy.
            conn.execute(sa.text("SELECT pg_advisory_lock(hashtext(:name))"), {"name": template})
            try:
                exists = conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": template})
                if exists.scalar() is None:
                    building = f"{template}_building"
                    conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)'))
                    conn.execute(sa.text(f'CREATE DATABASE "{building}"'))
                    _migrate(environ, url.set(database=building).render_as_string(hide_password=False))
                    conn.execute(sa.text(f'ALTER DATABASE "{building}" RENAME TO "{template}"'))
                conn.execute(sa.text(f'DROP DATABASE "{url.database}"'))
                conn.execute(sa.text(f'CREATE DATABASE "{url.database}" TEMPLATE "{template}"'))
            finally:
                conn.execute(sa.text("SELECT pg_advisory_unlock(hashtext(:name))"), {"name": template})
    finally:
        admin.dispose()
