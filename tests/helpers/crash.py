"""Run real work in a child process with a crash point armed, and check that it died there.

A crash test has two halves: the write killed at a named step boundary (this helper), then a restart
and the invariants. :func:`run_until_crash` fails the test when the child did not die by SIGKILL, so a
point the work never reaches (a renamed point, a path that moved) fails instead of passing silently.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from airflow_leastaction.crash_points import armed

ROOT = Path(__file__).resolve().parents[2]


def run_python(
    code: str, *, env: dict[str, str] | None = None, timeout: float = 300, warm: bool = False
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with this checkout first on its path; ``warm``: in a child forked
    from one that has imported Airflow already (:mod:`tests.helpers.warm_child`), for code that needs no
    more of a fresh interpreter than its own environment."""
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), child_env.get("PYTHONPATH")]))
    if warm:
        from tests.helpers import warm_child

        status, out, err = warm_child.run(textwrap.dedent(code), child_env, ROOT, timeout)
        return subprocess.CompletedProcess(["<warm child>"], status, out, err)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def run_until_crash(
    code: str,
    point: str,
    *,
    nth: int = 1,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    warm: bool = False,
) -> None:
    """Run ``code`` with ``point`` armed; it must be killed there (SIGKILL), not finish or fail otherwise."""
    done = run_python(code, env={**(env or {}), **armed(point, nth=nth)}, timeout=timeout, warm=warm)
    assert done.returncode == -signal.SIGKILL, (
        f"expected the child to die at crash point {point!r}, it exited {done.returncode}\n"
        f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-4000:]}"
    )


def run_to_end(code: str, *, env: dict[str, str] | None = None, timeout: float = 300, warm: bool = False) -> str:
    """Run ``code`` unarmed (the restart); it must exit 0. Returns its standard output."""
    done = run_python(code, env=env, timeout=timeout, warm=warm)
    assert done.returncode == 0, f"exit {done.returncode}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-4000:]}"
    return done.stdout
