"""The production shape without Docker: Airflow as separate processes (scheduler, dag-processor, triggerer,
API server; LocalExecutor) on PostgreSQL, with the catalog in another PostgreSQL database, running the
example DAGs. Outcomes are read through Airflow's REST API and the plugin's API, as an operator would.
"""

from __future__ import annotations

import pytest

from tests.helpers.example_flows import BackfillTrioFlow, DbtQueueFlow, RunConditionFlow, example_deployment
from tests.helpers.processes import deadlocked_in_signal_handler_log

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def cluster(pg_admin_url, tmp_path_factory):
    with example_deployment(pg_admin_url, tmp_path_factory.mktemp("multiprocess")) as cluster:
        yield cluster


class TestBackfillTrio(BackfillTrioFlow):
    """A three-day backfill of a parent owned by another team and two generations of children."""


class TestRunConditions(RunConditionFlow):
    pass


class TestDbtQueue(DbtQueueFlow):
    pass


class TestShutdown:
    def test_every_component_exits_on_sigterm_alone(self, cluster):
        cluster.stop(diagnose=True)
        stuck = {name: cluster.component_log(name) for name in cluster.needed_sigkill}
        if stuck and all(deadlocked_in_signal_handler_log(log) for log in stuck.values()):
            # Airflow's own handler logs on a lock its interrupted log line holds; no provider code is on
            # the stack (docs/operations.md, "Stopping components").
            pytest.xfail(f"Airflow's SIGTERM handler deadlocked on its own log line in {sorted(stuck)}")
        assert cluster.needed_sigkill == [], cluster.describe()
        assert cluster.leftover_pids() == []
