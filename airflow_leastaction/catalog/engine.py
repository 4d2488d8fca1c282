"""Where the catalog lives and how to reach it.

* Embedded default: a SQLite file under ``$AIRFLOW_HOME/leastaction/catalog.db`` (WAL journal, busy
  timeout, foreign keys on), created and migrated on first use.
* Production: PostgreSQL (or any SQLAlchemy URL) from an Airflow connection of type
  ``leastaction_catalog``. Its extra ``{"url": "..."}`` wins; otherwise host, port, login, password and
  schema (the database name) build a ``postgresql+psycopg2`` URL.

Every component (listener, sensors, gates, triggers, hook, CLI, UI, dbt queue) finds the catalog through
:func:`resolve_url` / :func:`aresolve_url`, so one deployment has one catalog. A connection id of
``None`` means ``[leastaction] catalog_conn_id``. Only a deployment that configures nothing (the id in
use is ``leastaction_catalog_default``, the option names no other, and no such connection exists) falls
back to ``[leastaction] catalog_url`` or, when that is empty, the embedded SQLite file; any other
connection id that is not defined is an error naming the setting. A look-up that fails (a secrets backend
raising or timing out) is never taken for "not defined": it raises
:class:`~airflow_leastaction.exceptions.ConnectionLookupError`, an outage for the gates (they wait) and the
listener (it spools), an error for the command line (:mod:`~airflow_leastaction.catalog.connection_absence`).

Engines are cached per URL for the life of the process; connection look-ups per connection id.
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine, make_url

from airflow_leastaction.catalog.connection_absence import aconfirm_absent, confirm_absent
from airflow_leastaction.config import airflow_home, setting
from airflow_leastaction.exceptions import CatalogError, ConnectionLookupError, UnknownConnectionError

DEFAULT_CONN_ID = "leastaction_catalog_default"
CONN_TYPE = "leastaction_catalog"
SQLITE_BUSY_TIMEOUT_MS = 30_000

_engines: dict[str, Engine] = {}
_urls: dict[str, str] = {}
_lock = threading.Lock()


def embedded_url() -> str:
    path = airflow_home() / "leastaction" / "catalog.db"
    return f"sqlite:///{path}"


def default_conn_id() -> str:
    """``[leastaction] catalog_conn_id``: the catalog connection of every component not told otherwise."""
    return setting("catalog_conn_id", DEFAULT_CONN_ID).strip() or DEFAULT_CONN_ID


def fallback_url() -> str:
    """The catalog of a deployment that defines no catalog connection: ``[leastaction] catalog_url``
    (config file or ``AIRFLOW__LEASTACTION__CATALOG_URL``), else the embedded SQLite file."""
    return setting("catalog_url", "").strip() or embedded_url()


def url_from_connection(conn) -> str:
    """Build the SQLAlchemy URL of a ``leastaction_catalog`` connection."""
    # Parse the extra ourselves: extra_dejson masks secrets synchronously, which deadlocks in a triggerer.
    try:
        extra = json.loads(conn.extra) if conn.extra else {}
    except (TypeError, ValueError):
        extra = {}
    if extra.get("url"):
        return str(extra["url"])
    if not conn.host:
        raise CatalogError(f"catalog connection {conn.conn_id!r} has neither extra 'url' nor a host")
    return URL.create(
        "postgresql+psycopg2",
        username=conn.login or None,
        password=conn.password or None,
        host=conn.host,
        port=conn.port or None,
        database=conn.schema or "postgres",
    ).render_as_string(hide_password=False)


def lookup_connection(conn_id: str):
    if _airflow_session_in_use():
        # The scheduler and the API server (where run listeners fire) hold a thread-local ORM session; a
        # look-up through Airflow's metastore secrets backend would close it (``create_session``) and
        # detach the caller's objects. Another thread gets a session of its own.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="leastaction-connection") as pool:
            return pool.submit(_lookup_connection_here, conn_id).result()
    return _lookup_connection_here(conn_id)


def _airflow_session_in_use() -> bool:
    # Only server processes (scheduler, API server) read connections through the metastore backend; a
    # task runner, dag.test() included, reads them through its supervisor, from its own thread.
    if os.environ.get("_AIRFLOW_PROCESS_CONTEXT") != "server":
        return False
    try:
        from airflow import settings

        registry = getattr(getattr(settings, "Session", None), "registry", None)
        return bool(registry is not None and registry.has())
    except Exception:  # no Airflow ORM in this process (a task runner, the CLI before Airflow is set up)
        return False


def _lookup_connection_here(conn_id: str):
    try:
        from airflow.sdk import BaseHook

        return BaseHook.get_connection(conn_id)
    except ImportError:  # pragma: no cover - Airflow is a hard dependency
        raise
    except Exception as exc:  # AirflowNotFoundException and friends differ by process type
        if not _not_found(exc):
            raise ConnectionLookupError(conn_id, str(exc)) from exc
    # Airflow says "isn't defined" when a secrets backend failed too: only every backend's answer tells.
    return confirm_absent(conn_id)


def _not_found(exc: Exception) -> bool:
    return "isn't defined" in str(exc) or type(exc).__name__.endswith("NotFoundException")


async def aresolve_url(conn_id: str | None = None) -> str:
    """:func:`resolve_url` for async code (triggers): the connection is read without blocking the loop."""
    conn_id = conn_id or default_conn_id()
    if conn_id in _urls:
        return _urls[conn_id]
    from airflow.sdk import BaseHook

    try:
        conn = await BaseHook.aget_connection(conn_id)
    except Exception as exc:
        if not _not_found(exc):
            raise ConnectionLookupError(conn_id, str(exc)) from exc
        conn = await aconfirm_absent(conn_id)
    return _remember(conn_id, conn)


def _remember(conn_id: str, conn) -> str:
    if conn is None:
        configured = default_conn_id()
        # Falling back is for a deployment that configures nothing; a component asking for the default id
        # while the option names another connection would otherwise write to a second catalog.
        if conn_id != DEFAULT_CONN_ID or configured != DEFAULT_CONN_ID:
            raise UnknownConnectionError(conn_id, configured=configured)
        url = fallback_url()
    else:
        url = url_from_connection(conn)
    _urls[conn_id] = url
    return url


def resolve_url(conn_id: str | None = None) -> str:
    """The catalog URL for ``conn_id`` (default: ``[leastaction] catalog_conn_id``).

    When neither the option nor ``conn_id`` names a connection other than ``leastaction_catalog_default``
    and that connection is not defined, :func:`fallback_url`; any other undefined connection id raises
    :class:`UnknownConnectionError` naming the option.
    """
    conn_id = conn_id or default_conn_id()
    if conn_id in _urls:
        return _urls[conn_id]
    return _remember(conn_id, lookup_connection(conn_id))


#: Query parameters a driver reads a secret from (``?password=...`` is a libpq connection parameter).
_SECRET_PARAMETERS = frozenset({"password", "passwd", "pwd", "passfile", "sslpassword", "token", "secret"})


def shown_url(url: str) -> str:
    """``url`` as it may be shown (a log line, a task name, the command line): password and secret query
    parameters as ``***``; a URL that cannot be parsed is not shown at all."""
    try:
        parsed = make_url(url)
        query = {k: ("***" if k.lower() in _SECRET_PARAMETERS else v) for k, v in parsed.query.items()}
        return parsed.set(query=query).render_as_string(hide_password=True)
    except Exception:  # whatever the parser makes of it may still hold the secret
        return "<a catalog URL that cannot be parsed>"


def reach(engine: Engine) -> Engine:
    """Connect to ``engine``'s database once (and return it): the driver's error, when it cannot be
    reached, comes before a command does any work."""
    with engine.connect():
        return engine


#: asyncpg's own errors for a server that cannot be reached, by name (the driver is optional); SQLAlchemy's
#: async dialect wraps them in ``OperationalError``/``InterfaceError``, a bare driver call does not.
_ASYNC_DRIVER_OUTAGES = frozenset(
    {"PostgresConnectionError", "ConnectionDoesNotExistError", "CannotConnectNowError", "TooManyConnectionsError"}
)


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` means the catalog cannot be reached right now (server down or restarting, network,
    connections refused, exhausted or timed out, its connection's secrets backend failing): waiting cures
    it, so a gate waits and the listener spools. Everything else (a schema error, a bug such as a
    ``KeyError``) is an error and fails the task: the one definition every component asks."""
    from sqlalchemy import exc as sa_exc

    if isinstance(exc, ConnectionLookupError):
        return True
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        # SQLite reports a missing table or column as an OperationalError too; waiting does not cure those.
        text = str(getattr(exc, "orig", None) or exc).lower()
        return not ("no such table" in text or "no such column" in text)
    # OSError covers the network (refused, reset, unreachable, a name server that does not answer) and the
    # embedded catalog's file system (its directory not there or not writable yet, a full disk): the
    # engine cannot be created until someone fixes it, and then waiting gates go on.
    if isinstance(exc, (sa_exc.DisconnectionError, sa_exc.TimeoutError, OSError)):
        return True
    return any(k.__module__.startswith("asyncpg") and k.__name__ in _ASYNC_DRIVER_OUTAGES for k in type(exc).__mro__)


