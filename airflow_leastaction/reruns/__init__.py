"""Running things again: a planned re-run of some slots and everything they made stale, and a degraded
run's one re-run once what it ran without arrives.

- :mod:`~airflow_leastaction.reruns.plan`: which runs re-running some slots makes stale, in waves (pure).
- :mod:`~airflow_leastaction.reruns.plan_reads`: what a plan reads from the catalog.
- :mod:`~airflow_leastaction.reruns.apply`: carrying out a plan through Airflow's backfill API.
- :mod:`~airflow_leastaction.reruns.late_arrival`: the late-arrival sweep, through Airflow's API.
"""
