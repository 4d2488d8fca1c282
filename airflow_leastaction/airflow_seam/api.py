"""Airflow's public REST API (``/api/v2``), as the provider calls it: clearing a degraded run's tasks so
they run again, and backfills for a planned re-run.

Reached through an Airflow connection (``[leastaction] airflow_api_conn_id``, default
``leastaction_airflow_api_default``): its host is the API server's URL (``http://airflow-apiserver:8080``),
its login and password a user allowed to clear task instances and create backfills (a token is asked of
``/auth/token`` with them). Without a login, requests carry no token.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import httpx

from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import AirflowApiError, AirflowApiUnreachableError

DEFAULT_API_CONN_ID = "leastaction_airflow_api_default"


def api_conn_id() -> str:
    """The deployment's ``[leastaction] airflow_api_conn_id``."""
    return setting("airflow_api_conn_id", DEFAULT_API_CONN_ID).strip() or DEFAULT_API_CONN_ID


def base_url_of(conn) -> str:
    """The API server's URL from a connection: its host when it carries a scheme, else built from it."""
    host = (conn.host or "").rstrip("/")
    if not host:
        raise AirflowApiError(f"Airflow API connection {conn.conn_id!r} has no host (the API server's URL)")
    if "://" not in host:
        host = f"{conn.schema or 'http'}://{host}"
    return f"{host}:{conn.port}" if conn.port and host.count(":") < 2 else host


@dataclass
class AirflowApi:
    """A client of one Airflow API server.

    :param base_url: the API server's URL, without ``/api/v2``.
    :param username: a user allowed to clear task instances and create backfills (None: no token).
    :param password: that user's password.
    :param timeout: seconds per request.
    """

    base_url: str
    username: str | None = None
    password: str | None = None
    timeout: float = 30.0
    _token: str | None = field(default=None, repr=False)

    @classmethod
    def from_connection(cls, conn_id: str | None = None) -> AirflowApi:
        """The client of the connection ``conn_id`` (default: :func:`api_conn_id`)."""
        from airflow_leastaction.catalog.engine import lookup_connection

        conn_id = conn_id or api_conn_id()
        try:
            conn = lookup_connection(conn_id)
        except Exception as exc:
            raise AirflowApiError(
                f"cannot read the Airflow API connection {conn_id!r}: {exc.__cause__ or exc}"
            ) from exc
        if conn is None:
            raise AirflowApiError(
                f"the Airflow API connection {conn_id!r} is not defined: create it with the API server's URL as "
                "its host and a user allowed to clear task instances and create backfills"
            )
        return cls(base_url_of(conn), conn.login or None, conn.password or None)

    # -- requests -------------------------------------------------------------------------------------
    def request(self, method: str, path: str, *, expect: tuple[int, ...] = (200,), **kwargs) -> Any:
        """One call (``path`` under ``/api/v2``); raises :class:`AirflowApiUnreachableError` when the server
        cannot be reached or refuses the login, :class:`AirflowApiError` for any other answer not expected."""
        headers = {"Authorization": f"Bearer {self._login()}"} if self.username else {}
        resp = self._send(method, f"/api/v2{path}", headers=headers, **kwargs)
        if resp.status_code not in expect:
            raise AirflowApiError(f"{method} {path}: Airflow answered {resp.status_code}: {resp.text[:500]}")
        return resp.json() if resp.content else {}

    def _send(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            return httpx.request(method, f"{self.base_url}{path}", timeout=self.timeout, **kwargs)
        except httpx.HTTPError as exc:
            raise AirflowApiUnreachableError(self.base_url, str(exc) or type(exc).__name__) from exc

    def _login(self) -> str:
        if self._token is None:
            body = {"username": self.username, "password": self.password or ""}
            resp = self._send("POST", "/auth/token", json=body)
            if resp.status_code not in (200, 201):
                raise AirflowApiUnreachableError(
                    self.base_url, f"login as {self.username!r} refused ({resp.status_code})"
                )
            self._token = resp.json()["access_token"]
        return self._token

    # -- what the provider asks -----------------------------------------------------------------------
    def version(self) -> str:
        """The server's Airflow version: a call that proves it is reachable and the login accepted."""
        return str(self.request("GET", "/version").get("version"))

    def dag(self, dag_id: str) -> dict:
        """A DAG's details (``max_active_runs``, ``is_paused``...)."""
        return self.request("GET", f"/dags/{dag_id}/details")

    def clear(self, dag_id: str, run_id: str, task_ids: list[str] | None) -> list[dict]:
        """Clear ``task_ids`` (None: every task) of one run, whatever their state, so they run again; a run
        that had ended goes back to queued. Returns the task instances cleared."""
        body: dict[str, Any] = {"dry_run": False, "dag_run_id": run_id, "only_failed": False, "reset_dag_runs": True}
        if task_ids is not None:
            body["task_ids"] = task_ids
        return self.request("POST", f"/dags/{dag_id}/clearTaskInstances", json=body).get("task_instances", [])

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.request("GET", f"/dags/{dag_id}/dagRuns/{run_id}")

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        """The state of every task instance of one run (mapped ones: the last listed)."""
        listed = self.request("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 1000})
        return {ti["task_id"]: ti["state"] for ti in listed.get("task_instances", [])}

    def requeue(self, dag_id: str, run_id: str) -> dict:
        """Set a finished run back to queued, so the scheduler runs its task instances that have no state."""
        return self.request("PATCH", f"/dags/{dag_id}/dagRuns/{run_id}", json={"state": "queued"})

    def backfill(self, dag_id: str, start: dt.datetime, end: dt.datetime, max_active_runs: int) -> dict:
        """Re-run the runs of ``dag_id`` whose logical dates are in ``[start, end]``, completed ones too."""
        body = {
            "dag_id": dag_id,
            "from_date": start.isoformat(),
            "to_date": end.isoformat(),
            "reprocess_behavior": "completed",
            "max_active_runs": max_active_runs,
        }
        return self.request("POST", "/backfills", json=body)

    def backfill_state(self, backfill_id: int) -> dict:
        return self.request("GET", f"/backfills/{backfill_id}")

    def failed_runs(self, dag_id: str, start: dt.datetime, end: dt.datetime) -> list[str]:
        """The backfill runs of ``dag_id`` with logical dates in ``[start, end]`` that failed (a backfill
        that re-runs completed runs makes them backfill runs)."""
        params = {
            "run_type": "backfill",
            "state": "failed",
            "logical_date_gte": start.isoformat(),
            "logical_date_lte": end.isoformat(),
            "limit": 100,
        }
        listed = self.request("GET", f"/dags/{dag_id}/dagRuns", params=params)
        return [run["dag_run_id"] for run in listed.get("dag_runs", [])]
