"""Task and run states, by what a rule does with them. Pure: no Airflow import.

Airflow's task-instance states are strings; the catalog also stores the states other schedulers report
(``error``, ``cancelled``...). Each set below is the one definition a rule reads.
"""

from __future__ import annotations

#: A catalog slot in one of these states failed: its children are rejected (not kept waiting).
REJECTING_STATES = frozenset({"failed", "error", "cancelled", "cancel", "fail", "upstream_failed"})

#: A catalog slot in one of these states is being run: its children wait for it to finish.
IN_FLIGHT_STATES = frozenset({"queued", "running", "up_for_retry", "restarting", "deferred", "scheduled"})
