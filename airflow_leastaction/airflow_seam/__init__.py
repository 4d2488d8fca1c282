"""Where the provider meets Airflow: what its tasks and triggers read from Airflow (the task context, a
run's task states, a DAG's schedule) and what they ask of it (the REST API).

- :mod:`~airflow_leastaction.airflow_seam.context`: the attempt, the run's slot and interval end, the poll interval.
- :mod:`~airflow_leastaction.airflow_seam.child_interval`: what a ``ParentIntervalSensor`` judges and declares.
- :mod:`~airflow_leastaction.airflow_seam.schedule`: a DAG's schedule as the catalog keeps it.
- :mod:`~airflow_leastaction.airflow_seam.run_tasks`: the tasks of one DAG run, read through the supervisor.
- :mod:`~airflow_leastaction.airflow_seam.run_end`: the final states of a finished run the catalog still needs.
- :mod:`~airflow_leastaction.airflow_seam.api`: Airflow's public REST API (clears, backfills).

Below the triggers, operators, sensors and listeners: each of them imports it, it imports none of them.
"""
