"""The deployment's ``[leastaction]`` configuration: the one place options are read.

An option comes from ``AIRFLOW__LEASTACTION__<KEY>`` first, then from Airflow's configuration; outside an
Airflow install (a CLI run, a test) the fallback applies.
"""

from __future__ import annotations

import os
from pathlib import Path


def setting(key: str, fallback: str) -> str:
    """A ``[leastaction]`` option from Airflow's configuration (env ``AIRFLOW__LEASTACTION__KEY`` too)."""
    env = os.environ.get(f"AIRFLOW__LEASTACTION__{key.upper()}")
    if env is not None:
        return env
    try:
        from airflow.configuration import conf

        return conf.get("leastaction", key, fallback=fallback)
    except Exception:  # configuration not importable outside an Airflow install
        return fallback


def airflow_home() -> Path:
    """``AIRFLOW_HOME``, else Airflow's default ``~/airflow``: where the embedded catalog and spool live."""
    return Path(os.environ.get("AIRFLOW_HOME") or Path.home() / "airflow")
