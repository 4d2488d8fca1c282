"""Reaching the catalog, and its migrations against its models, on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.migrate import VERSION_TABLE, current_revisions, head_revisions
from airflow_leastaction.catalog.schema import metadata


class TestMigrations:
    def test_applying_every_migration_yields_exactly_the_models(self, catalog_url):
        engine = get_engine(catalog_url)
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
            diff = [d for d in compare_metadata(ctx, metadata) if not _is_type_noise(d)]
        assert diff == []
        assert current_revisions(engine) == head_revisions()

    def test_the_catalog_keeps_its_own_version_table(self, catalog_url):
        from sqlalchemy import inspect

        tables = set(inspect(get_engine(catalog_url)).get_table_names())
        assert VERSION_TABLE in tables and "alembic_version" not in tables


def _is_type_noise(diff) -> bool:
    # SQLite reflects BIGINT-with-INTEGER-variant and aware DateTime loosely; types are not what we compare.
    return isinstance(diff, list) and all(d[0] == "modify_type" for d in diff)


class TestConcurrentFirstUse:
    SCRIPT = (
        "import sys; from airflow_leastaction.catalog.engine import get_engine; "
        "from airflow_leastaction.catalog.store import CatalogStore; "
        "from airflow_leastaction.identity import TaskIdentity; "
        "CatalogStore(get_engine(sys.argv[1], migrate=True)).register_task("
        "TaskIdentity('t' + sys.argv[2], 'p'), __import__('airflow_leastaction.catalog.store', "
        "fromlist=['TaskMeta']).TaskMeta())"
    )

    def test_processes_starting_together_on_a_fresh_catalog_all_migrate_it_safely(self, catalog_url):
        import subprocess
        import sys

        from sqlalchemy import func, select

        from airflow_leastaction.catalog.schema import task

        fresh = catalog_url  # already migrated once by the fixture; a second wave must be a no-op
        procs = [subprocess.Popen([sys.executable, "-c", self.SCRIPT, fresh, str(i)]) for i in range(4)]
        assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
        with get_engine(fresh).connect() as conn:
            assert conn.execute(select(func.count()).select_from(task)).scalar() == 4

    def test_processes_starting_together_on_an_empty_sqlite_file_all_succeed(self, tmp_path):
        import subprocess
        import sys

        url = f"sqlite:///{tmp_path}/fresh.db"
        procs = [subprocess.Popen([sys.executable, "-c", self.SCRIPT, url, str(i)]) for i in range(4)]
        assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
        assert current_revisions(get_engine(url)) == head_revisions()
        dispose_all()


def test_the_quick_head_check_agrees_with_alembic():
    from airflow_leastaction.catalog.migrate import script_heads

    assert set(script_heads()) == head_revisions()
