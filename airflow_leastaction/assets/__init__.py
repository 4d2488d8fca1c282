"""Assets and the catalog, both ways: a catalog task's completed slots become asset events through an
Airflow asset watcher, and asset events become slot records of an asset identity. See ``docs/assets.md``.

What DAG authors call: :func:`catalog_asset` and :func:`partitioned_on_catalog` (catalog → assets),
:func:`~airflow_leastaction.refs.airflow_asset` and :func:`asset_schedule` (assets → catalog). They are
imported on first use, so the pure modules of this package (``keys``) import no Airflow.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "catalog_asset": "airflow_leastaction.assets.bridge",
    "partitioned_on_catalog": "airflow_leastaction.assets.bridge",
    "asset_schedule": "airflow_leastaction.assets.recording",
    "airflow_asset": "airflow_leastaction.refs",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
