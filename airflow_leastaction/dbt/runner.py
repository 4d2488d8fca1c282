"""The one module that invokes dbt.

Every invocation is a subprocess with its own ``--target-path`` (dbt's in-process runner is not safe to
use concurrently). Working directory, environment and profiles directory are set up in context managers
and removed in ``finally``. Failures raise :class:`DbtInvocationError` carrying dbt's exit code and output.

dbt's partial-parse file is shared between invocations: each target directory is seeded with the
project's latest ``partial_parse.msgpack`` and a refreshed one is copied back, so a project is parsed
once, not once per command.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from airflow_leastaction.exceptions import DbtInvocationError, DbtProjectError

log = logging.getLogger(__name__)

PARTIAL_PARSE = "partial_parse.msgpack"
#: Makes "no node matched" an error instead of an empty, successful listing.
NO_NODES_IS_ERROR = '{"error": ["NoNodesForSelectionCriteria"]}'
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # A worker killed with SIGKILL must not leave dbt running and holding the warehouse's write lock.
    with suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def dbt_executable() -> str:
    beside = Path(sys.executable).parent / "dbt"
    if beside.exists():
        return str(beside)
    found = shutil.which("dbt")
    if not found:
        raise DbtProjectError(
            "dbt",
            "the dbt executable is not installed: install airflow-leastaction with its dbt extra, from a clone "
            "of its repository (pip install -c constraints/airflow-<your Airflow minor>.txt '.[dbt]') or from a "
            "wheel built there (pip install 'airflow_leastaction-<version>-py3-none-any.whl[dbt]'), plus your "
            "warehouse's adapter",
        )
    return found


def profiles_yaml(profile: str, target: str, outputs: Mapping) -> str:
    """A ``profiles.yml`` with one profile and one target (JSON is valid YAML)."""
    return json.dumps({profile: {"target": target, "outputs": {target: dict(outputs)}}}, indent=2)


@dataclass
class NodeResults:
    """What dbt reported per node in ``run_results.json``."""

    statuses: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    tests_of: dict[str, list[str]] = field(default_factory=dict)

    def merge(self, later: NodeResults) -> NodeResults:
        """Results of a retry or rerun override earlier ones node by node."""
        tests = {k: list(v) for k, v in self.tests_of.items()}
        for model, ids in later.tests_of.items():
            tests[model] = sorted(set(tests.get(model, [])) | set(ids))
        return NodeResults({**self.statuses, **later.statuses}, {**self.messages, **later.messages}, tests)

    def failure_messages(self) -> list[str]:
        return [self.messages.get(uid, "") for uid, s in self.statuses.items() if s in ("error", "fail")]


@dataclass
class Invocation:
    """One finished dbt subprocess."""

    command: list[str]
    exit_code: int
    output: str
    target_path: Path

    def node_results(self) -> NodeResults:
        return read_node_results(self.target_path)

    def raise_for_exit(self) -> None:
        if self.exit_code != 0:
            raise DbtInvocationError(self.command, self.exit_code, self.output)


def read_node_results(target_path: Path) -> NodeResults:
    """Node statuses from ``run_results.json``; failing tests are attached to their model via the manifest."""
    path = target_path / "run_results.json"
    if not path.exists():
        return NodeResults()
    data = json.loads(path.read_text())
    res = NodeResults()
    for r in data.get("results", []):
        res.statuses[r["unique_id"]] = r.get("status") or ""
        res.messages[r["unique_id"]] = r.get("message") or ""
    failed_tests = [u for u, s in res.statuses.items() if u.startswith("test.") and s in ("fail", "error")]
    manifest = target_path / "manifest.json"
    if failed_tests and manifest.exists():
        nodes = json.loads(manifest.read_text()).get("nodes", {})
        for test_id in failed_tests:
            node = nodes.get(test_id, {})
            model = node.get("attached_node") or next(iter(node.get("depends_on", {}).get("nodes", [])), None)
            if model:
                res.tests_of.setdefault(model, []).append(test_id)
    return res


class DbtRunner:
    """Runs dbt commands against one project.

    :param project_dir: the dbt project (holds ``dbt_project.yml``).
    :param profiles_dir: directory holding ``profiles.yml`` (default: the project directory).
    :param profile_target: instead of a profiles directory, the target's fields (e.g. from an Airflow
        connection): a ``profiles.yml`` is written to a temporary directory per session.
    :param target: dbt target name (``--target``).
    :param env: extra environment variables for dbt.
    """

    def __init__(
        self,
        project_dir: str | os.PathLike,
        *,
        profiles_dir: str | os.PathLike | None = None,
        profile_target: Mapping | None = None,
        target: str | None = None,
        env: Mapping[str, str] | None = None,
    ):
        self.project_dir = Path(project_dir).resolve()
        if not (self.project_dir / "dbt_project.yml").exists():
            raise DbtProjectError(self.project_dir, "no dbt_project.yml there")
        self.profiles_dir = Path(profiles_dir).resolve() if profiles_dir else None
        if self.profiles_dir is None and profile_target is None:
            self.profiles_dir = self.project_dir
        if self.profiles_dir is not None and not (self.profiles_dir / "profiles.yml").exists():
            raise DbtProjectError(self.project_dir, f"no profiles.yml in profiles directory {self.profiles_dir}")
        self.profile_target = dict(profile_target) if profile_target is not None else None
        self.target = target
        self.env = dict(env or {})
        self.parse_cache = self.project_dir / "target" / PARTIAL_PARSE

    def profile_name(self) -> str:
        for line in (self.project_dir / "dbt_project.yml").read_text().splitlines():
            if line.startswith("profile:"):
                return line.split(":", 1)[1].strip().strip("'\"")
        raise DbtProjectError(self.project_dir, "dbt_project.yml names no profile")

    def project_vars(self) -> dict:
        """``vars`` of ``dbt_project.yml`` (as written: dbt renders none of them)."""
        import yaml

        data = yaml.safe_load((self.project_dir / "dbt_project.yml").read_text()) or {}
        found = data.get("vars") or {}
        return dict(found) if isinstance(found, Mapping) else {}

    @contextmanager
    def session(self, target: str | None = None) -> Iterator[DbtSession]:
        """A scratch directory for a group of invocations (a batch and its retries); removed at the end.

        :param target: the dbt target of this session's commands (default: the runner's).
        """
        root = Path(tempfile.mkdtemp(prefix="leastaction-dbt-"))
        try:
            with self._profiles(root) as profiles_dir:
                yield DbtSession(self, root, profiles_dir, target or self.target)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    @contextmanager
    def _profiles(self, root: Path) -> Iterator[Path]:
        if self.profile_target is None:
            yield self.profiles_dir
            return
        path = root / "profiles"
        path.mkdir()
        target = self.target or "airflow"
        (path / "profiles.yml").write_text(profiles_yaml(self.profile_name(), target, self.profile_target))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_VERSION_CHECK": "false"})
        env.update(self.env)
        return env

    def seed_parse_cache(self, target_path: Path) -> None:
        if self.parse_cache.exists():
            shutil.copyfile(self.parse_cache, target_path / PARTIAL_PARSE)

    def keep_parse_cache(self, target_path: Path) -> None:
        fresh = target_path / PARTIAL_PARSE
        if not fresh.exists():
            return
        self.parse_cache.parent.mkdir(parents=True, exist_ok=True)
        # Write beside, then rename: concurrent invocations never see a half-written file.
        tmp = self.parse_cache.with_name(f".{PARTIAL_PARSE}.{uuid.uuid4().hex}")
        shutil.copyfile(fresh, tmp)
        os.replace(tmp, self.parse_cache)


class DbtSession:
    """Invocations sharing a profiles directory and a scratch root; each gets its own target path."""

    def __init__(self, runner: DbtRunner, root: Path, profiles_dir: Path, target: str | None = None):
        self.runner = runner
        self.root = root
        self.profiles_dir = profiles_dir
        self.target = target
        self._count = 0

    def invoke(self, args: Sequence[str], *, on_start=None, echo: int = logging.INFO) -> Invocation:
        """Run ``dbt <args>`` to completion, logging its output at level ``echo``.

        ``on_start(pid)`` is called once the process exists.
        """
        self._count += 1
        target_path = self.root / f"target-{self._count}"
        target_path.mkdir()
        self.runner.seed_parse_cache(target_path)
        command = [
            dbt_executable(),
            *args,
            "--project-dir",
            str(self.runner.project_dir),
            "--profiles-dir",
            str(self.profiles_dir),
            "--target-path",
            str(target_path),
            "--log-path",
            str(target_path / "logs"),
        ]
        if self.target:
            command += ["--target", self.target]
        log.info("running %s", " ".join(command))
        proc = subprocess.Popen(
            command,
            cwd=self.runner.project_dir,
            env=self.runner.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_die_with_parent,
        )
        if on_start is not None:
            on_start(proc.pid)
        lines = []
        try:
            for line in proc.stdout:
                lines.append(line)
                log.log(echo, "dbt: %s", line.rstrip())
        finally:
            proc.stdout.close()
            exit_code = proc.wait()
        if exit_code in (0, 1):
            self.runner.keep_parse_cache(target_path)
        return Invocation(command, exit_code, "".join(lines), target_path)

    def list_models(self, selector: str, *, exclude: str = "", resource_type: str = "model") -> list[dict]:
        """``dbt ls`` of the nodes ``selector`` resolves to (less ``exclude``); a selector matching nothing
        raises."""
        inv = self.invoke(
            [
                "ls",
                "-q",
                "--resource-type",
                resource_type,
                "--output",
                "json",
                "--output-keys",
                "unique_id",
                "name",
                "fqn",
                "config",
                "--select",
                selector,
                *(["--exclude", exclude] if exclude else []),
                "--warn-error-options",
                NO_NODES_IS_ERROR,
            ],
            echo=logging.DEBUG,
        )
        inv.raise_for_exit()
        return [json.loads(line) for line in inv.output.splitlines() if line.startswith("{")]

    def build(
        self, selection: Sequence[str], *, command: str = "build", args: Sequence[str] = (), on_start=None
    ) -> Invocation:
        """``dbt <command> --select <selection> <args>`` (``build`` by default)."""
        return self.invoke([command, "--select", *selection, *args], on_start=on_start)

    def manifest(self) -> dict:
        """The project's manifest, from ``dbt parse``; a project dbt cannot parse raises with dbt's error."""
        inv = self.invoke(["parse"], echo=logging.DEBUG)
        inv.raise_for_exit()
        return json.loads((inv.target_path / "manifest.json").read_text())

    def source_freshness(self, sources: Sequence[str]) -> dict[str, str | None]:
        """``dbt source freshness`` of ``sources`` (``source_name.table`` each): unique id -> the newest
        ``max_loaded_at`` dbt found (None where it could not tell). Stale sources are not an error here."""
        inv = self.invoke(["source", "freshness", "--select", *(f"source:{s}" for s in sources)])
        path = inv.target_path / "sources.json"
        if not path.exists():
            raise DbtInvocationError(inv.command, inv.exit_code, inv.output)
        results = json.loads(path.read_text()).get("results", [])
        return {r["unique_id"]: r.get("max_loaded_at") if r.get("status") != "runtime error" else None for r in results}

    def retry(self, previous: Invocation, *, on_start=None) -> Invocation:
        """``dbt retry`` of the failed and skipped nodes of ``previous``."""
        return self.invoke(["retry", "--state", str(previous.target_path)], on_start=on_start)
