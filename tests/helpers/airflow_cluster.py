"""A real Airflow deployment made of separate processes, for end-to-end tests.

Each component (``scheduler``, ``dag-processor``, ``triggerer``, ``api-server``, or anything else the
``airflow`` command runs) is its own process in its own process group, with its log in a temp dir. The
API server listens on a free port; the simple auth manager has a known login. Everything Airflow needs
is passed through the environment, so the processes share one configuration without an airflow.cfg
race.

Typical use::

    with AirflowCluster(dags_folder, sql_alchemy_conn=pg_url, catalog_url=catalog) as cluster:
        cluster.unpause("my_dag")
        run = cluster.trigger("my_dag")
        cluster.wait_for_run("my_dag", run["dag_run_id"])

On failure, :meth:`AirflowCluster.describe` returns the tail of every component's log.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import httpx

from tests.helpers.airflow_databases import copy_migrated
from tests.helpers.processes import (
    describe_processes,
    dump_stacks,
    group_members,
    instance_base,
    instance_names,
    processes,
    signal_group,
    subcommand,
)

DEFAULT_COMPONENTS = ("scheduler", "dag-processor", "triggerer", "api-server")
#: The production shape of docker/docker-compose.yaml: two triggerers and two Celery workers.
CELERY_COMPONENTS = (
    "scheduler",
    "dag-processor",
    "api-server",
    "triggerer",
    "triggerer",
    "celery worker",
    "celery worker",
)
FINISHED_RUN_STATES = {"success", "failed"}
#: Seconds a component gets to exit on SIGTERM when a test is done with its deployment, before SIGKILL.
#: Short: nothing is checked then. The clean-shutdown test stops its deployment with :meth:`stop`'s own
#: 30 seconds and fails if any component needed SIGKILL.
TEARDOWN_GRACE = 3.0
ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin"


class ClusterError(RuntimeError):
    """The cluster did not reach the state a test waited for; the message carries the component logs."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def celery_settings(broker_url: str, sql_alchemy_conn: str) -> dict[str, str]:
    """Environment of a CeleryExecutor deployment: Redis as the broker, Airflow's database for results."""
    return {
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CELERY__BROKER_URL": broker_url,
        "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{sql_alchemy_conn}",
        # Two workers on a small machine: a few task processes each, not one per core of a big host.
        "AIRFLOW__CELERY__WORKER_CONCURRENCY": "4",
    }


def fresh_pg_database(admin_url: str, prefix: str = "la_e2e") -> tuple[str, callable]:
    """Create an empty PostgreSQL database next to ``admin_url``; return its URL and a drop function."""
    import sqlalchemy as sa

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return admin_url.rsplit("/", 1)[0] + f"/{name}", drop


