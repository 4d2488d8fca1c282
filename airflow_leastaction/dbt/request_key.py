"""The demand key: what a request asks dbt to do, and which requests may share one dbt command. Pure logic.

Two requests share a batch only when their keys are equal: same environment, dbt command, ``--full-refresh``,
``--vars``, ``--exclude`` selector and target (plus the queue's own mode and excluded materializations). A
model requested under two keys is two queue rows with their own history. A key that dbt would refuse
(``--full-refresh`` with ``test``) is refused when the request is made, before anything is recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from airflow_leastaction.exceptions import DbtRequestError

#: The dbt commands a request may ask for.
COMMANDS = ("build", "run", "test", "seed", "snapshot")
#: Commands that write the relation of each node they select: their passes are the node's builds, and only
#: they may be skipped when nothing they would read has changed. ``test`` writes nothing and always runs.
WRITING_COMMANDS = frozenset({"build", "run", "seed", "snapshot"})
#: Commands that take ``--full-refresh``.
FULL_REFRESH_COMMANDS = frozenset({"build", "run", "seed"})
#: The dbt resource type a command's selector is resolved to.
RESOURCE_TYPES = {"build": "model", "run": "model", "test": "model", "seed": "seed", "snapshot": "snapshot"}


@dataclass(frozen=True)
class BatchKey:
    """Rows share one dbt command only when every field matches.

    :param environment: the queue environment (one worker owns each).
    :param action: the dbt command (:data:`COMMANDS`).
    :param mode: the queue's scheduling mode.
    :param exclusions: materializations left out of the queue (canonical text, see ``exclusions_key``).
    :param full_refresh: ``--full-refresh``.
    :param dbt_vars: ``--vars`` as canonical JSON text ("" for none).
    :param exclude: dbt's ``--exclude`` selector ("" for none).
    :param target: dbt's ``--target`` ("" for the profile's default).
    """

    environment: str
    action: str = "build"
    mode: str = "default"
    exclusions: str = "view"
    full_refresh: bool = False
    dbt_vars: str = ""
    exclude: str = ""
    target: str = ""

    @property
    def digest(self) -> str:
        """The key's fields but the environment, hashed: part of the unique index of active rows."""
        return demand_digest(
            self.action, self.mode, self.exclusions, self.full_refresh, self.dbt_vars, self.exclude, self.target
        )

    @property
    def writes(self) -> bool:
        return self.action in WRITING_COMMANDS

    def dbt_args(self) -> list[str]:
        """The flags this key adds to its dbt command (the target is the runner's)."""
        args = ["--full-refresh"] if self.full_refresh else []
        if self.dbt_vars:
            args += ["--vars", self.dbt_vars]
        if self.exclude:
            args += ["--exclude", self.exclude]
        return args

    def variables(self) -> dict:
        return json.loads(self.dbt_vars) if self.dbt_vars else {}


def demand_digest(
    action: str, mode: str, exclusions: str, full_refresh: bool, dbt_vars: str, exclude: str, target: str
) -> str:
    text = json.dumps([action, mode, exclusions, bool(full_refresh), dbt_vars, exclude, target])
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_vars(value: Mapping | str | None) -> str:
    """``--vars`` as canonical JSON text: a mapping, or the text of a JSON object; "" for none."""
    if value is None or value == "" or value == {}:
        return ""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise DbtRequestError(f'--vars must be a JSON object, e.g. \'{{"day": "2026-11-29"}}\': {exc}') from exc
    if not isinstance(value, Mapping):
        raise DbtRequestError(f"--vars must be a JSON object (name -> value), got {value!r}")
    if any(not isinstance(k, str) or not k for k in value):
        raise DbtRequestError(f"--vars names must be non-empty strings, got {sorted(map(repr, value))}")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def request_key(
    environment: str,
    *,
    command: str = "build",
    full_refresh: bool = False,
    dbt_vars: Mapping | str | None = None,
    exclude: str | None = None,
    target: str | None = None,
    exclusions: str = "view",
    mode: str = "default",
) -> BatchKey:
    """The key of a request, or :class:`DbtRequestError` naming what dbt would refuse."""
    if command not in COMMANDS:
        raise DbtRequestError(f"dbt command {command!r} cannot be queued; one of {', '.join(COMMANDS)}")
    if full_refresh and command not in FULL_REFRESH_COMMANDS:
        raise DbtRequestError(
            f"--full-refresh does not apply to dbt {command} (only to {', '.join(sorted(FULL_REFRESH_COMMANDS))})"
        )
    if exclude is not None and not isinstance(exclude, str):
        raise DbtRequestError(f"--exclude must be a dbt selector string, got {exclude!r}")
    if target is not None and not isinstance(target, str):
        raise DbtRequestError(f"target must be a dbt target name, got {target!r}")
    return BatchKey(
        environment,
        command,
        mode,
        exclusions,
        bool(full_refresh),
        canonical_vars(dbt_vars),
        " ".join((exclude or "").split()),
        (target or "").strip(),
    )
