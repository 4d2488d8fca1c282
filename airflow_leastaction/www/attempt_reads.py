"""The reads behind a list of gate attempts: each attempt's first decisions, and its summary.

An attempt may have judged thousands of dependencies, and a page lists dozens of attempts. Both reads
are one statement for all of a page's attempts, whatever their number (the attempts bound as rows,
:mod:`~airflow_leastaction.catalog.bound_rows`), built once per dialect, and each costs what the rows
it returns cost:

* the first ``n`` decisions of each attempt are the start of its range of the attempt index (which ends
  with the decision id): on SQLite up to the ``n``-th id, found by one lookup per attempt; on PostgreSQL
  read by a LATERAL subquery until its LIMIT (planned faster than the nested form);
* the counts a verdict gives (how many decisions, met, bypassed, missing, and when) are the attempt's summary row,
  written with its decisions (``la_gate_attempt``), not counted on each read.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import and_, bindparam, func, select, true
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.audit_statements import ATTEMPT_COLUMNS as ATTEMPT
from airflow_leastaction.catalog.audit_statements import same_attempt
from airflow_leastaction.catalog.bound_rows import BoundRows, bound_rows
from airflow_leastaction.catalog.schema import gate_attempt, gate_decision, task, task_run
from airflow_leastaction.www.params import MAX_ID


def attempt_keys(attempts: Iterable) -> list[tuple]:
    """Distinct attempt keys as tuples, in the order first given."""
    return list(dict.fromkeys(tuple(getattr(a, name) for name in ATTEMPT) for a in attempts))


def _keys(dialect) -> BoundRows:
    return bound_rows(dialect, "attempt", [(name, gate_decision.c[name].type) for name in ATTEMPT])


_FIRST: dict[tuple, object] = {}


def _first_rows_statement(dialect):
    key = (type(dialect), dialect.name)
    if key not in _FIRST:
        keys, d = _keys(dialect), gate_decision.c
        if dialect.name == "postgresql":
            # Each attempt's range read to its n-th row by a LATERAL subquery: planned in a fifth of the
            # time the nested form below takes on PostgreSQL (1.8 ms of a 3 ms read at 200 rows).
            first = (
                select(gate_decision)
                .where(same_attempt(gate_decision, keys.columns))
                .order_by(d.id)
                .limit(bindparam("skip") + 1)
                .lateral("first")
            )
            chosen = keys.table.join(first, true())
        else:
            x = gate_decision.alias("nth")
            # The id of the attempt's n-th decision (none: it has fewer, and all are shown).
            nth = (
                select(x.c.id).where(same_attempt(x, keys.columns)).order_by(x.c.id).limit(1).offset(bindparam("skip"))
            ).scalar_subquery()
            ids = (
                select(d.id)
                .select_from(keys.table)
                .join(
                    gate_decision,
                    and_(same_attempt(gate_decision, keys.columns), d.id <= func.coalesce(nth, MAX_ID)),
                )
                .subquery("ids")
            )
            first = select(gate_decision).select_from(ids.join(gate_decision, d.id == ids.c.id)).subquery("first")
            chosen = first
        up, ut, f = task_run.alias("up"), task.alias("ut"), first.c
        _FIRST[key] = (
            select(
                *(f[c.name] for c in gate_decision.c),
                up.c.run_id.label("upstream_run_id"),
                ut.c.dag_id.label("upstream_dag_id"),
                ut.c.task_id.label("upstream_task_id"),
            )
            .select_from(
                chosen.outerjoin(up, up.c.id == f.upstream_run_pk).outerjoin(ut, ut.c.id == f.upstream_task_pk)
            )
            .order_by(f.id)
        )
    return _FIRST[key]


def first_decisions(conn: Connection, keys: list[tuple], limit: int) -> list[dict]:
    """The first ``limit`` decisions of each attempt of ``keys`` (see :func:`attempt_keys`), by id, each
    with the Airflow run, DAG and task of the upstream slot it selected (``upstream_run_id``...)."""
    if not keys or limit < 1:
        return []
    params = {**_keys(conn.dialect).params(keys), "skip": limit - 1}
    return row_dicts(conn.execute(_first_rows_statement(conn.dialect), params))


def row_dicts(result) -> list[dict]:
    """The rows of ``result`` as dicts: built from the keys once, not by each row's mapping (which costs
    more than the read itself at a few hundred rows of a page)."""
    keys = list(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result]


_SUMMARY: dict[tuple, object] = {}


def _summary_statement(dialect):
    key = (type(dialect), dialect.name)
    if key not in _SUMMARY:
        keys, s = _keys(dialect), gate_attempt.c
        _SUMMARY[key] = select(
            *(s[name] for name in ATTEMPT), s.decisions, s.satisfied, s.bypassed, s.decided_at, s.missing
        ).join_from(keys.table, gate_attempt, same_attempt(gate_attempt, keys.columns))
    return _SUMMARY[key]


def summaries(conn: Connection, keys: list[tuple]) -> dict[tuple, tuple]:
    """Per attempt key: (decisions, satisfied, bypassed, last decided, missing) as recorded with its
    decisions."""
    if not keys:
        return {}
    rows = conn.execute(_summary_statement(conn.dialect), _keys(conn.dialect).params(keys))
    return {tuple(r[:5]): tuple(r[5:]) for r in rows}
