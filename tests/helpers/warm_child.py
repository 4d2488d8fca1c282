"""Child processes forked from an interpreter that has already imported Airflow.

A crash test's child is a real process, killed by SIGKILL where its crash point says; what it need not
repeat is importing Airflow (a few seconds of CPU each time, dozens of times a module). The fork server
(:mod:`multiprocessing`'s ``forkserver``) imports Airflow and SQLAlchemy once per test process; each child
is forked from it, takes the environment the test gives it, and imports the rest of the product itself, so
the crash points it arms (read from the environment when :mod:`airflow_leastaction.crash_points` is first
imported) are the test's. (Importing Airflow imports the product's cluster policy, as in any interpreter.)

This module imports nothing of the product: the fork server imports it to find :func:`main`.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sys
from pathlib import Path

#: What the fork server imports once: the third-party modules every child would import anyway.
PRELOAD = ["airflow", "airflow.configuration", "sqlalchemy", __name__]
_context = None


def context():
    """The fork server's context, started with :data:`PRELOAD` on first use."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def main(code: str, env: dict[str, str], cwd: str, out: str, err: str) -> None:
    """Run ``code`` as a script would, with ``env`` as its whole environment and its output in two files."""
    if "airflow_leastaction.crash_points" in sys.modules:  # it reads the armed points once, when imported
        raise RuntimeError("the fork server imported the crash points: a child would not arm the test's")
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[:0] = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(handle, fd)
        os.close(handle)
    try:
        exec(compile(code, "<child>", "exec"), {"__name__": "__main__"})
    finally:
        atexit._run_exitfuncs()  # what an interpreter's exit runs; the fork server's children leave by os._exit


def run(code: str, env: dict[str, str], cwd: Path, timeout: float) -> tuple[int, str, str]:
    """Run ``code`` in a child forked from the warm interpreter; its exit status (negative: the signal that
    killed it), standard output and standard error. A child still running after ``timeout`` is killed and
    reported as a :class:`TimeoutError`."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="la-child-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        child = context().Process(target=main, args=(code, env, str(cwd), str(out), str(err)))
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise TimeoutError(f"the child ran over {timeout:.0f}s\nstderr: {err.read_text(errors='replace')[-4000:]}")
        return child.exitcode, out.read_text(errors="replace"), err.read_text(errors="replace")
