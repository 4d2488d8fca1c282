"""Tests of a mechanism an older supported Airflow minor lacks: skipped there, naming the mechanism.

A test asks for a capability of :mod:`airflow_leastaction.version_compat`, never for a version, as the
product does. Everything else runs on every supported minor.
"""

from __future__ import annotations

import pytest

from airflow_leastaction.version_compat import airflow_version


def needs(capability: bool, mechanism: str) -> pytest.MarkDecorator:
    """Skip unless the installed Airflow has ``capability``; ``mechanism`` names it and the minor that added
    it, as the skip reason shows it: ``needs(RUNTIME_PARTITIONS, "runtime partitions (PartitionedAtRuntime,
    Airflow 3.3)")``."""
    running = ".".join(map(str, airflow_version()))
    return pytest.mark.skipif(not capability, reason=f"Airflow {running} lacks {mechanism}")
