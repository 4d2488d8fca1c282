"""Task and run states, by what a rule does with them. Pure: no Airflow import.

Airflow's task-instance states are strings; the catalog also stores the states other schedulers report
(``error``, ``cancelled``...). Each set below is the one definition the rules read.
"""

from __future__ import annotations

# -- catalog slot records ---------------------------------------------------------------------------
#: A catalog slot in one of these states failed: its children are rejected (not kept waiting).
REJECTING_STATES = frozenset({"failed", "error", "cancelled", "cancel", "fail", "upstream_failed"})

#: A catalog slot in one of these states is being run: its children wait for it to finish.
IN_FLIGHT_STATES = frozenset({"queued", "running", "up_for_retry", "restarting", "deferred", "scheduled"})

# -- Airflow task instances of one run --------------------------------------------------------------
#: A task that has not started: no state yet (Airflow reports None, or "none" once serialized).
NOT_STARTED_STATES = frozenset({None, "none"})

#: A task in one of these states has not finished: it satisfies no dependency yet.
UNFINISHED_STATES = NOT_STARTED_STATES | frozenset(
    {"scheduled", "queued", "running", "deferred", "up_for_retry", "up_for_reschedule", "restarting", "awaiting_input"}
)

#: Finished without running its work: only ALWAYS is satisfied. upstream_failed counts here because the
#: task itself did not fail; it was kept from running.
DID_NOT_RUN_STATES = frozenset({"skipped", "removed", "upstream_failed"})

#: Kept from running by the run (not removed from the DAG): what a failure upstream leaves behind.
KEPT_FROM_RUNNING_STATES = frozenset({"skipped", "upstream_failed"})

FAILED_STATES = frozenset({"failed"})

#: A task in one of these states may still start or finish on its own (the run "goes on").
ACTIVE_STATES = frozenset(
    {"scheduled", "queued", "running", "deferred", "up_for_retry", "up_for_reschedule", "restarting", "awaiting_input"}
)

#: A task in one of these states has finished for good in this run.
TERMINAL_STATES = frozenset({"success", "failed", "skipped", "removed", "upstream_failed"})

#: The final states a run's outcome records (``removed``: the task left the DAG; it has no outcome).
RECORDED_FINAL_STATES = TERMINAL_STATES - {"removed"}

#: A task in one of these states may still be working on a dbt batch it owns (``up_for_retry`` is not:
#: its attempt ended, so its batch can be taken over).
ALIVE_STATES = frozenset({"running", "queued", "scheduled", "deferred", "restarting", "up_for_reschedule"})
