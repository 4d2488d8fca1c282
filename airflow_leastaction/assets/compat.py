"""What the running Airflow offers the asset bridge, as capability flags: the one place this package
compares Airflow versions for assets (callers ask for a capability, never for a version).

| capability | from |
| --- | --- |
| partitioned asset events and partition mappers | 3.2 |
| the ``on_asset_event_emitted`` listener hook | 3.2 |
| the asset state store, readable by a watcher in the triggerer | 3.3 |

A mechanism a minor lacks degrades, and :func:`say_once` logs it once per process.
"""

from __future__ import annotations

import logging

from packaging.version import Version

log = logging.getLogger(__name__)


def _airflow_version() -> Version:
    try:
        from airflow import __version__
    except ImportError:  # pure callers outside an Airflow install
        return Version("0")
    return Version(Version(__version__).base_version)


AIRFLOW_VERSION = _airflow_version()
AIRFLOW_V_3_2_PLUS = Version("3.2.0") <= AIRFLOW_VERSION
AIRFLOW_V_3_3_PLUS = Version("3.3.0") <= AIRFLOW_VERSION

#: Asset events carry partition keys; partition-aware DAGs and mappers exist.
HAS_PARTITIONS = AIRFLOW_V_3_2_PLUS
#: Airflow calls ``on_asset_event_emitted`` with the event (its extra and partition key).
HAS_ASSET_EVENT_LISTENER = AIRFLOW_V_3_2_PLUS
#: A watcher reads its asset's state store, which the listener writes in the event's transaction.
HAS_WATCHER_STATE_STORE = AIRFLOW_V_3_3_PLUS

_said: set[str] = set()


def say_once(what: str) -> None:
    """Log, once per process, that a mechanism this Airflow lacks is degraded, and how."""
    if what not in _said:
        _said.add(what)
        log.warning("Airflow %s: %s", AIRFLOW_VERSION, what)
