"""Imported at start-up by the dbt processes of the worker-crash test's drain (its ``dbt_env`` puts this
directory on PYTHONPATH): while the file named by LEASTACTION_TEST_DBT_HOLD exists, dbt waits before doing
anything, so the test kills the Celery worker while a batch is certainly still building."""

import os
import time

_hold = os.environ.get("LEASTACTION_TEST_DBT_HOLD")
while _hold and os.path.exists(_hold):
    time.sleep(0.1)
