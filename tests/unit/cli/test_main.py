"""What ``airflow-leastaction`` prints is all that reaches stdout: Airflow's log lines go to stderr."""

from __future__ import annotations

import json
import subprocess
import sys

#: A command that logs through Airflow's structured logging while it runs (Airflow 3.1 warns so about the
#: catalog's connection type), then prints its JSON.
COMMAND = """
import json, structlog
from airflow_leastaction.cli import _logs_to_stderr
with _logs_to_stderr():
    structlog.get_logger("airflow.models.connection.Connection").warning("a warning while the command runs")
    print(json.dumps({"applied": None}))
"""


def test_a_warning_logged_during_a_command_goes_to_stderr_not_among_its_json():
    done = subprocess.run([sys.executable, "-c", COMMAND], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"applied": None}
    assert "a warning while the command runs" in done.stderr


#: The command line called in a process that goes on logging after it returns (a DAG file or a script that
#: runs a command, a test): the line logged afterwards goes where Airflow would have written it anyway.
AFTER_A_COMMAND = """
import structlog
from airflow_leastaction.cli import main
print("status", main(["no-such-command"]))
structlog.get_logger("airflow.task").warning("a line logged after the command returned")
"""


def test_airflows_log_lines_after_a_command_returns_go_to_stdout_again():
    done = subprocess.run([sys.executable, "-c", AFTER_A_COMMAND], capture_output=True, text=True, timeout=300)
    assert "status 2" in done.stdout, done.stderr
    assert "no-such-command" in done.stderr  # the command's own usage error, on stderr
    assert "a line logged after the command returned" in done.stdout
    assert "a line logged after the command returned" not in done.stderr
