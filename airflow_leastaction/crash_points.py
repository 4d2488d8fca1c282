"""Crash points: the named step boundaries of the writes that take more than one step.

A write of several steps (a late arrival's re-run, an asset event's recording, a spool replay, a dbt
claim and settle, a watcher's emission) declares a :class:`CrashPoint` at each boundary between two
steps and passes it there. A test arms one point by name, in the environment of a real process, and
that process kills itself with SIGKILL when it reaches the point: no ``finally``, no rollback, no flush,
as an out-of-memory kill or a lost machine would stop it. After a restart the test checks that what the
write promises still holds.

``LEASTACTION_CRASH_POINT`` names the armed points, comma-separated; ``name:N`` kills on the N-th pass
(1-based) instead of the first. The variable is read once, at import: an unarmed point costs one lookup
in an empty set, and production never sets the variable. Pure: no Airflow import.
"""

from __future__ import annotations

import os
import signal

#: The environment variable that arms crash points (read once, when this module is imported).
ARMED_VARIABLE = "LEASTACTION_CRASH_POINT"


def _parse(text: str) -> dict[str, int]:
    armed: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, nth = item.partition(":")
        armed[name] = int(nth) if nth else 1
    return armed


_ARMED: dict[str, int] = _parse(os.environ.get(ARMED_VARIABLE, ""))
_PASSES: dict[str, int] = {}
_DECLARED: dict[str, CrashPoint] = {}


class CrashPoint:
    """One named step boundary. Call it where the write has finished one step and not begun the next.

    :param name: dotted, feature first (``late_arrival.after_claim``); unique in the package.
    :param after: the step done when the point is reached, in words (shown by :func:`declared`).
    """

    __slots__ = ("name", "after")

    def __init__(self, name: str, after: str) -> None:
        if name in _DECLARED:
            raise ValueError(f"crash point {name!r} is declared twice")
        self.name = name
        self.after = after
        _DECLARED[name] = self

    def __call__(self) -> None:
        if not _ARMED or self.name not in _ARMED:
            return
        passes = _PASSES.get(self.name, 0) + 1
        _PASSES[self.name] = passes
        if passes >= _ARMED[self.name]:
            os.kill(os.getpid(), signal.SIGKILL)

    def __repr__(self) -> str:
        return f"CrashPoint({self.name!r})"


def declared(prefix: str = "") -> dict[str, CrashPoint]:
    """The crash points declared so far (by the modules imported) whose names start with ``prefix``."""
    return {name: point for name, point in sorted(_DECLARED.items()) if name.startswith(prefix)}


def armed(*names: str, nth: int = 1) -> dict[str, str]:
    """The environment entry that arms ``names`` in a child process (merge it into the child's env)."""
    return {ARMED_VARIABLE: ",".join(name if nth == 1 else f"{name}:{nth}" for name in names)}
