"""Rows bound as a table in a few parameters read back as they were bound, on both backends, whatever
their text holds (quotes, backslashes, braces, commas, the word NULL): the PostgreSQL array literal is
quoted and escaped element by element."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from airflow_leastaction.catalog.bound_rows import bound_rows
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.schema import task, task_run

texts = st.one_of(st.none(), st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12))
instants = st.one_of(
    st.none(),
    st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)),
)
pks = st.one_of(st.none(), st.integers(-(2**62), 2**62))
rows = st.lists(st.tuples(pks, texts, instants), max_size=6)


def read_back(engine, bound: list[tuple]) -> list[tuple]:
    with engine.connect() as conn:
        w = bound_rows(
            conn.dialect, "t", [("pk", task_run.c.task_pk.type), ("n", task.c.name.type), ("s", task_run.c.slot.type)]
        )
        pk, name, slot = w.columns
        query = (
            sa.select(
                sa.type_coerce(pk, task_run.c.task_pk.type),
                sa.type_coerce(name, task.c.name.type),
                sa.type_coerce(slot, task_run.c.slot.type),
            )
            .select_from(w.table)
            .order_by(w.order)
        )
        return [tuple(r) for r in conn.execute(query, w.params(bound))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows)
@example([(1, 'a "quoted" name, with {braces}', dt.datetime(2026, 3, 29, 1, 30, tzinfo=dt.UTC))])
@example([(None, "NULL", None), (2, "back\\slash\\", None), (3, "", None), (4, " padded ", None)])
@example([(5, "é ☃ 日本", dt.datetime(2026, 11, 28, 0, 0, 0, 123456, tzinfo=dt.UTC))])
def test_bound_rows_read_back_exactly_as_bound(catalog_url, bound):
    got = read_back(get_engine(catalog_url), bound)
    assert got == bound
