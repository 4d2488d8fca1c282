"""The index of declared parent names finds exactly the tasks whose declarations name a task, whatever
was declared and declared again, on SQLite and PostgreSQL: the oracle reads every declaration."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from airflow_leastaction.catalog.declared_parents import naming_any, parse_parents
from airflow_leastaction.catalog.schema import task
from airflow_leastaction.identity import TaskIdentity

NAMES = ["a", "b", "c", "d"]
#: (declaring task, the parents it declares), in order: a task may declare again, or declare nothing.
DECLARATIONS = st.lists(
    st.tuples(st.sampled_from(NAMES), st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(["p", "q"])))),
    max_size=12,
)


def children_by_reading_every_declaration(conn, project: str, parent: TaskIdentity) -> set[str]:
    rows = conn.execute(select(task.c.name, task.c.parents).where(task.c.project == project)).all()
    return {name for name, text in rows if parent in parse_parents(text)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(declarations=DECLARATIONS)
def test_the_tasks_naming_a_parent_are_those_whose_declarations_name_it(store, declarations):
    project = f"p{uuid.uuid4().hex[:8]}"  # each example its own tasks in the one catalog
    ident = {n: TaskIdentity(n, project) for n in NAMES}
    for child, parents in declarations:
        # A parent in this example's project, or of the same name in another ("q"): the index finds it
        # by name, the reader's check tells them apart.
        store.declare_parents(ident[child], None, [TaskIdentity(n, project if p == "p" else "q") for n, p in parents])
    with store.engine.connect() as conn:
        for name in NAMES:
            parent = ident[name]
            rows = conn.execute(naming_any([name]).where(task.c.project == project)).mappings().all()
            found = {r["name"] for r in rows if parent in parse_parents(r["parents"])}
            assert found == children_by_reading_every_declaration(conn, project, parent)
            declared_now = {r["name"] for r in rows}
            assert declared_now == {
                c for c, ps in dict(declarations).items() if any(n == name for n, _ in ps)
            }  # no row left from a declaration since replaced
