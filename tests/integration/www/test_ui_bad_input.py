"""The UI answers bad input with 4xx, never 5xx: generated values thrown at every query parameter of every
route, on SQLite and PostgreSQL, against a catalog with data in it."""

from __future__ import annotations

import datetime as dt

import pytest
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_leastaction.www.app import create_app
from tests.helpers import www_scenario as scenario

P = "/leastaction"


def _query_params(dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_params(sub)
    return names


ROUTES = {r.path: sorted(_query_params(r.dependant)) for r in create_app().routes if isinstance(r, APIRoute)}

#: Values a careless or hostile caller sends: integers past every column's range, instants at the ends
#: of the calendar (which offsets and slot arithmetic push past them), malformed cursors, odd text.
EDGE_INTS = st.sampled_from([0, -1, -2, 1, 2**31, 2**31 - 1, -(2**31) - 1, 2**63, 2**63 - 1, -(2**63), 10**40])
EDGE_TIMES = st.sampled_from(
    [
        "0001-01-01",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59",
        "9999-12-31T23:59:59-14:00",
        "2024-02-30",
        "2024-01-01T25:00",
        "1970-01-01T00:00Z",
        "{MAP_INDEX}",
    ]
)
CURSORS = st.sampled_from(
    ["|", "x|1", "2024-01-01T00:00:00+00:00|99999999999999999999", "9999-12-31T23:59:59+00:00|1", "a|b|c", "zz|-1"]
)
VALUES = st.one_of(
    EDGE_INTS.map(str),
    st.integers().map(str),
    EDGE_TIMES,
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)).map(dt.datetime.isoformat),
    CURSORS,
    st.sampled_from(["", " ", "%", "_", "true", "false", "ANY", "SATISFIED", "dag", "task", "<script>", "\x00", "é"]),
    st.text(max_size=40),
    st.text(min_size=1001, max_size=1100, alphabet="ab"),
)


@pytest.fixture
def story(store):
    built = scenario.build(store)
    scenario.build_queue(store.engine)
    return built


@pytest.mark.parametrize("path", sorted(ROUTES))
def test_no_generated_query_answers_5xx(client, story, path):
    params = ROUTES[path]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.dictionaries(st.sampled_from(params), VALUES, min_size=1) if params else st.just({}))
    def check(query):
        if path == "/dag" and "dag_id" not in query:
            query = {**query, "dag_id": "sales_daily"}
        response = client.get(P + path, params=query)
        assert response.status_code < 500, (path, query, response.text[:500])
        if response.status_code >= 400:
            assert response.status_code in (400, 403, 404, 422), (path, query, response.status_code)

    check()


@pytest.mark.parametrize(
    ("path", "query", "names"),
    [
        ("/api/decisions", {"map_index": str(2**63)}, "map_index"),
        ("/api/consumption", {"upstream_task_pk": str(10**30)}, "upstream_task_pk"),
        ("/api/graph", {"task_pk": str(2**64)}, "task_pk"),
        ("/api/decisions", {"since": "0001-01-01T00:00:00+14:00"}, "since"),
        ("/api/decisions", {"until": "9999-12-31T23:59:59-14:00"}, "until"),
        ("/graph", {"task_pk": "1", "interval": "9999-12-31T23:59:59"}, "interval"),
        ("/api/decisions", {"cursor": "2024-01-01T00:00:00+00:00|99999999999999999999"}, "cursor"),
        ("/api/catalog", {"q": "a\x00b"}, "q"),
        ("/api/plan", {"task": "shop/orders", "from": "0001-01-01T00:00:00+14:00", "to": "2024-01-01T00:00Z"}, "from"),
        ("/api/plan", {"task": "shop/orders", "from": "2024-01-01T00:00Z", "to": "9999-12-31T23:59:59-14:00"}, "to"),
    ],
)
def test_a_value_out_of_range_is_refused_naming_the_parameter(client, story, path, query, names):
    response = client.get(P + path, params=query)
    assert response.status_code in (400, 422), response.text
    assert names in response.json()["detail"]
