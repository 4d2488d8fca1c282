"""Per-DAG access with Airflow's FAB auth manager, against a real API server.

A user whose role may read DAG ``sales_daily`` and not ``finance_weekly`` sees only sales_daily's gate
decisions, consumption, catalog rows and graph (plus the catalog rows of external tasks, which belong to
no DAG), and gets 403 from every page and API route that names finance_weekly or one of its tasks. The
dbt queue is shared by every DAG, so it needs read access to all of them. The admin sees everything, so
each filter is shown to hide something that exists.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
from tests.helpers import www_scenario as scenario
from tests.helpers.airflow_cluster import ADMIN_PASSWORD, ADMIN_USER
from tests.helpers.api_server import FAB_AUTH_MANAGER, api_server, fab_role, fab_user, token_for

DAGS = Path(__file__).parent / "access_dags"
ALLOWED, DENIED = "sales_daily", "finance_weekly"
# Re-running the denied DAG's rollup over the scenario's first week.
PLANNED = "finance/finance_weekly.rollup&from=2024-01-01T00:00:00%2B00:00&to=2024-01-07T00:00:00%2B00:00"
USER, PASSWORD = "sales_reader", "sales-pass"
PREFIX = "/leastaction"


def _rollup_runs(store: CatalogStore) -> None:
    """finance_weekly's roll-up is judged and succeeds on the 1st: a decision and a consumption of its own."""
    meta = scenario.airflow_meta(scenario.ROLLUP, "0 5 * * 1")
    who = AttemptKey(DENIED, "rollup", "scheduled__2024-01-01T05:00:00+00:00", -1, 1)
    scenario.gate(store, who, [scenario.REPORT], scenario.day(1), scenario.day(1, 6))
    store.record_success(
        scenario.ROLLUP, scenario.day(1), meta=meta, run_id=who.run_id, at=scenario.day(1, 7), consumer=who
    )


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('access-catalog')}/catalog.db"
    engine = get_engine(url, migrate=True)
    story = scenario.build(CatalogStore(engine))
    _rollup_runs(story.store)
    scenario.build_queue(engine)
    with api_server(DAGS, url, auth_manager=FAB_AUTH_MANAGER) as server:
        server.wait_for_dag(ALLOWED)
        server.wait_for_dag(DENIED)
        # The DAG:<dag_id> resources exist once the DAGs are parsed and the permissions synced.
        server.run("sync-perm", "--include-dags")
        fab_role(server, "sales_only", [f"DAG:{ALLOWED}", "Task Instances", "DAG Runs"])
        fab_user(server, USER, PASSWORD, "sales_only")
        tokens = {"user": token_for(server, USER, PASSWORD), "admin": token_for(server, ADMIN_USER, ADMIN_PASSWORD)}
        yield server, story, tokens
    dispose_all()


def _get(deployment, who: str, path: str, *, html: bool = False) -> httpx.Response:
    """GET a LeastAction route as ``who``: JSON routes with a bearer token, pages with the UI's cookie."""
    server, _, tokens = deployment
    token = tokens[who]
    auth = {"cookies": {"_token": token}} if html else {"headers": {"Authorization": f"Bearer {token}"}}
    return httpx.get(server.base_url + PREFIX + path, timeout=60, **auth)


def _items(deployment, who: str, path: str) -> list[dict]:
    response = _get(deployment, who, path)
    assert response.status_code == 200, response.text
    return response.json()["items"]


