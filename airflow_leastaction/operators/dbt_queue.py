"""dbt model queue operators: ``DbtEnqueueOperator`` (ends an ingest DAG), ``DbtDrainOperator`` (worker DAG).

The enqueue operator resolves a selector with ``dbt ls``, merges the models into the queue and publishes
the queue's Asset (:func:`dbt_queue_asset`), so a worker DAG scheduled on that Asset runs on demand.

dbt profiles come from either

* a profiles directory (``profiles_dir``, default: the project directory), holding ``profiles.yml``; or
* an Airflow connection (``dbt_conn_id``) whose extra is the dbt target, e.g.
  ``{"type": "duckdb", "path": "/data/warehouse.duckdb", "threads": 4}``; the connection's host, login,
  password, port and schema fill ``host``, ``user``, ``password``, ``port`` and ``schema`` when set. A
  ``profiles.yml`` is written to a temporary directory for each dbt session and removed afterwards.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Asset, BaseHook, BaseOperator

from airflow_leastaction.airflow_seam.context import context_slot
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.dbt import queue_clock
from airflow_leastaction.dbt.demand import submit
from airflow_leastaction.dbt.passes import PassOptions
from airflow_leastaction.dbt.planner import DEFAULT_EXCLUDED, Planner, validate_selector
from airflow_leastaction.dbt.policy import TierPolicy
from airflow_leastaction.dbt.queue_store import QueueStore
from airflow_leastaction.dbt.request_key import request_key
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.dbt.worker import QueueWorker, default_owner
from airflow_leastaction.exceptions import ConfigurationError, DbtBuildFailedError
from airflow_leastaction.hooks.catalog import CatalogHook
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.lineage import openlineage_installed
from airflow_leastaction.operators.dbt_owner import airflow_task_alive, same_task_prefix, ti_identity
from airflow_leastaction.refs import deployment_project

#: How long one wait of a drain, deferred, for work a tier holds back or a follow-up owed may last: the
#: longest minimum interval of the default tiers (historical, 1 hour). A held row is eligible at most its
#: tier's minimum interval after it is found (the interval counts from its last build, which is past), so
#: every row the default tiers hold back is waited for, follow-ups owed to builds of the drain included.
DEFAULT_MAX_WAIT = dt.timedelta(hours=1)


def dbt_queue_asset(environment: str = "default") -> Asset:
    """The Asset an enqueue publishes: schedule the worker DAG on it to drain ``environment`` on demand."""
    return Asset(name=f"leastaction_dbt_queue__{environment}", uri=f"leastaction-dbt://queue/{environment}")


def profile_target_from_connection(conn) -> dict:
    """A dbt target (the fields of one ``outputs`` entry) from an Airflow connection."""
    target = dict(conn.extra_dejson or {})
    fields = {
        "host": conn.host,
        "user": conn.login,
        "password": conn.password,
        "port": conn.port,
        "schema": conn.schema,
    }
    target.update({k: v for k, v in fields.items() if v not in (None, "")})
    target.setdefault("type", conn.conn_type)
    return target


def _check_profiles(task_id: str, profiles_dir: str | None, dbt_conn_id: str | None) -> None:
    if profiles_dir and dbt_conn_id:
        raise ConfigurationError(f"task {task_id!r}: pass profiles_dir or dbt_conn_id, not both")


def _check_project(task_id: str, project_dir: str) -> None:
    if "{{" in str(project_dir):  # templated: checked when the task runs
        return
    if not os.path.exists(os.path.join(project_dir, "dbt_project.yml")):
        raise ConfigurationError(f"task {task_id!r}: project_dir {project_dir!r} holds no dbt_project.yml")


class _DbtQueueOperator(BaseOperator):
    """Arguments both queue operators share."""

    template_fields: Sequence[str] = ("project_dir", "profiles_dir", "environment", "target")

    def __init__(
        self,
        *,
        project_dir: str,
        environment: str = "default",
        profiles_dir: str | None = None,
        dbt_conn_id: str | None = None,
        target: str | None = None,
        dbt_env: Mapping[str, str] | None = None,
        catalog_conn_id: str | None = None,
        tiers: TierPolicy | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_profiles(self.task_id, profiles_dir, dbt_conn_id)
        _check_project(self.task_id, project_dir)
        if not environment or not isinstance(environment, str):
            raise ConfigurationError(f"task {self.task_id!r}: environment must be a non-empty string")
        self.project_dir, self.environment = project_dir, environment
        self.profiles_dir, self.dbt_conn_id, self.target = profiles_dir, dbt_conn_id, target
        self.dbt_env = dict(dbt_env or {})
        self.catalog_conn_id, self.tiers = catalog_conn_id, tiers

    def make_runner(self) -> DbtRunner:
        profile_target = None
        if self.dbt_conn_id:
            profile_target = profile_target_from_connection(BaseHook.get_connection(self.dbt_conn_id))
        return DbtRunner(
            self.project_dir,
            profiles_dir=self.profiles_dir,
            profile_target=profile_target,
            target=self.target,
            env=self.dbt_env,
        )

    def queue_store(self) -> QueueStore:
        return CatalogHook(self.catalog_conn_id).get_queue_store()


def combine_rounds(earlier: Mapping[str, Any] | None, latest: Mapping[str, Any]) -> dict[str, Any]:
    """One report for a drain that ran in several rounds (it waited for held work in between)."""
    if earlier is None:
        return {**latest, "rounds": 1}
    combined = dict(latest)
    combined["owned"] = earlier["owned"] or latest["owned"]
    for key in ("requeued", "batches"):
        combined[key] = [*earlier[key], *latest[key]]
    for key in ("claimed", "built", "reused", "failed"):
        combined[key] = sorted([*earlier.get(key, []), *latest[key]])
    combined["rounds"] = earlier["rounds"] + 1
    return combined


class DbtEnqueueOperator(_DbtQueueOperator):
    """Queue the dbt models a selector resolves to; publish the queue's Asset.

    XCom (return value): ``request_id``, ``status`` (queued or noop), ``merged`` (``new_pending``,
    ``already_pending``, ``already_running`` -> model unique ids) and ``excluded``. The request is for the
    run's slot: the catalog slot the models' pass completes.

    :param selector: dbt selector, e.g. ``source:field_ops.work_orders+`` (templated).
    :param command: the dbt command: ``build`` (default), ``run``, ``test``, ``seed`` or ``snapshot``. Only
        requests with the same command, flags and target share a batch.
    :param full_refresh: ``--full-refresh`` (``build``, ``run`` and ``seed`` only); such a pass always builds.
    :param dbt_vars: ``--vars``, a mapping (templated).
    :param exclude_selector: dbt's ``--exclude`` selector (templated).
    :param force: build the models on their next pass even when nothing they read has changed.
    :param project_dir: the dbt project directory (templated).
    :param environment: queue environment; one worker owns each (templated).
    :param profiles_dir: directory holding ``profiles.yml`` (templated; default: the project directory).
    :param dbt_conn_id: Airflow connection holding the dbt target instead of a profiles directory.
    :param target: dbt target name (templated).
    :param exclude: materializations not queued (default: views).
    :param dbt_env: extra environment variables for dbt.
    :param catalog_conn_id: catalog connection (default: ``[leastaction] catalog_conn_id``).
    :param tiers: freshness tier policy (tier of each model: the mapping, ``meta.tier``, or the default).
    """

    template_fields: Sequence[str] = (
        *_DbtQueueOperator.template_fields, "selector", "dbt_vars", "exclude_selector"
    )  # fmt: skip

    def __init__(
        self,
        *,
        selector: str,
        exclude: Sequence[str] = DEFAULT_EXCLUDED,
        command: str = "build",
        full_refresh: bool = False,
        dbt_vars: Mapping[str, Any] | None = None,
        exclude_selector: str | None = None,
        force: bool = False,
        **kwargs,
    ):
        environment = kwargs.get("environment", "default")
        kwargs.setdefault("outlets", [dbt_queue_asset(environment)])
        super().__init__(**kwargs)
        try:
            if "{{" not in str(selector):
                validate_selector(selector)
            if "{{" not in str(dbt_vars) + str(exclude_selector):
                request_key(environment, command=command, full_refresh=full_refresh, dbt_vars=dbt_vars,
                            exclude=exclude_selector)  # fmt: skip
        except ConfigurationError as exc:
            raise ConfigurationError(f"task {self.task_id!r}: {exc}") from exc
        self.selector, self.exclude, self.command = selector, tuple(exclude), command
        self.full_refresh, self.dbt_vars, self.exclude_selector = full_refresh, dbt_vars, exclude_selector
        self.force = force

    def execute(self, context) -> dict[str, Any]:
        planner = Planner(self.make_runner(), self.exclude, self.tiers)
        slot = context_slot(context)
        report = submit(
            planner, self.queue_store(), self.environment, self.selector, command=self.command,
            full_refresh=self.full_refresh, dbt_vars=self.dbt_vars, exclude_selector=self.exclude_selector,
            force=self.force, slot=slot.instant if slot else None, requested_by=ti_identity(context),
        )  # fmt: skip
        merged = {k: len(v) for k, v in report.merged.items()}
        self.log.info("selector %r -> %s; excluded %d", self.selector, merged or report.status, len(report.excluded))
        return report.as_dict()


class DbtDrainOperator(_DbtQueueOperator):
    """Drain an environment's queue: claim compatible batches and build each with one ``dbt build``.

    A model whose code and inputs have not changed since its last build is reused, not built (see the dbt
    queue guide), and every model built or reused completes a slot of its catalog task. A second drain while
    one runs exits without claiming. XCom (return value): ``owned``, ``lease_lost``, ``requeued``,
    ``claimed``, ``built``, ``reused``, ``failed``, ``next_eligible_at``, ``rounds`` and one entry per batch
    (with each model's reason), over every round.

    :param project_dir: the dbt project directory (templated).
    :param environment: queue environment (templated).
    :param profiles_dir: directory holding ``profiles.yml`` (templated; default: the project directory).
    :param dbt_conn_id: Airflow connection holding the dbt target instead of a profiles directory.
    :param target: dbt target name (templated).
    :param grace: how long a silent worker keeps its lease and batches (timedelta or seconds).
    :param heartbeat_interval: seconds between heartbeats.
    :param max_batch_size: most models in one dbt selection.
    :param max_batches: stop after this many batches per round (default: until nothing is eligible).
    :param max_wait: when work is left that a tier holds back (or a follow-up owed by a model requested
        during its build), the drain waits for it deferred, holding neither a worker slot nor the lease,
        and drains again at ``next_eligible_at``, provided that time is within ``max_wait`` of the end of
        the round that found the work. Each wait is bounded, not the drain: held work found in any round
        is waited for, so with ``max_wait`` at least the longest minimum interval of the tiers every row
        is built (timedelta or seconds; default 1 hour, the default tiers' longest; 0 or None: never
        wait).
    :param fail_on_model_error: fail the task when a model ended failed (the queue has recorded it).
    :param state_aware: reuse a model whose code and inputs have not changed since its last build instead
        of building it again (see the dbt queue guide); False builds every claimed model.
    :param source_tasks: source (``source_name.table``) -> the catalog task that loads it (an
        :func:`~airflow_leastaction.refs.airflow_task` or :func:`~airflow_leastaction.refs.external_task`);
        wins over the source's ``meta: {leastaction: {task, project}}``.
    :param catalog_project: the catalog project of the models' tasks (default: the dbt project's name).
    :param model_cron: each model's pass completes this cron's slot covering its request's slot (default:
        the request's slot itself; the models' tasks are then ad hoc).
    :param model_timezone: the timezone ``model_cron`` is read in.
    :param dbt_env: extra environment variables for dbt.
    :param catalog_conn_id: catalog connection (default: ``[leastaction] catalog_conn_id``).
    :param tiers: freshness tier policy (priority, minimum interval, aging).
    """

    def __init__(
        self,
        *,
        grace: dt.timedelta | float = dt.timedelta(minutes=5),
        heartbeat_interval: float = 10.0,
        max_batch_size: int = 100,
        max_batches: int | None = None,
        max_wait: dt.timedelta | float | None = DEFAULT_MAX_WAIT,
        fail_on_model_error: bool = True,
        state_aware: bool = True,
        source_tasks: Mapping[str, TaskIdentity] | None = None,
        catalog_project: str | None = None,
        model_cron: str | None = None,
        model_timezone: str = "UTC",
        **kwargs,
    ):
        super().__init__(**kwargs)
        try:
            self.pass_options = PassOptions(
                state_aware, True, dict(source_tasks or {}), catalog_project, deployment_project(), model_cron,
                model_timezone,
            )  # fmt: skip
            TaskMeta(cron=model_cron, timezone=model_timezone)  # an invalid cron or zone fails at parse time
        except ConfigurationError as exc:
            raise ConfigurationError(f"task {self.task_id!r}: {exc}") from exc
        if max_wait is not None and not isinstance(max_wait, dt.timedelta):
            max_wait = dt.timedelta(seconds=float(max_wait))
        if max_wait is not None and max_wait < dt.timedelta(0):
            raise ConfigurationError(f"task {self.task_id!r}: max_wait must not be negative, got {max_wait}")
        self.max_wait = max_wait or dt.timedelta(0)
        self.grace = grace if isinstance(grace, dt.timedelta) else dt.timedelta(seconds=float(grace))
        if heartbeat_interval <= 0 or heartbeat_interval >= self.grace.total_seconds():
            raise ConfigurationError(
                f"task {self.task_id!r}: heartbeat_interval ({heartbeat_interval}s) must be positive and "
                "shorter "
                f"than grace ({self.grace})"
            )
        if max_batch_size < 1:
            raise ConfigurationError(f"task {self.task_id!r}: max_batch_size must be at least 1")
        self.heartbeat_interval, self.max_batch_size = heartbeat_interval, max_batch_size
        self.max_batches, self.fail_on_model_error = max_batches, fail_on_model_error

    def execute(self, context) -> dict[str, Any]:
        return self._round(context, None)

    def execute_complete(self, context, event: Mapping[str, Any]) -> dict[str, Any]:
        """Resume after waiting for held work: drain again. (Events of waits that began before the bound
        was counted per wait also carry the drain's start; it is no longer read.)"""
        return self._round(context, event["earlier"])

    def _round(self, context, earlier: dict | None) -> dict[str, Any]:
        report = combine_rounds(earlier, self._drain(context))
        wake = self._wake_at(report, found=queue_clock.utcnow())
        if wake is not None:
            from airflow_leastaction.triggers.held_work import HeldWorkTrigger

            self.log.info("held work becomes eligible at %s; waiting for it (deferred)", wake.isoformat())
            carry = {"earlier": report}
            self.defer(trigger=HeldWorkTrigger(wake.isoformat(), carry), method_name="execute_complete")
        if self.fail_on_model_error and report["failed"]:
            context["ti"].xcom_push(key="return_value", value=report)
            raise DbtBuildFailedError(self.environment, report["failed"])
        return report

    def _wake_at(self, report: Mapping[str, Any], found: dt.datetime) -> dt.datetime | None:
        """When to drain again (None: done), for held work ``found`` at the end of a round. Only the lease
        owner waits; another worker owns the rest.

        The bound is per wait, counted from ``found``: a follow-up owed to a model this drain built is
        eligible its tier's minimum interval after that build, which may be long past the drain's start
        but is never past ``found`` plus that interval.
        """
        if not report["owned"] or report["lease_lost"] or not report["next_eligible_at"]:
            return None
        wake = dt.datetime.fromisoformat(report["next_eligible_at"])
        if wake > found + self.max_wait:
            self.log.info(
                "held work becomes eligible at %s, more than max_wait (%s) from now; it waits for the "
                "next run of this DAG (new demand)",
                wake.isoformat(),
                self.max_wait,
            )
            return None
        return wake

    def _drain(self, context) -> dict[str, Any]:
        me = ti_identity(context)
        same_task = same_task_prefix(me)

        def is_alive(batch: Mapping) -> bool | None:
            # A stale batch of this very task instance is a previous try of ours: it is not alive.
            return False if batch.get("airflow_ti") == me else airflow_task_alive(batch)

        worker = QueueWorker(
            self.queue_store(),
            self.make_runner(),
            self.environment,
            owner=f"{same_task}try{context['ti'].try_number}:{default_owner()}",
            policy=self.tiers,
            grace=self.grace,
            heartbeat_interval=self.heartbeat_interval,
            max_batch_size=self.max_batch_size,
            airflow_ti=me,
            is_alive=is_alive,
            same_task=same_task,
            passes=self.pass_options,
        )
        report = worker.drain(self.max_batches).as_dict()
        if openlineage_installed():  # each batch a run event; without the provider nothing is imported
            from airflow_leastaction.lineage.facets import emit_batch_events

            emit_batch_events(report, context["ti"], self.environment)
        if not report["owned"]:
            self.log.info("environment %r is being drained by another worker; nothing claimed", self.environment)
        if report["lease_lost"]:
            self.log.warning(
                "environment %r was taken over by another worker; its unfinished models went back to it",
                self.environment,
            )
        self.log.info(
            "claimed %d, built %d, reused %d, failed %d model(s) in %d batch(es)",
            len(report["claimed"]),
            len(report["built"]),
            len(report["reused"]),
            len(report["failed"]),
            len(report["batches"]),
        )
        return report
