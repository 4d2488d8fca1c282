"""Moved to :mod:`airflow_leastaction.run_conditions.waves`.

This path still works, with a warning, for one release.
"""

import warnings

from airflow_leastaction.run_conditions.waves import *  # noqa: F403

warnings.warn(
    "airflow_leastaction.graph moved to airflow_leastaction.run_conditions.waves", DeprecationWarning, stacklevel=2
)
