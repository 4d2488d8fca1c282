"""The production shape without Docker: Airflow as separate processes (scheduler, dag-processor, triggerer,
API server; LocalExecutor) on PostgreSQL, with the catalog in another PostgreSQL database, running the
example DAGs. Outcomes are read through Airflow's REST API and the plugin's API, as an operator would.
"""

from __future__ import annotations

import pytest

from tests.helpers.example_flows import BackfillTrioFlow, DbtQueueFlow, RunConditionFlow, example_deployment

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
        cluster.stop()
        assert cluster.needed_sigkill == [], cluster.describe()
        assert cluster.leftover_pids() == []