def _on_sqlite_connect(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_begin(conn):
    # pysqlite's own transaction handling is off (isolation_level=None); we issue BEGIN ourselves so that
    # writers can ask for BEGIN IMMEDIATE and take the write lock up front.
    # A poll's read asks for none (None): each of its statements then reads on its own, as every statement
    # does under PostgreSQL's READ COMMITTED, and a tick costs its queries alone.
    mode = conn.info.pop("sqlite_begin", "BEGIN")
    if mode:
        conn.exec_driver_sql(mode)


def get_engine(url: str | None = None, *, migrate: bool | None = None) -> Engine:
    """A cached engine for ``url`` (default: :func:`resolve_url`).

    ``migrate`` runs the Alembic migrations on first use; by default only the embedded SQLite catalog is
    migrated automatically (PostgreSQL goes through ``airflow-leastaction db upgrade``).
    """
    url = url or resolve_url()
    with _lock:
        engine = _engines.get(url)
        if engine is not None:
            return engine
        engine = _create(url)
        is_sqlite = engine.dialect.name == "sqlite"
        if migrate or (migrate is None and is_sqlite):
            from airflow_leastaction.catalog.migrate import ensure_current

            ensure_current(engine)
        _engines[url] = engine
        return engine


def _create(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            parsed,
            connect_args={
                "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
                "isolation_level": None,
                "check_same_thread": False,
            },
            pool_pre_ping=False,
        )
        event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(parsed, pool_pre_ping=True, pool_size=5, max_overflow=10)


def dispose_all() -> None:
    """Forget every cached engine and URL (tests, and after a fork)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
        _urls.clear()
