"""What the pages read from Airflow's own database: DAGs as serialized, runs, task instances, waiting triggers.

The plugin runs in Airflow's API server, which may read its metadata database (workers and triggers may
not). Every read here is one query for the rows a page shows, by primary-key columns Airflow indexes.
The catalog says what a gate decided; Airflow says what became of the task instance (still waiting,
admitted, skipped), and what a DAG declares (:mod:`airflow_leastaction.www.declared`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace

from sqlalchemy import and_, bindparam, or_, select

from airflow_leastaction.intervals.run_slot import run_slot
from airflow_leastaction.version_compat import latest_serialized_dags
from airflow_leastaction.www.declared import DeclaredTask, parse_tasks
from airflow_leastaction.www.verdicts import TaskInstanceFacts

#: Runs offered as the judged interval of a DAG's graph.
RECENT_RUNS = 25


@dataclass(frozen=True)
class RunFacts:
    """One DAG run: its id, state and slot (data-interval start, else logical date, else ``run_after``)."""

    run_id: str
    state: str | None
    slot: dt.datetime | None
    end_date: dt.datetime | None

    @property
    def finished(self) -> bool:
        return self.state in ("success", "failed")


#: The session of :func:`one_session`, while one is open.
_HELD: ContextVar = ContextVar("leastaction_airflow_session", default=None)


@contextmanager
def one_session() -> Iterator[None]:
    """Every read inside shares one session of Airflow's database: a page of verdicts reads DAGs, task
    instances and waiting gates, each once, and opening a session (a checkout, a transaction, its commit)
    cost more than such a read."""
    if _HELD.get() is not None:
        yield
        return
    from airflow.utils.session import create_session

    with create_session() as session:
        token = _HELD.set(session)
        try:
            yield
        finally:
            _HELD.reset(token)


@contextmanager
def _session():
    """The session of :func:`one_session` if one is open, else one for this read alone."""
    with one_session():
        yield _HELD.get()


#: Parsed DAGs by (DAG id, hash of its serialized form): a DAG is parsed again only when it changed.
_PARSED: dict[tuple[str, str], dict[str, DeclaredTask]] = {}
_PARSED_MAX = 512


@lru_cache(maxsize=1)
def _latest_versions_statement():
    """Airflow's own choice of a DAG's latest serialized version (where the minor has one, see
    :func:`~airflow_leastaction.version_compat.latest_serialized_dags`), reduced to its ids and hashes, for
    the DAG ids bound as ``dag_ids``: built once (building the statement cost more than running it)."""
    from airflow.models.serialized_dag import SerializedDagModel as SDM

    dag_ids = bindparam("dag_ids", expanding=True)
    return latest_serialized_dags(dag_ids).with_only_columns(SDM.id, SDM.dag_id, SDM.dag_hash)


def declared_tasks(dag_ids: Iterable[str]) -> dict[str, dict[str, DeclaredTask]]:
    """The tasks of each DAG as its latest serialized version declares them (a DAG Airflow does not have
    is left out): one query for the latest versions' hashes, and the serialized form of a version only
    when it was not parsed before (loading it means reading and decoding the whole DAG's JSON)."""
    from airflow.models.serialized_dag import SerializedDagModel as SDM

    wanted = sorted({d for d in dag_ids if d})
    if not wanted:
        return {}
    with _session() as session:
        rows = session.execute(_latest_versions_statement(), {"dag_ids": wanted})
        versions = {row.id: (row.dag_id, str(row.dag_hash)) for row in rows}
        parsed = {key: _PARSED[key] for key in versions.values() if key in _PARSED}
        unparsed = [pk for pk, key in versions.items() if key not in parsed]
        if unparsed:
            for found in session.scalars(select(SDM).where(SDM.id.in_(unparsed))):
                parsed[versions[found.id]] = parse_tasks(found.data or {})
            if len(_PARSED) + len(unparsed) > _PARSED_MAX:
                _PARSED.clear()
            _PARSED.update(parsed)
    return {dag_id: parsed[(dag_id, dag_hash)] for dag_id, dag_hash in versions.values()}


def recent_runs(dag_id: str, limit: int = RECENT_RUNS, run_id: str | None = None) -> list[RunFacts]:
    """The DAG's latest runs, newest first (only ``run_id``, when given)."""
    from airflow.models.dagrun import DagRun

    stmt = (
        select(DagRun.run_id, DagRun.state, DagRun.data_interval_start, DagRun.logical_date, DagRun.run_after,
               DagRun.end_date)
        .where(DagRun.dag_id == dag_id)
        .order_by(DagRun.run_after.desc(), DagRun.id.desc())
        .limit(limit)
    )  # fmt: skip
    if run_id is not None:
        stmt = stmt.where(DagRun.run_id == run_id)
    with _session() as session:
        rows = session.execute(stmt).all()
    return [RunFacts(r[0], _text(r[1]), _aware(r[2] or r[3] or r[4]), _aware(r[5])) for r in rows]


def run_slots(runs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], dt.datetime]:
    """The slot of each DAG run ``(dag_id, run_id)`` by the one rule
    (:func:`~airflow_leastaction.intervals.run_slot.run_slot`), in one query; a run Airflow lacks is left out."""
    from airflow.models.dagrun import DagRun

    wanted = set(runs)
    if not wanted:
        return {}
    stmt = select(
        DagRun.dag_id, DagRun.run_id, DagRun.data_interval_start, DagRun.logical_date, DagRun.run_after
    ).where(DagRun.dag_id.in_(sorted({d for d, _ in wanted})), DagRun.run_id.in_(sorted({r for _, r in wanted})))
    with _session() as session:
        rows = session.execute(stmt).all()
    out = {}
    for row in rows:
        found = run_slot(SimpleNamespace(data_interval_start=_aware(row[2]), logical_date=_aware(row[3]),
                                         run_after=_aware(row[4])))  # fmt: skip
        if (row[0], row[1]) in wanted and found is not None:
            out[(row[0], row[1])] = found.instant
    return out


