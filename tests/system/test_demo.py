"""``make demo`` in its non-interactive form: the example DAGs run green on the embedded defaults."""

from __future__ import annotations

import os
import re
import socket
import subprocess

from tests.helpers.airflow_cluster import free_port
from tests.helpers.paths import ROOT


def port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class TestDemo:
    def test_example_dags_run_green_and_the_plugin_shows_their_activity(self, tmp_path):
        port = free_port()
        env = {
            **os.environ,
            "DEMO_HOME": str(tmp_path / "home"),
            "DEMO_PORT": str(port),
            "DEMO_TIMEOUT": "600",
            "DEMO_RUNS": "1",
        }  # one slot per DAG keeps the suite short; make demo shows three
        done = subprocess.run(
            [str(ROOT / "scripts" / "demo.sh"), "--check"],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        report = [line for line in done.stdout.splitlines() if line.startswith(("check:", "demo:"))]
        assert done.returncode == 0, "\n".join(report) + "\n" + done.stderr[-4000:]
        run_line = re.compile(r"check: (\w+)\s+((?:(?:success|failed|running|queued) ?)+|no runs)$")
        runs = {m.group(1): m.group(2).split() for m in map(run_line.match, report) if m}
        assert {"orders_raw", "orders_enriched", "orders_daily_report"} <= set(runs)
        assert all(states and set(states) == {"success"} for states in runs.values()), runs
        activity = next(line for line in report if line.startswith("check: plugin API"))
        counts = dict(re.findall(r"(\w[\w ]*?): (\d+)", activity.removeprefix("check: plugin API ")))
        assert int(counts["decisions"]) > 0 and int(counts["consumption"]) > 0, activity
        assert int(counts["queue batches"]) > 0 and int(counts["queue events"]) > 0, activity
        assert int(counts["queue batches not successful"]) == 0, activity
        assert not port_in_use(port), "the API server outlived the demo"
