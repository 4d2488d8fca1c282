"""How the audit trail's rows are written: an attempt's decisions, its summary and its consumption
records, each one statement whatever the number of rows, built once per dialect (and shape).

The write side of :class:`~airflow_leastaction.catalog.audit.AuditRecords`; every function here takes
the attempt (an :class:`~airflow_leastaction.catalog.audit.AttemptKey`) and what was judged, and returns
a statement or its parameters.
"""

from __future__ import annotations

from sqlalchemy import and_, bindparam, case, func, insert, select, type_coerce, union_all
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from airflow_leastaction.catalog.bound_rows import bound_rows
from airflow_leastaction.catalog.schema import consumption, gate_attempt, gate_decision
from airflow_leastaction.gating.engine import CONSUMED_RESULTS, DecisionResult, Judgement
from airflow_leastaction.identity import TaskIdentity, airflow_task_name
from airflow_leastaction.run_conditions.model import task_of_key


def decision_values(
    j: Judgement, bypass_reason: str | None, degraded: bool = False, downstream_slot=None, own_run=None
) -> tuple:
    """What one decision row holds of its judgement, in :data:`_JUDGED` order (``own_run``: the DAG of the
    attempt and the catalog project of its tasks, which a ``task:`` dependency names)."""
    identity = None
    if bypass_reason is not None and not j.satisfied:
        result, reason = DecisionResult.BYPASSED.value, f"{bypass_reason}: {j.reason}"
    elif degraded and not j.satisfied:
        j = j.as_missing(downstream_slot)
        result, reason = DecisionResult.MISSING.value, j.reason
        identity = missing_identity(j.dependency, own_run) if j.upstream_task_pk is None else None
    else:
        result = (DecisionResult.SATISFIED if j.satisfied else DecisionResult.UNSATISFIED).value
        reason = j.reason
    return (
        j.dependency,
        j.dependency_type.value,
        j.upstream_task_pk,
        j.upstream_run_pk,
        j.upstream_slot,
        j.upstream_revision,
        identity,
        result,
        reason,
    )


def missing_identity(dependency: str, own_run: tuple[str, str] | None) -> str | None:
    """The catalog identity (as ``TaskIdentity.__str__`` writes it) of a dependency recorded MISSING with no
    upstream task: what its late arrival is matched on. A ``task:`` label names a task of the same run, of
    ``own_run`` = (DAG id, the deployment's project), as ``refs.airflow_task`` names it."""
    kind, _, rest = dependency.partition(":")
    if kind == "catalog":
        return rest
    task_id = task_of_key(dependency)
    if task_id is not None and own_run is not None:
        dag_id, project = own_run
        return str(TaskIdentity(airflow_task_name(dag_id, task_id), project))
    return None


#: The decision columns that differ from one dependency to the next (the rest is the attempt's).
_JUDGED = (
    "dependency",
    "dependency_type",
    "upstream_task_pk",
    "upstream_run_pk",
    "upstream_slot",
    "upstream_revision",
    "upstream_identity",
    "result",
    "reason",
)


def decisions_insert(conn: Connection, attempt, downstream_slot, now, rows: list[tuple]):
    """One ``INSERT ... SELECT ... RETURNING id`` of an attempt's decisions, whatever their number, and
    its parameters: the attempt's own columns bound once, the judged ones as bound rows (one parameter per
    column at most). The statement is built once per dialect. Rows are inserted in the order given (ORDER
    BY their position), so their ids, sorted, are in that order."""
    statement, judged = _decisions_statement(conn.dialect)
    own = {
        "d_dag_id": attempt.dag_id,
        "d_task_id": attempt.task_id,
        "d_run_id": attempt.run_id,
        "d_map_index": attempt.map_index,
        "d_attempt": attempt.attempt,
        "d_downstream_slot": downstream_slot,
        "d_decided_at": now,
    }
    return statement, {**own, **judged.params(rows)}


#: The columns that name an attempt (``AttemptKey``'s fields, in its order), in every table keyed by one.
ATTEMPT_COLUMNS = ("dag_id", "task_id", "run_id", "map_index", "attempt")


def same_attempt(table, key):
    """The condition on ``table`` (any table keyed by an attempt: decisions, attempt summaries, consumption)
    of one attempt's rows: ``key`` an ``AttemptKey``, or its five values (or bound columns) in the order of
    :data:`ATTEMPT_COLUMNS`."""
    values = key if isinstance(key, tuple | list) else [getattr(key, name) for name in ATTEMPT_COLUMNS]
    return and_(*(table.c[name] == value for name, value in zip(ATTEMPT_COLUMNS, values, strict=True)))


_DECISIONS: dict[tuple, tuple] = {}