def run_states(dag_id: str, run_id: str) -> dict[tuple[str, int], str | None]:
    """Every task instance state of one run, by (task id, map index)."""
    from airflow.models.taskinstance import TaskInstance as TI

    stmt = select(TI.task_id, TI.map_index, TI.state).where(TI.dag_id == dag_id, TI.run_id == run_id)
    with _session() as session:
        return {(t, m): _text(s) for t, m, s in session.execute(stmt)}


@lru_cache(maxsize=64)
def _task_instances_statement(count: int):
    """Task instances by ``count`` keys, bound as ``k<i>_<j>``: an OR of one primary-key lookup per key (a
    row-value IN list is a scan of the whole table on SQLite and PostgreSQL). Built once per count: building
    and compiling an OR of 30 keys anew cost more than the query."""
    from airflow.models.taskinstance import TaskInstance as TI

    t = TI.__table__.c
    cols = (t.dag_id, t.task_id, t.run_id, t.map_index)
    lookups = (and_(*(c == bindparam(f"k{i}_{j}") for j, c in enumerate(cols))) for i in range(count))
    return select(*cols, t.state, t.try_number, t.start_date, t.end_date, t.trigger_timeout, t.trigger_id).where(
        or_(*lookups)
    )


def task_instances(keys: Iterable[tuple[str, str, str, int]]) -> dict[tuple[str, str, str, int], TaskInstanceFacts]:
    """Airflow's facts of the task instances ``(dag_id, task_id, run_id, map_index)``; a waiting gate's
    check (its trigger's ``clock``) included."""
    from airflow.models.trigger import Trigger

    wanted = sorted(set(keys))
    if not wanted:
        return {}
    params = {f"k{i}_{j}": value for i, key in enumerate(wanted) for j, value in enumerate(key)}
    out = {}
    with _session() as session:
        rows = session.execute(_task_instances_statement(len(wanted)), params).all()
        triggers = {r[9] for r in rows if r[9] is not None}
        clocks, unserved = {}, {}
        if triggers:
            taken_by = dt.datetime.now(dt.UTC) - unserved_after()
            for trig in session.scalars(select(Trigger).where(Trigger.id.in_(sorted(triggers)))):
                clocks[trig.id] = _clock(trig)
                # A queue no triggerer serves: nobody takes the trigger (Airflow 3.2+ gives triggers queues).
                # A trigger just made is not taken yet by any triggerer: it says so once one would have.
                if getattr(trig, "queue", None) and trig.triggerer_id is None and _aware(trig.created_date) < taken_by:
                    unserved[trig.id] = trig.queue
        for r in rows:
            out[(r[0], r[1], r[2], r[3])] = TaskInstanceFacts(
                _text(r[4]),
                r[5] or 0,
                _aware(r[6]),
                _aware(r[7]),
                _aware(r[8]),
                clocks.get(r[9], {}),
                unserved.get(r[9]),
            )
    return out


def unserved_after() -> dt.timedelta:
    """How long a trigger of a queue may wait untaken before the page says no triggerer serves the queue:
    ``[triggerer] triggerer_health_check_threshold``, the time Airflow gives a triggerer to show it is alive
    (a live triggerer of the queue takes a new trigger within a loop or two)."""
    from airflow.configuration import conf

    return dt.timedelta(seconds=conf.getfloat("triggerer", "triggerer_health_check_threshold", fallback=30.0))


def _clock(trigger) -> dict:
    try:
        clock = trigger.kwargs.get("clock")
    except Exception:
        return {}
    return dict(clock) if isinstance(clock, dict) else {}


def _text(state) -> str | None:
    if state is None:
        return None
    return str(getattr(state, "value", state))


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


#: The task types (``TaskInstance.operator``) that wait as gates.
GATE_OPERATORS = ("RunConditionGate", "DagRunGate", "ParentIntervalSensor")


@lru_cache(maxsize=2)
def _waiting_statement(by_dag: bool):
    """Gate task instances waiting now, longest waiting first, at most ``most`` (in the DAGs bound as
    ``dag_ids`` when ``by_dag``): built once."""
    from airflow.models.taskinstance import TaskInstance as TI

    stmt = select(TI.dag_id, TI.task_id, TI.run_id, TI.map_index).where(
        TI.state.in_(("deferred", "up_for_reschedule", "running")), TI.operator.in_(GATE_OPERATORS)
    )
    if by_dag:
        stmt = stmt.where(TI.dag_id.in_(bindparam("dag_ids", expanding=True)))
    return stmt.order_by(TI.start_date, TI.dag_id).limit(bindparam("most"))


def waiting_gates(
    dag_ids: Iterable[str] | None, limit: int
) -> list[tuple[tuple[str, str, str, int], TaskInstanceFacts]]:
    """Gate task instances waiting now (deferred, rescheduled, running), longest waiting first.

    :param dag_ids: only these DAGs (None: every DAG).
    """
    params = {"most": limit}
    if dag_ids is not None:
        params["dag_ids"] = sorted(dag_ids)
    with _session() as session:
        keys = [tuple(r) for r in session.execute(_waiting_statement(dag_ids is not None), params)]
    facts = task_instances(keys)
    return [(k, facts[k]) for k in keys if k in facts]
