"""Counts, in a real triggerer, the questions about task states the provider's seam sends Airflow.

Put this folder first on a component's ``PYTHONPATH`` with ``LEASTACTION_QUESTION_LOG`` naming a file:
Python imports this module when the process starts (and the trigger runner Airflow forks from it keeps it),
and the seam's question count (``airflow_seam.run_tasks.QUESTIONS``) then also appends one line per
``GetTaskStates`` message to the file: ``<CLOCK_MONOTONIC seconds> <pid> <dag_id> <run ids, comma-separated>``
(the monotonic clock is the machine's, so a test compares it with its own).

While a file named like the log plus ``.fail`` exists, each question fails before it is sent, as one the
comms cannot deliver fails (the seam reports both the same way): Airflow cannot be asked.
"""

from __future__ import annotations

import os
import time

LOG = os.environ.get("LEASTACTION_QUESTION_LOG")

if LOG:
    from airflow_leastaction.airflow_seam import run_tasks

    class LoggedQuestionCount(run_tasks.QuestionCount):
        __slots__ = ()

        def asked(self, dag_id, run_ids):
            super().asked(dag_id, run_ids)
            with open(LOG, "a") as log:
                log.write(f"{time.monotonic():.6f} {os.getpid()} {dag_id} {','.join(sorted(run_ids))}\n")
            if os.path.exists(LOG + ".fail"):
                raise ConnectionError("the supervisor cannot be reached")

    run_tasks.QUESTIONS = LoggedQuestionCount()