def _decisions_statement(dialect):
    key = (type(dialect), dialect.name)
    if key not in _DECISIONS:
        d = gate_decision.c
        judged = bound_rows(dialect, "j", [(name, d[name].type) for name in _JUDGED])
        own = [*ATTEMPT_COLUMNS, "downstream_slot", "decided_at"]
        # type_coerce, not CAST: SQLite's CAST(... AS DATETIME) would turn the stored text into a number.
        values = [type_coerce(bindparam(f"d_{name}"), d[name].type) for name in own]
        source = select(*values, *judged.columns).select_from(judged.table).order_by(judged.order)
        statement = insert(gate_decision).from_select([*own, *_JUDGED], source).returning(d.id)
        _DECISIONS[key] = (statement, judged)
    return _DECISIONS[key]


def summary_params(attempt, now, rows: list[tuple]) -> dict:
    results = [row[_JUDGED.index("result")] for row in rows]
    return {
        **{name: getattr(attempt, name) for name in ATTEMPT_COLUMNS},
        "decisions": len(results),
        "satisfied": results.count(DecisionResult.SATISFIED.value),
        "bypassed": results.count(DecisionResult.BYPASSED.value),
        "missing": results.count(DecisionResult.MISSING.value),
        "decided_at": now,
    }


_SUMMARIES: dict[tuple, object] = {}


def summary_statement(dialect):
    """The upsert of an attempt's summary: a second write for the same attempt adds to its counts."""
    key = (type(dialect), dialect.name)
    if key not in _SUMMARIES:
        dialect_insert = postgresql.insert if dialect.name == "postgresql" else sqlite.insert
        statement = dialect_insert(gate_attempt)
        new, old = statement.excluded, gate_attempt.c
        _SUMMARIES[key] = statement.on_conflict_do_update(
            index_elements=[old[name] for name in ATTEMPT_COLUMNS],
            set_={
                "decisions": old.decisions + new.decisions,
                "satisfied": old.satisfied + new.satisfied,
                "bypassed": old.bypassed + new.bypassed,
                "missing": old.missing + new.missing,
                "decided_at": case((new.decided_at > old.decided_at, new.decided_at), else_=old.decided_at),
            },
        )
    return _SUMMARIES[key]


#: The columns a consumption record copies from the decision it consumes, after ``decision_id``.
_COPIED = (
    "dependency",
    "upstream_task_pk",
    "upstream_run_pk",
    "upstream_slot",
    "upstream_revision",
    "upstream_identity",
)


_CONSUMPTIONS: dict[tuple, object] = {}


def consumed_decisions(own_attempt: bool, gates: int, results: int = 1):
    """The decisions an attempt consumes: its own (when ``own_attempt``) and those of the latest attempt of
    each of ``gates`` gate tasks of the same task instance's run (bound as ``c_gate_<i>``), of the
    ``results`` results bound as ``c_result_<i>`` (SATISFIED; and MISSING, what a degraded run ran
    without, for its consumption records)."""
    d = gate_decision.c
    same_ti = (
        d.dag_id == bindparam("c_dag_id"),
        d.run_id == bindparam("c_run_id"),
        d.map_index == bindparam("c_map_index"),
    )
    # One branch per source attempt, each keyed on the whole attempt index: an OR of attempts let
    # planners pick the (result, time) index instead and scan every SATISFIED decision ever recorded.
    # A gate's latest attempt is an uncorrelated scalar subquery, evaluated once per statement.
    sources = [(bindparam("c_task_id"), bindparam("c_attempt"))] if own_attempt else []
    for i in range(gates):
        gate = bindparam(f"c_gate_{i}")
        sources.append((gate, select(func.max(d.attempt)).where(*same_ti, d.task_id == gate).scalar_subquery()))
    consumed = d.result.in_([bindparam(f"c_result_{i}") for i in range(results)])
    branches = [select(gate_decision).where(*same_ti, consumed, d.task_id == t, d.attempt == n) for t, n in sources]
    return (branches[0] if len(branches) == 1 else union_all(*branches)).subquery()


def consumption_statement(dialect, own_attempt: bool, gates: int):
    """INSERT of one consumption record per decision the attempt consumes (:func:`consumed_decisions`);
    built once per dialect and shape, the values bound (see ``AuditRecords.consume``)."""
    key = (type(dialect), dialect.name, own_attempt, gates)
    if key not in _CONSUMPTIONS:
        c = consumption.c
        decisions = consumed_decisions(own_attempt, gates, len(CONSUMED_RESULTS))
        own = [*ATTEMPT_COLUMNS, "downstream_task_pk", "downstream_slot", "consumed_at"]
        # type_coerce, not CAST: SQLite's CAST(... AS DATETIME) would turn the stored text into a number.
        values = [type_coerce(bindparam(f"c_{name}"), c[name].type) for name in own]
        source = select(decisions.c.id, *values, *(decisions.c[name] for name in _COPIED), decisions.c.result)
        _CONSUMPTIONS[key] = insert(consumption).from_select(["decision_id", *own, *_COPIED, "result"], source)
    return _CONSUMPTIONS[key]
