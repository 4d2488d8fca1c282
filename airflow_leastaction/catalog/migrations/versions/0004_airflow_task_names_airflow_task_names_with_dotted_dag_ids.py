"""Airflow task names: a DAG id with a dot is followed by ``:`` so no two tasks share a name

DAG ``a.b`` task ``c`` and DAG ``a`` task ``b.c`` were both named ``a.b.c``. Rows of Airflow tasks whose
DAG id contains a dot are renamed ``<dag_id>:<task_id>`` (from the ``dag_id`` and ``task_id`` they hold,
i.e. the task that last wrote the row), together with the declared parents and the dependency labels
of gate decisions and consumption records that name them. Other rows keep their names. The rule is
written out here, not imported, so this revision keeps meaning what it meant.

Revision ID: 0004_airflow_task_names
Revises: 0003_ui_indexes
Create Date: 2026-11-30 21:30:00
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0004_airflow_task_names"
down_revision = "0003_ui_indexes"
branch_labels = None
depends_on = None

_task = sa.table(
    "la_task",
    sa.column("id"),
    sa.column("name"),
    sa.column("project"),
    sa.column("account"),
    sa.column("partition"),
    sa.column("source"),
    sa.column("dag_id"),
    sa.column("task_id"),
    sa.column("parents"),
)
_labelled = [
    sa.table(t, sa.column("dependency"), sa.column("upstream_task_pk")) for t in ("la_gate_decision", "la_consumption")
]


def _label(project: str, name: str, account: str, partition: str) -> str:
    # TaskIdentity.key as of this revision: "catalog:<project>/<name>[@account][[partition]]".
    return f"catalog:{project}/{name}" + (f"@{account}" if account else "") + (f"[{partition}]" if partition else "")


def _rename(old_sep: str, new_sep: str) -> None:
    conn = op.get_bind()
    rows = (
        conn.execute(
            sa.select(_task).where(
                _task.c.source == "airflow", _task.c.dag_id.like("%.%"), _task.c.task_id.is_not(None)
            )
        )
        .mappings()
        .all()
    )
    taken = {
        tuple(r) for r in conn.execute(sa.select(_task.c.name, _task.c.project, _task.c.account, _task.c.partition))
    }
    renamed: dict[tuple[str, str, str, str], str] = {}
    for row in rows:
        if row["name"] != f"{row['dag_id']}{old_sep}{row['task_id']}":
            continue  # named by hand or already in the new form
        new = f"{row['dag_id']}{new_sep}{row['task_id']}"
        key = (row["project"], row["account"], row["partition"])
        if (new, *key) in taken:
            continue  # downgrade only: the old name is held by another task; leave this one as it is
        conn.execute(sa.update(_task).where(_task.c.id == row["id"]).values(name=new))
        taken.discard((row["name"], *key))
        taken.add((new, *key))
        renamed[(row["name"], *key)] = new
        for table in _labelled:
            conn.execute(
                sa.update(table)
                .where(table.c.dependency == _label(key[0], row["name"], *key[1:]))
                .values(dependency=_label(key[0], new, *key[1:]))
            )
    if renamed:
        _rename_declared_parents(conn, renamed)


def _rename_declared_parents(conn, renamed: dict) -> None:
    for pk, text in conn.execute(sa.select(_task.c.id, _task.c.parents).where(_task.c.parents.is_not(None))).all():
        parents = json.loads(text)
        for parent in parents:
            key = (parent["name"], parent["project"], parent.get("account", ""), parent.get("partition", ""))
            parent["name"] = renamed.get(key, parent["name"])
        new_text = json.dumps(parents, sort_keys=True)
        if new_text != text:
            conn.execute(sa.update(_task).where(_task.c.id == pk).values(parents=new_text))


def upgrade() -> None:
    _rename(".", ":")


def downgrade() -> None:
    _rename(":", ".")
