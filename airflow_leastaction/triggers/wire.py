"""What travels between a waiting task and its trigger: the ``status`` of the events the triggers fire.

Pure, no Airflow import. These are wire formats: a trigger's event is stored by Airflow and read by a
worker that may run another release, so a value never changes.
"""

from __future__ import annotations

from airflow_leastaction.gate import Verdict

#: ParentIntervalTrigger: every parent interval is satisfied.
ADMITTED = "admitted"
#: ParentIntervalTrigger: a parent failed and the sensor fails with it (``on_parent_failure="fail"``).
FAILED = "failed"
#: ParentIntervalTrigger: the deadline passed with parents still unsatisfied.
TIMEOUT = "timeout"
#: Both gate triggers: the deployment relaxed its gates (``[leastaction] gates``) after the wait began.
RELAXED = "relaxed"
#: RunConditionTrigger: the run condition is met, or can never be (the verdict's value).
ADMIT = Verdict.ADMIT.value
SKIP = Verdict.SKIP.value
#: RunOutcomeTrigger: every other task of the run reached a terminal state.
FINISHED = "finished"
