"""A PostgreSQL server of a test's own, to stop and start: catalog outages without touching the shared one.

Started by ``scripts/postgres.sh`` on a free loopback port with its data in a temp dir; :meth:`stop` is
a fast shutdown (clients are disconnected, as in a crash or failover), :meth:`start` brings the same
data back. :meth:`remove` stops it for good and deletes its data.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import sqlalchemy as sa

from tests.helpers.airflow_cluster import free_port

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"


class OwnPostgres:
    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="leastaction-own-pg-"))
        self.dir.chmod(0o755)  # the server runs as the postgres user
        self.admin_url = f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"

    def _script(self, action: str) -> None:
        env = {**os.environ, "LEASTACTION_PG_PORT": str(self.port), "LEASTACTION_PG_DIR": str(self.dir / "data")}
        subprocess.run(["bash", str(SCRIPT), action], env=env, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._script("start")

    def stop(self) -> None:
        self._script("stop")

    def create_database(self, name: str) -> str:
        admin = sa.create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        return self.admin_url.rsplit("/", 1)[0] + f"/{name}"

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
