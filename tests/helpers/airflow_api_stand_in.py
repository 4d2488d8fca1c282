"""A stand-in for the routes of Airflow's REST API that a re-run on late arrival calls, served over real
HTTP on the loopback address so that child processes reach it as they would reach Airflow's API server.

Airflow's own API server needs a deployment (``tests/system/test_deadlines_cluster.py`` re-runs a degraded
run through it); the crash tests kill and restart the catalog's writer many times and need only what those
routes promise: a clear sets the run's ``queued_at`` anew (Airflow's ``clear_task_instances`` does, on
every clear) and its cleared task instances are scheduled again. It counts the clears it was asked, which
is what "re-run exactly once" is about.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RUN = re.compile(r"^/api/v2/dags/(?P<dag>[^/]+)/dagRuns/(?P<run>[^/]+)$")
TASKS = re.compile(r"^/api/v2/dags/(?P<dag>[^/]+)/dagRuns/(?P<run>[^/]+)/taskInstances$")
CLEAR = re.compile(r"^/api/v2/dags/(?P<dag>[^/]+)/clearTaskInstances$")
FIRST_QUEUED = "2026-12-01T00:00:00+00:00"


class AirflowApiStandIn:
    """Start with :meth:`start`, stop with :meth:`stop`; ``clears`` lists (dag_id, run_id, task_ids)."""

    def __init__(self) -> None:
        self.clears: list[tuple[str, str, tuple[str, ...] | None]] = []
        self._queued: dict[tuple[str, str], str] = {}
        self._cleared: dict[tuple[str, str], list[str]] = {}
        self._ticks = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def connection_env(self) -> dict[str, str]:
        """The environment entry naming this server as the provider's Airflow API connection."""
        return {"AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT": json.dumps({"conn_type": "http", "host": self.url})}

    def start(self) -> AirflowApiStandIn:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, path: str, body: dict) -> tuple[int, dict]:
        with self._lock:
            if method == "POST" and (m := CLEAR.match(path)):
                key, task_ids = (m["dag"], body["dag_run_id"]), body.get("task_ids")
                self.clears.append((*key, tuple(task_ids) if task_ids is not None else None))
                # A new queued_at on every clear, as Airflow's: later than any before it.
                later = dt.datetime.fromisoformat(FIRST_QUEUED) + dt.timedelta(seconds=next(self._ticks))
                self._queued[key] = later.isoformat()
                self._cleared[key] = list(task_ids or ["every_task"])
                return 200, {"task_instances": [{"task_id": t} for t in self._cleared[key]]}
            if method == "GET" and (m := TASKS.match(path)):
                cleared = self._cleared.get((m["dag"], m["run"]), [])
                return 200, {"task_instances": [{"task_id": t, "state": "queued"} for t in cleared]}
            if m := RUN.match(path):
                queued_at = self._queued.get((m["dag"], m["run"]), FIRST_QUEUED)
                return 200, {"dag_id": m["dag"], "dag_run_id": m["run"], "state": "queued", "queued_at": queued_at}
        return 404, {"detail": f"{method} {path}: not a route of this stand-in"}

    def _handler(self):
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                status, answer = stand_in.answer(method, self.path.split("?", 1)[0], body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._reply("GET")

            def do_POST(self):
                self._reply("POST")

            def do_PATCH(self):
                self._reply("PATCH")

            def log_message(self, *args):  # quiet
                pass

        return Handler
