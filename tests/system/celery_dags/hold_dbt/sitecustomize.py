"""Imported at start-up by the dbt processes of the worker-crash test's drain (its ``dbt_env`` puts this
directory on PYTHONPATH): while the file named by LEASTACTION_TEST_DBT_HOLD exists, a dbt command that
builds waits before doing anything, so the test kills the Celery worker while a batch is certainly still
building. Other commands (the drain's ``dbt parse`` before it claims) run."""

import os
import sys
import time

_hold = os.environ.get("LEASTACTION_TEST_DBT_HOLD")
while _hold and "build" in sys.argv[1:2] and os.path.exists(_hold):
    time.sleep(0.1)
