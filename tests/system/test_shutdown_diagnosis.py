"""How the clean-shutdown test tells Airflow's own SIGTERM deadlock from anything else: a real Python process
stuck the same way (a SIGTERM handler in a module under ``airflow/`` logging while the log line it
interrupted holds structlog's write lock), its stacks asked for with SIGABRT as the test deployment does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.helpers.processes import deadlocked_in_signal_handler_log, dump_stacks

HANDLER = textwrap.dedent("""
    import sys

    LOG = None

    def _exit_gracefully(signum, frame):
        LOG.msg("Exiting gracefully upon receiving signal %d" % signum)
        sys.exit(0)
""")

WRITER = textwrap.dedent("""
    def write_a_line(log):
        log.msg("a line being written")
""")

MAIN = textwrap.dedent("""
    import os, signal, sys, structlog
    sys.path.insert(0, sys.argv[1])
    from airflow import manager
    from {writer_package} import writer

    class Output:
        # The signal lands while structlog holds the write lock: deterministic, where a real one is chance.
        def write(self, text):
            os.kill(os.getpid(), signal.SIGTERM)
            sys.stderr.write(text)

        def flush(self):
            pass

    manager.LOG = structlog.PrintLogger(Output())
    signal.signal(signal.SIGTERM, manager._exit_gracefully)
    print("ready", flush=True)
    writer.write_a_line(manager.LOG)
""")


def stacks_of_a_stuck_process(tmp_path, writer_package: str) -> str:
    """Start the process, check it is stuck, ask for its stacks; its stderr."""
    site = tmp_path / "site"
    for package, module, source in (("airflow", "manager", HANDLER), (writer_package, "writer", WRITER)):
        (site / package).mkdir(parents=True, exist_ok=True)
        (site / package / "__init__.py").write_text("")
        (site / package / f"{module}.py").write_text(source)
    script = tmp_path / "main.py"
    script.write_text(MAIN.format(writer_package=writer_package))
    err = tmp_path / "stderr.log"
    with err.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(site)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        try:
            assert proc.stdout.readline().strip() == b"ready"
            time.sleep(1)
            assert proc.poll() is None, "the process exited instead of waiting on its own lock"
            dump_stacks([proc.pid])
            assert proc.wait(10) == -signal.SIGABRT
        finally:
            proc.kill()
            proc.stdout.close()
    return err.read_text()


@pytest.mark.parametrize(
    "writer_package, known",
    [
        pytest.param("airflow_core_like", True, id="Airflow alone on the stack"),
        pytest.param("airflow_leastaction_like", False, id="provider code on the stack"),
    ],
)
def test_a_sigterm_handler_waiting_on_its_own_log_line_is_known_only_without_provider_code(
    tmp_path, writer_package, known
):
    stacks = stacks_of_a_stuck_process(tmp_path, writer_package)
    assert "in _exit_gracefully" in stacks
    assert deadlocked_in_signal_handler_log(stacks) is known
