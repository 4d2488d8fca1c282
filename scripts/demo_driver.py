"""Drive the demo deployment over Airflow's REST API (called by scripts/demo.sh).

``start``: wait until Airflow is healthy and every example DAG file is parsed, unpause the example DAGs,
backfill the last slots of the demo window for each scheduled DAG and trigger one run of each unscheduled
one. ``settle``: wait for those runs, then run each asset-driven DAG (the dbt queue worker) that no asset
event started, and wait again. ``check``: settle, print every run's state, and exit 0 only when all
succeeded and the plugin's API shows catalog tasks, gate decisions and consumption records.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import httpx

LOGIN = {"username": "admin", "password": "admin"}
FINISHED = {"success", "failed"}
COMPONENTS = ("scheduler", "triggerer", "dag_processor")
LOCKED_RETRIES = 10


# Example DAGs parsed and shown but not run by the demo: their runs come from a producer the demo does not
# run (hourly partitioned landings; a partner's catalog reports), which tests/system/assets runs instead.
FED_BY_A_PRODUCER = {"orders_on_assets.py", "partner_feed_assets.py"}


class Demo:
    """A logged-in REST client for the demo's API server.

    :param url: the API server's base URL.
    """

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def login(self) -> None:
        resp = self.client.post("/auth/token", json=LOGIN)
        resp.raise_for_status()
        self.client.headers["Authorization"] = f"Bearer {resp.json()['access_token']}"

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        """One API call, retried while SQLite is locked by another writer: Airflow answers 503 to a write
        and 500 to a read then."""
        retry_on = {500, 502, 503} if method == "GET" else {503}
        for attempt in range(LOCKED_RETRIES):
            resp = self.client.request(method, path, **kwargs)
            if resp.status_code not in retry_on:
                break
            time.sleep(1 + attempt)
        return resp

    def get(self, path: str, **params) -> dict:
        resp = self.request("GET", path, params=params)
        resp.raise_for_status()
        return resp.json()

    def wait_healthy(self, timeout: float) -> None:
        def healthy():
            try:
                health = self.client.get("/api/v2/monitor/health").json()
            except (httpx.HTTPError, ValueError):
                return False
            return all(health.get(c, {}).get("status") == "healthy" for c in COMPONENTS)

        wait(healthy, timeout, "Airflow to come up")

    def example_dags(self, dags_folder: Path, timeout: float) -> list[dict]:
        """Every DAG parsed from ``dags_folder``, once each of its DAG files has been parsed."""
        files = {p.name for p in dags_folder.glob("*.py") if "DAG" in p.read_text()}

        def parsed():
            errors = self.get("/api/v2/importErrors")["import_errors"]
            if errors:
                sys.exit("import errors in the example DAGs:\n" + json.dumps(errors, indent=1))
            dags = self.get("/api/v2/dags", limit=1000)["dags"]
            seen = {Path(d["fileloc"]).name for d in dags}
            return [d for d in dags if Path(d["fileloc"]).name not in FED_BY_A_PRODUCER] if files <= seen else None

        return wait(parsed, timeout, f"the example DAGs ({', '.join(sorted(files))}) to be parsed")

    def start_runs(self, dag: dict, window: tuple[str, str], runs_per_dag: int) -> str:
        """Create the demo runs of ``dag``; asset-driven DAGs wait for :meth:`trigger_once`."""
        dag_id = dag["dag_id"]
        if self.get(f"/api/v2/dags/{dag_id}/details").get("asset_expression"):
            return "asset-driven: triggered once the other runs have finished"
        if dag.get("timetable_summary") in (None, "None"):
            return self.trigger_once(dag_id)
        body = {
            "dag_id": dag_id,
            "from_date": f"{window[0]}T00:00:00Z",
            "to_date": f"{window[1]}T00:00:00Z",
            "max_active_runs": 3,
            "reprocess_behavior": "none",
        }
        dry = self.request("POST", "/api/v2/backfills/dry_run", json=body)
        dry.raise_for_status()
        dates = sorted(b["logical_date"] for b in dry.json()["backfills"] if b["logical_date"])
        if not dates:
            return "no slot in the window"
        # The last few slots of the window only: a 10-minute schedule would otherwise make hundreds of runs.
        body["from_date"], body["to_date"] = dates[-runs_per_dag:][0], dates[-1]
        resp = self.request("POST", "/api/v2/backfills", json=body)
        if resp.status_code == 409:
            return "backfill already running"
        resp.raise_for_status()
        return f"backfill of {min(runs_per_dag, len(dates))} slot(s) {body['from_date']} .. {body['to_date']}"

    def unpause(self, dag_id: str) -> None:
        self.request("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False}).raise_for_status()

    def trigger_once(self, dag_id: str) -> str:
        if self.get(f"/api/v2/dags/{dag_id}/dagRuns", limit=1)["total_entries"]:
            return "already has runs"
        resp = self.request("POST", f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None})
        resp.raise_for_status()
        return "triggered"

    def runs(self, dags: list[dict]) -> dict[str, list[dict]]:
        return {d["dag_id"]: self.get(f"/api/v2/dags/{d['dag_id']}/dagRuns", limit=500)["dag_runs"] for d in dags}

    def wait_finished(self, dags: list[dict], timeout: float) -> dict[str, list[dict]]:
        def finished():
            runs = self.runs(dags)
            return runs if all(r["state"] in FINISHED for rs in runs.values() for r in rs) else None

        return wait(finished, timeout, "every example run to finish", interval=5)


def wait(condition, timeout: float, what: str, interval: float = 2.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            sys.exit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def start(demo: Demo, args) -> int:
    demo.wait_healthy(min(args.timeout, 180))
    demo.login()
    dags = demo.example_dags(args.dags_folder, min(args.timeout, 180))
    # Runs are created while the DAGs are still paused: on SQLite, a scheduler starting runs of a backfill
    # the API server is still writing can lose the race and stop.
    for dag in dags:
        outcome = demo.start_runs(dag, (args.from_date, args.to_date), args.runs_per_dag)
        print(f"demo: {dag['dag_id']:<28} {outcome}")
    for dag in dags:
        demo.unpause(dag["dag_id"])
    return 0


def settle(demo: Demo, args) -> dict[str, list[dict]]:
    """Wait for the started runs; then run each asset-driven DAG that no asset event started yet."""
    demo.login()
    dags = demo.example_dags(args.dags_folder, 60)
    runs = demo.wait_finished(dags, args.timeout)
    idle = [dag_id for dag_id, dag_runs in runs.items() if not dag_runs]
    for dag_id in idle:
        print(f"demo: {dag_id:<28} {demo.trigger_once(dag_id)}")
    return demo.wait_finished(dags, args.timeout) if idle else runs


def check(demo: Demo, args) -> int:
    runs = settle(demo, args)
    failed = 0
    for dag_id, dag_runs in sorted(runs.items()):
        states = [r["state"] for r in sorted(dag_runs, key=lambda r: r["run_after"])]
        failed += sum(s != "success" for s in states) + (not states)
        print(f"check: {dag_id:<28} {' '.join(states) or 'no runs'}")
    plugin = plugin_activity(demo)
    print("check: plugin API " + ", ".join(f"{k}: {v}" for k, v in plugin.items()))
    empty = [k for k in ("catalog", "decisions", "consumption") if not plugin[k]]
    failed += plugin["queue batches not successful"]
    if failed or empty:
        print(f"check: FAILED ({failed} run(s) or dbt batch(es) not successful; nothing in {', '.join(empty) or '-'})")
        return 1
    print("check: all example runs succeeded")
    return 0


def plugin_activity(demo: Demo) -> dict[str, int]:
    """How many rows the plugin's API shows on the first page of each view."""
    found = {
        name: len(demo.get(f"/leastaction/api/{name}")["items"]) for name in ("catalog", "decisions", "consumption")
    }
    queue = demo.get("/leastaction/api/queue")
    found["queue batches"] = len(queue["batches"])
    found["queue batches not successful"] = sum(b["status"] != "success" for b in queue["batches"])
    found["queue events"] = len(queue["events"])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "settle", "check"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--dags-folder", type=Path, required=True)
    parser.add_argument("--from-date", type=lambda s: dt.date.fromisoformat(s).isoformat(), required=True)
    parser.add_argument("--to-date", type=lambda s: dt.date.fromisoformat(s).isoformat(), required=True)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--runs-per-dag", type=int, default=3, help="the last N slots of the window")
    args = parser.parse_args(argv)
    demo = Demo(args.url)
    if args.command == "settle":
        runs = settle(demo, args)
        states = [r["state"] for rs in runs.values() for r in rs]
        print(
            f"demo: every example run finished: {states.count('success')} success, "
            f"{len(states) - states.count('success')} not"
        )
        return 0
    return start(demo, args) if args.command == "start" else check(demo, args)


if __name__ == "__main__":
    sys.exit(main())
