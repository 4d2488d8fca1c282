"""The interval-dependency model: a child waits for the parent intervals that cover its own. Pure logic.

- :mod:`~airflow_leastaction.intervals.slots`: cron schedules, granularities, the slot covering an instant.
- :mod:`~airflow_leastaction.intervals.interval_slots`: every slot of a cron inside an interval.
- :mod:`~airflow_leastaction.intervals.run_slot`: the slot of a DAG run (data interval, else logical date...).
- :mod:`~airflow_leastaction.intervals.judging`: judging one parent from a catalog snapshot.
- :mod:`~airflow_leastaction.intervals.coverage`: ``coverage="interval"``, every parent slot in the interval.

Nothing here imports Airflow; the adapters (sensor, trigger, timetable) build on it.
"""