class TestAUserAllowedOneDag:
    def test_sees_only_that_dags_decisions(self, deployment):
        mine = {d["dag_id"] for d in _items(deployment, "user", "/api/decisions?limit=500")}
        everyone = {d["dag_id"] for d in _items(deployment, "admin", "/api/decisions?limit=500")}
        assert mine == {ALLOWED}
        assert everyone == {ALLOWED, DENIED}

    def test_sees_only_that_dags_consumption(self, deployment):
        mine = {c["dag_id"] for c in _items(deployment, "user", "/api/consumption?limit=500")}
        everyone = {c["dag_id"] for c in _items(deployment, "admin", "/api/consumption?limit=500")}
        assert mine == {ALLOWED}
        assert everyone == {ALLOWED, DENIED}

    def test_sees_that_dags_catalog_rows_and_the_external_ones(self, deployment):
        mine = {(t["name"], t["dag_id"]) for t in _items(deployment, "user", "/api/catalog?limit=500")}
        everyone = {t["name"] for t in _items(deployment, "admin", "/api/catalog?limit=500")}
        assert {dag for _, dag in mine} == {ALLOWED, None}
        assert (scenario.CRM.name, None) in mine
        assert scenario.ROLLUP.name in everyone - {name for name, _ in mine}

    def test_sees_the_graph_of_its_task_without_the_other_dags_tasks(self, deployment):
        _, story, _ = deployment
        path = f"/api/graph?task_pk={story.pks[scenario.REPORT]}&interval=2024-01-01T03:00:00Z"
        server_side = {n["label"] for n in _get(deployment, "admin", path).json()["nodes"]}
        graph = _get(deployment, "user", path).json()
        labels = {n["label"] for n in graph["nodes"]}
        assert str(scenario.ROLLUP) in server_side
        assert str(scenario.ROLLUP) not in labels and str(scenario.LOAD) in labels
        assert graph["withheld"] == 1
        assert all(str(scenario.ROLLUP) not in (e["parent"], e["child"]) for e in graph["edges"])

    @pytest.mark.parametrize(
        "path",
        [
            "/decisions",
            "/consumption",
            "/catalog",
            f"/dag?dag_id={ALLOWED}",
            "/graph?task_pk={report}",
            "/graph?q=rollup",
        ],
    )
    def test_its_pages_never_name_the_other_dag(self, deployment, path):
        _, story, _ = deployment
        path = path.format(report=story.pks[scenario.REPORT])
        mine, everyone = (_get(deployment, who, path, html=True) for who in ("user", "admin"))
        assert mine.status_code == everyone.status_code == 200, mine.text
        assert DENIED in everyone.text
        assert DENIED not in mine.text


#: Every route, each naming finance_weekly or one of its tasks ({rollup}: the roll-up's catalog id).
DENIED_ROUTES = [
    f"/api/decisions?dag_id={DENIED}",
    f"/api/attempts?dag_id={DENIED}",
    f"/decisions?dag_id={DENIED}",
    f"/decisions?dag_id={DENIED}&task_id=rollup&run_id=scheduled__2024-01-01T05:00:00%2B00:00&map_index=-1",
    f"/api/consumption?dag_id={DENIED}",
    f"/consumption?dag_id={DENIED}",
    f"/api/catalog?dag_id={DENIED}",
    f"/catalog?dag_id={DENIED}",
    "/api/graph?task_pk={rollup}",
    "/graph?task_pk={rollup}",
    f"/dag?dag_id={DENIED}",
    f"/api/dag?dag_id={DENIED}",
    f"/api/eta?dag_id={DENIED}&task_id=rollup&slot=2024-01-01T05:00:00%2B00:00",
    "/api/queue",
    "/queue",  # shared by every DAG: needs read access to all of them
]


class TestTheOtherDag:
    @pytest.mark.parametrize("route", DENIED_ROUTES)
    @pytest.mark.parametrize("html", [False, True], ids=["bearer", "cookie"])
    def test_every_route_answers_403_for_the_other_dag(self, deployment, route, html):
        _, story, _ = deployment
        path = route.format(rollup=story.pks[scenario.ROLLUP])
        assert _get(deployment, "user", path, html=html).status_code == 403, path
        assert _get(deployment, "admin", path, html=html).status_code == 200, path

    @pytest.mark.parametrize("route", ["/api/plan", "/plan"])
    @pytest.mark.parametrize("html", [False, True], ids=["bearer", "cookie"])
    def test_a_plan_of_the_other_dags_task_is_answered_as_one_of_a_made_up_task(self, deployment, route, html):
        real = _get(deployment, "user", f"{route}?task={PLANNED}", html=html)
        made_up = _get(deployment, "user", f"{route}?task={PLANNED.replace('rollup', 'nothing')}", html=html)
        assert real.status_code == made_up.status_code == 400
        assert real.text.replace("rollup", "nothing") == made_up.text
        assert _get(deployment, "admin", f"{route}?task={PLANNED}", html=html).status_code == 200

    def test_the_denied_routes_cover_every_route_of_the_app(self):
        from fastapi.routing import APIRoute

        from airflow_leastaction.www.app import create_app

        assert {r.path for r in create_app().routes if isinstance(r, APIRoute)} == {
            r.split("?")[0] for r in DENIED_ROUTES
        } | {"/api/plan", "/plan"}