@dataclass
class Component:
    name: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen | None = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class AirflowCluster:
    """Airflow as separate processes sharing one environment.

    :param dags_folder: the DAGs folder every component reads.
    :param sql_alchemy_conn: Airflow's metadata database (default: SQLite in the home dir).
    :param catalog_url: the catalog's SQLAlchemy URL, passed as the default ``leastaction_catalog``
        connection (default: the embedded SQLite file under the home dir).
    :param components: ``airflow`` subcommands to run, one process each (``"celery worker"`` included), with
        their options if any (``"triggerer --queues team_a"``); a command listed twice runs twice, as
        instances ``name-1``, ``name-2`` (see :func:`instance_names`).
    :param home: AIRFLOW_HOME (default: a new temp dir, also holding the logs).
    :param port: API server port (default: a free one).
    :param env: extra environment, applied last (``AIRFLOW__SECTION__KEY`` overrides).
    :param python: the interpreter of the virtualenv whose Airflow runs (default: the suite's own).
    :param component_env: extra environment of one component only, by its command as listed in
        ``components`` (``{"triggerer": {...}}``), applied after ``env``.
    """

    dags_folder: Path
    sql_alchemy_conn: str | None = None
    catalog_url: str | None = None
    components: tuple[str, ...] = DEFAULT_COMPONENTS
    home: Path | None = None
    port: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable
    component_env: dict[str, dict[str, str]] = field(default_factory=dict)
    _procs: list[Component] = field(default_factory=list, init=False)
    _token: str | None = field(default=None, init=False)
    _groups: set[int] = field(default_factory=set, init=False)
    _down: set[str] = field(default_factory=set, init=False)
    #: Components whose process group was still alive ``timeout`` seconds after SIGTERM (set by :meth:`stop`).
    needed_sigkill: list[str] = field(default_factory=list, init=False)
    #: What was still alive in each component's group when it needed SIGKILL: one line per process.
    sigkill_found: dict[str, list[str]] = field(default_factory=dict, init=False)
    _stopped: list[Component] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.home = Path(self.home or tempfile.mkdtemp(prefix="leastaction-cluster-"))
        self.port = self.port or free_port()
        self.log_dir = self.home / "component-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        passwords = self.home / "passwords.json"
        passwords.write_text(json.dumps({ADMIN_USER: ADMIN_PASSWORD}))
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.environ = self._environment(passwords)

    def _environment(self, passwords: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
                "AIRFLOW__CORE__PARALLELISM": "8",
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.sql_alchemy_conn or f"sqlite:///{self.home}/airflow.db",
                "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
                # The log servers of the scheduler and triggerer default to fixed ports another Airflow may hold.
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
                "AIRFLOW__API__PORT": str(self.port),
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__WORKERS": "1",
                "AIRFLOW__API__BASE_URL": self.base_url,
                # One secret for every process: tokens minted by the scheduler must verify in the API server.
                "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
                # One Fernet key too: a component that finds no airflow.cfg writes one with a key of its own
                # (the database copied from a template left none), and a trigger's kwargs encrypted by the
                # dag-processor (an asset watcher's) would not decrypt in the triggerer.
                "AIRFLOW__CORE__FERNET_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
                "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
                "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
                "AIRFLOW__LEASTACTION__POLL_INTERVAL": "2",
                # The example dbt worker ends once the queue is empty instead of waiting for held work.
                "FIELD_OPS_DRAIN_MAX_WAIT_MINUTES": "0",
                "PYTHONUNBUFFERED": "1",
                # A component that hangs writes its threads' stacks to its log on SIGABRT (stop(diagnose=True)).
                "PYTHONFAULTHANDLER": "1",
            }
        )
        if self.catalog_url:
            env["AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT"] = json.dumps(
                {"conn_type": "leastaction_catalog", "extra": {"url": self.catalog_url}}
            )
        env.update(self.env)
        return env

    # -- processes ---------------------------------------------------------------------------------------
    def run(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        """Run a one-off ``airflow`` command in the cluster's environment."""
        return self._run([self.python, "-m", "airflow", *args], timeout=timeout, check=check)

    def run_leastaction(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        """Run ``airflow-leastaction`` in the cluster's environment."""
        return self._run([str(Path(self.python).with_name("airflow-leastaction")), *args], timeout=timeout, check=check)

    def _run(self, argv: list[str], *, timeout: float, check: bool) -> subprocess.CompletedProcess:
        done = subprocess.run(argv, env=self.environ, capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise ClusterError(
                f"{Path(argv[0]).name} {' '.join(argv[1:])} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
            )
        return done

    def migrate(self) -> None:
        """Airflow's database as ``airflow db migrate`` makes it (a copy of the run's migrated template) and,
        when the catalog is external, ``airflow-leastaction db upgrade``."""
        copy_migrated(self.environ, self.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
        if self.catalog_url:
            self.run_leastaction("db", "upgrade")

    def start(self, timeout: float = 120) -> AirflowCluster:
        """Start every component and wait until the API server reports them healthy."""
        for name, command in instance_names(self.components):
            self._procs.append(self._spawn(name, self._argv(name, command), self._own_env(command)))
        self.wait_healthy(timeout)
        return self

    def add(self, command: str) -> Component:
        """Start one more component while the cluster runs (``"triggerer --queues team_a"``), named as
        :meth:`start` names it, numbered after the instances of the same command; returns it at once."""
        base = instance_base(command)
        taken = {c.name for c in self._procs + self._stopped}
        name = (
            base if base not in taken else next(f"{base}-{n}" for n in itertools.count(2) if f"{base}-{n}" not in taken)
        )
        comp = self._spawn(name, self._argv(name, command), self._own_env(command))
        self._procs.append(comp)
        return comp

    def _argv(self, name: str, command: str) -> list[str]:
        argv = [self.python, "-m", "airflow", *command.split()]
        if subcommand(command) == "api-server":
            argv += ["--port", str(self.port), "--host", "127.0.0.1"]
        if subcommand(command) == "celery worker":
            # Celery refuses two workers of one node name: each instance is its own node.
            argv += ["--celery-hostname", f"{name}@%h"]
        return argv

    def _own_env(self, command: str) -> dict[str, str]:
        """A component's own environment: its log server ports (two workers or triggerers on one host
        need two), ``[triggerer] queues_enabled`` for a triggerer started with ``--queues`` (Airflow
        refuses the option without it), then ``component_env`` of its command."""
        own = {
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
        }
        if subcommand(command) == "triggerer" and "--queues" in command.split():
            own["AIRFLOW__TRIGGERER__QUEUES_ENABLED"] = "True"
        return {**own, **self.component_env.get(command, {})}

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Component:
        comp = Component(name, argv, self.log_dir / f"{name}.log")
        log = comp.log_path.open("ab")
        # A session of its own: stopping the group also stops the workers the component forks.
        comp.process = subprocess.Popen(
            argv,
            env={**self.environ, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self._groups.add(comp.process.pid)
        return comp

    def workers(self) -> list[Component]:
        """The running Celery workers."""
        return [c for c in self._procs if "celery" in c.argv and c.name not in self._down]

    def component(self, name: str) -> Component:
        return next(c for c in self._procs if c.name == name)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to a component's process group and to the groups of everything it started (Airflow
        runs each task in a process group of its own): a crash of the machine's share, with ``SIGKILL``.
        Waits for the leader to exit; the cluster then expects it to stay down."""
        comp = self.component(name)
        for group in {comp.process.pid, *(processes()[pid][1] for pid in self.descendants(name))}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, sig)
        comp.process.wait(30)
        self._down.add(name)

    def restart(self, name: str, env: dict[str, str] | None = None) -> Component:
        """Start a component again after :meth:`kill`: the same command in the same environment (plus
        ``env``, such as an armed crash point), a new process (its log goes on in the same file), as a
        supervisor would after a crash."""
        old = self.component(name)
        own = {
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
            **(env or {}),
        }
        comp = self._spawn(name, old.argv, own)
        self._procs[self._procs.index(old)] = comp
        self._down.discard(name)
        return comp

    def descendants(self, name: str) -> set[int]:
        """Every live process started, directly or not, by the component's leader."""
        procs = processes()
        found, frontier = set(), {self.component(name).process.pid}
        while frontier:
            frontier = {pid for pid, (ppid, _) in procs.items() if ppid in frontier} - found
            found |= frontier
        return found

    def stop(self, timeout: float = 30, *, diagnose: bool = False) -> None:
        """SIGTERM each component's process group, then SIGKILL whatever is left after ``timeout``.

        ``diagnose``: before the SIGKILL, a component still alive is sent SIGABRT, on which Python's
        fault handler (enabled in every component) writes each thread's stack to the component's log."""
        for comp in self._procs:
            signal_group(comp, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for comp in self._procs:
            if comp.process is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                comp.process.wait(max(0.1, deadline - time.monotonic()))
            if comp.process.poll() is None or group_members({comp.process.pid}):
                self.needed_sigkill.append(comp.name)
                self.sigkill_found[comp.name] = describe_processes(group_members({comp.process.pid}))
                if diagnose:
                    dump_stacks(group_members({comp.process.pid}))
            # Children (task runners, uvicorn workers) may outlive the leader: clear the whole group.
            signal_group(comp, signal.SIGKILL)
            if comp.process.poll() is None:
                comp.process.wait(10)
        self._stopped.extend(self._procs)
        self._procs.clear()

    def leftover_pids(self) -> list[int]:
        """Processes still alive in any component's process group (should be empty after :meth:`stop`)."""
        return group_members(self._groups)

    def __enter__(self) -> Self:
        self.migrate()
        try:
            return self.start()
        except BaseException:
            self.stop(TEARDOWN_GRACE)
            raise

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            sys.stderr.write(self.describe())
        self.stop(TEARDOWN_GRACE)

    def component_log(self, name: str) -> str:
        """The whole log of a running or stopped component."""
        comp = next(c for c in self._procs + self._stopped if c.name == name)
        return comp.log_path.read_text(errors="replace") if comp.log_path.exists() else ""

    def describe(self) -> str:
        """Where everything is, and the tail of each component's log."""
        parts = [f"cluster home {self.home}, API {self.base_url}, logs {self.log_dir}"]
        for comp in self._procs + self._stopped:
            state = "running" if comp.alive() else f"exited {comp.process.returncode if comp.process else '-'}"
            found = "".join(f"\n  alive at SIGKILL: {line}" for line in self.sigkill_found.get(comp.name, []))
            parts.append(f"----- {comp.name} ({state}) {comp.log_path}{found}\n{comp.tail()}")
        return "\n".join(parts) + "\n"

    # -- REST API ----------------------------------------------------------------------------------------
    def token(self) -> str:
        if self._token is None:
            resp = httpx.post(
                f"{self.base_url}/auth/token", json={"username": ADMIN_USER, "password": ADMIN_PASSWORD}, timeout=30
            )
            resp.raise_for_status()
            self._token = resp.json()["access_token"]
        return self._token

    def api(self, method: str, path: str, *, expect: tuple[int, ...] = (200,), **kwargs) -> dict:
        """Call the API server as the admin (``path`` from the root, e.g. ``/api/v2/dags``)."""
        headers = {"Authorization": f"Bearer {self.token()}"}
        resp = httpx.request(method, f"{self.base_url}{path}", headers=headers, timeout=60, **kwargs)
        if resp.status_code not in expect:
            raise ClusterError(f"{method} {path} -> {resp.status_code}: {resp.text[:2000]}")
        return resp.json() if resp.content else {}

    def wait_healthy(self, timeout: float = 120) -> dict:
        """Wait until the API server answers and every started component reports healthy."""
        wanted = {"scheduler", "triggerer", "dag_processor"} & {
            subcommand(c).replace("-", "_") for c in self.components
        }
        health: dict = {}

        def ready() -> bool:
            nonlocal health
            self._check_alive()
            try:
                health = httpx.get(f"{self.base_url}/api/v2/monitor/health", timeout=5).json()
            except (httpx.HTTPError, ValueError):
                return False
            return all(health.get(name, {}).get("status") == "healthy" for name in wanted)

        self.wait_until(ready, timeout, lambda: f"components healthy (last: {health})")
        return health

    def _check_alive(self) -> None:
        dead = [c.name for c in self._procs if not c.alive() and c.name not in self._down]
        if dead:
            raise ClusterError(f"component(s) exited: {', '.join(dead)}\n{self.describe()}")

    def wait_until(self, condition, timeout: float, what, interval: float = 1.0):
        """Poll ``condition`` until it returns a truthy value; raise with the logs after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                label = what() if callable(what) else what
                raise ClusterError(f"timed out after {timeout:.0f}s waiting for {label}\n{self.describe()}")
            time.sleep(interval)

    def wait_for_dag(self, dag_id: str, timeout: float = 120) -> dict:
        """Wait until the dag-processor has parsed ``dag_id``; fail fast on an import error."""

        def parsed():
            self._check_alive()
            errors = self.api("GET", "/api/v2/importErrors")["import_errors"]
            if errors:
                raise ClusterError(f"import errors: {json.dumps(errors, indent=1)[:4000]}")
            found = self.api("GET", f"/api/v2/dags/{dag_id}", expect=(200, 404))
            return found if found.get("dag_id") == dag_id else None

        return self.wait_until(parsed, timeout, f"DAG {dag_id} to be parsed")

    def unpause(self, dag_id: str) -> dict:
        self.wait_for_dag(dag_id)
        return self.api("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})

    def trigger(self, dag_id: str, logical_date: str | None = None, conf: dict | None = None) -> dict:
        body = {"logical_date": logical_date, "conf": conf or {}}
        return self.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", json=body)

    def backfill(self, dag_id: str, from_date: str, to_date: str, max_active_runs: int = 3) -> dict:
        """Create a backfill of ``dag_id`` over ``[from_date, to_date]`` (logical dates, ISO-8601)."""
        body = {
            "dag_id": dag_id,
            "from_date": from_date,
            "to_date": to_date,
            "max_active_runs": max_active_runs,
            "reprocess_behavior": "none",
        }
        return self.api("POST", "/api/v2/backfills", json=body)

    def wait_for_backfills(self, dag_id: str, timeout: float = 120) -> list[dict]:
        """Wait until every backfill of ``dag_id`` is completed (the scheduler marks it some loops after
        its last run ends; a new backfill of the DAG is refused until then)."""

        def completed():
            found = self.api("GET", "/api/v2/backfills", params={"dag_id": dag_id})["backfills"]
            return found if all(b["completed_at"] for b in found) else None

        return self.wait_until(completed, timeout, f"the backfills of {dag_id} to complete")

    def listing(self, path: str, key: str) -> list[dict]:
        """Every item of a REST listing, page after page (``[api] maximum_page_limit`` caps a page at 100)."""
        items: list[dict] = []
        while True:
            # Ordered by a unique key, so that pages neither repeat nor skip an item.
            page = self.api("GET", path, params={"limit": 100, "offset": len(items), "order_by": "id"})
            items += page[key]
            if not page[key] or len(items) >= page["total_entries"]:
                return items

    def runs(self, dag_id: str) -> list[dict]:
        return self.listing(f"/api/v2/dags/{dag_id}/dagRuns", "dag_runs")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        return self.listing(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances", "task_instances")

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 180) -> dict:
        """Wait until one run is success or failed; return it."""

        def finished():
            self._check_alive()
            run = self.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
            return run if run["state"] in FINISHED_RUN_STATES else None

        return self.wait_until(finished, timeout, f"{dag_id} run {run_id} to finish")

    def wait_for_runs(self, dag_id: str, count: int, timeout: float = 300) -> list[dict]:
        """Wait until ``dag_id`` has at least ``count`` runs, all finished; return them."""

        def finished():
            self._check_alive()
            runs = self.runs(dag_id)
            done = len(runs) >= count and all(r["state"] in FINISHED_RUN_STATES for r in runs)
            return runs if done else None

        return self.wait_until(finished, timeout, f"{count} finished runs of {dag_id}")
