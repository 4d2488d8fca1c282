"""Every route needs an Airflow login (401) and read access to DAG data (403); nothing writes."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute

from airflow_leastaction.www.app import create_app

PREFIX = "/leastaction"
ROUTES = sorted(r.path for r in create_app().routes if isinstance(r, APIRoute))


QUERY = {
    "/dag": "?dag_id=example",
    "/api/dag": "?dag_id=example",
    "/api/graph": "?task_pk=1",
    "/graph": "?task_pk=1",
    "/api/plan": "?task=example/example.load&from=2024-01-01T00:00:00Z&to=2024-01-02T00:00:00Z",
    "/api/eta": "?dag_id=example&task_id=load",
}


def _url(path: str) -> str:
    return PREFIX + path + QUERY.get(path, "")


class TestAccess:
    @pytest.mark.parametrize("path", ROUTES)
    def test_route_answers_401_without_credentials(self, anonymous, path):
        response = anonymous.get(_url(path))
        assert response.status_code == 401, response.text

    @pytest.mark.parametrize("path", ROUTES)
    def test_route_answers_403_without_read_access(self, anonymous, tokens, path):
        response = anonymous.get(_url(path), headers={"Authorization": f"Bearer {tokens.no_role}"})
        assert response.status_code == 403, response.text

    @pytest.mark.parametrize("path", ROUTES)
    def test_route_answers_a_viewer(self, anonymous, tokens, path):
        response = anonymous.get(_url(path), headers={"Authorization": f"Bearer {tokens.viewer}"})
        assert response.status_code == 200, response.text

    def test_the_session_cookie_of_the_ui_is_accepted(self, anonymous, tokens):
        anonymous.cookies.set("_token", tokens.viewer)
        assert anonymous.get(PREFIX + "/decisions").status_code == 200

    def test_a_forged_token_is_refused(self, anonymous, tokens):
        forged = tokens.viewer[:-4] + ("AAAA" if not tokens.viewer.endswith("AAAA") else "BBBB")
        response = anonymous.get(PREFIX + "/catalog", headers={"Authorization": f"Bearer {forged}"})
        assert response.status_code in (401, 403)


class TestNoWrites:
    def test_every_route_only_reads(self):
        methods = {m for r in create_app().routes if isinstance(r, APIRoute) for m in r.methods}
        assert methods == {"GET"}

    def test_every_route_carries_an_access_dependency(self):
        for route in create_app().routes:
            if isinstance(route, APIRoute):
                calls = {d.call.__qualname__ for d in route.dependant.dependencies}
                assert any("requires_access" in c for c in calls), route.path

    @pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
    def test_write_methods_are_not_allowed(self, anonymous, tokens, method):
        response = getattr(anonymous, method)(
            PREFIX + "/api/decisions", headers={"Authorization": f"Bearer {tokens.viewer}"}
        )
        assert response.status_code == 405

    def test_no_unauthenticated_api_description_is_served(self, anonymous):
        for path in ("/docs", "/redoc", "/openapi.json"):
            assert anonymous.get(PREFIX + path).status_code in (401, 404)
