"""Whether a connection Airflow reports as not defined is really absent.

Airflow's connection look-up asks each secrets backend in turn and takes a backend that raises (a
timeout, a refused login, a bug) for one that does not hold the connection: when every backend failed or
had nothing, it says "isn't defined" all the same, and the Execution API's backend answers None for a
server error as for a 404. For the catalog that difference decides where outcomes go (the embedded SQLite
file is only for a deployment that configures nothing), so an absence is confirmed here by asking every
backend this process can reach, the ``[secrets] backend`` and ``[workers] secrets_backend`` classes
included: any backend that fails makes the look-up fail
(:class:`~airflow_leastaction.exceptions.ConnectionLookupError`); only when each of them answered
"nothing" is the connection absent.
"""

from __future__ import annotations

import asyncio
import inspect

from airflow_leastaction.exceptions import ConnectionLookupError


def confirm_absent(conn_id: str):
    """None when no backend holds ``conn_id`` (each answered); the connection if one holds it after all;
    :class:`ConnectionLookupError` naming the backend when one fails."""
    from airflow_leastaction.version_compat import connection_from_supervisor, is_execution_api_backend

    for backend in _backends(conn_id):
        try:
            conn = (
                connection_from_supervisor(conn_id)
                if is_execution_api_backend(backend)
                else backend.get_connection(conn_id=conn_id)
            )
        except Exception as exc:
            raise ConnectionLookupError(conn_id, f"secrets backend {type(backend).__name__} failed: {exc}") from exc
        if conn:
            return conn
    return None


async def aconfirm_absent(conn_id: str):
    """:func:`confirm_absent` for async code (triggers): no backend is asked on the event loop's thread."""
    for backend in await asyncio.to_thread(_backends, conn_id):
        try:
            conn = await _aask(backend, conn_id)
        except Exception as exc:
            raise ConnectionLookupError(conn_id, f"secrets backend {type(backend).__name__} failed: {exc}") from exc
        if conn:
            return conn
    return None


def _backends(conn_id: str) -> list:
    """The backends Airflow asks in this process, then the configured custom backends it may not ask here
    (a worker's look-up goes through the API server, whose ``[secrets] backend`` it does not see)."""
    try:
        from airflow_leastaction.version_compat import loaded_secrets_backends

        return loaded_secrets_backends()
    except Exception as exc:  # a backend class that cannot be imported or built
        raise ConnectionLookupError(conn_id, f"the secrets backends cannot be loaded: {exc}") from exc


async def _aask(backend, conn_id: str):
    from airflow_leastaction.version_compat import aconnection_from_supervisor, is_execution_api_backend

    if is_execution_api_backend(backend):
        return await aconnection_from_supervisor(conn_id)
    method = getattr(backend, "aget_connection", None)
    if method is None:
        return await asyncio.to_thread(backend.get_connection, conn_id=conn_id)
    answer = method(conn_id)
    return await answer if inspect.isawaitable(answer) else answer
