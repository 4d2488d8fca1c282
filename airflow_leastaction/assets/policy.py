"""The check Airflow makes of every DAG it parses, as a cluster policy (loaded from the package's
``airflow.policy`` entry point): no asset the DAG names, in its schedule or as a task's inlet or outlet,
shares its name or URI with a catalog asset (:func:`~airflow_leastaction.assets.catalog_asset`) without
being that asset. Airflow would keep one of the two active and drop the other without an error; the DAG
is refused instead (an import error of its file), naming the DAG, the asset and the catalog task.

Airflow loads this module in every process when it starts, before it has finished importing itself: it
imports nothing of the provider or of Airflow's SDK until a DAG is checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from airflow.policies import hookimpl


class _Published(NamedTuple):
    name: str
    uri: str
    identity: Any  # a TaskIdentity

    def label(self) -> str:
        return f"the asset of catalog task {self.identity} ({self.uri})"


@hookimpl
def dag_policy(dag) -> None:
    from airflow_leastaction.exceptions import AssetNameCollisionError

    try:
        check_dag_assets(dag)
    except AssetNameCollisionError as exc:
        from airflow.exceptions import AirflowClusterPolicyViolation

        raise AirflowClusterPolicyViolation(str(exc)) from exc


def check_dag_assets(dag) -> None:
    """Refuse ``dag`` when an asset it names is not the catalog asset whose name or URI it takes."""
    from airflow_leastaction.exceptions import AssetNameCollisionError

    named = list(referenced_assets(dag))
    published = _published(named)
    by_name = {p.name: p for p in published}
    by_uri = {p.uri: p for p in published}
    for asset in named:
        for what, value, other in (("name", asset.name, by_name), ("URI", asset.uri, by_uri)):
            owner = other.get(value)
            if owner is not None and (owner.name, owner.uri) != (asset.name, asset.uri):
                raise AssetNameCollisionError(
                    what, value, owner.label(), f"the asset {asset.name!r} ({asset.uri})", dag_id=dag.dag_id
                )


def referenced_assets(dag) -> Iterator[Any]:
    """The assets ``dag`` schedules on, and those its tasks read and write."""
    from airflow.sdk import Asset

    from airflow_leastaction.assets import bridge

    condition = getattr(dag.timetable, "asset_condition", None)
    if condition is not None:
        yield from bridge.assets_of(condition)
    for task in dag.tasks:
        for declared in [*(getattr(task, "inlets", None) or ()), *(getattr(task, "outlets", None) or ())]:
            if isinstance(declared, Asset):
                yield declared


def _published(named: list) -> list[_Published]:
    """The catalog assets among ``named``, and those built in this process (a DAG file's other DAGs)."""
    from airflow_leastaction.assets import bridge

    found = [_Published(name, uri, identity) for identity, (name, uri) in bridge.built_here().items()]
    for asset in named:
        bridged = bridge.bridged_task(asset)
        if bridged is not None:
            found.append(_Published(asset.name, asset.uri, bridged[0]))
    return found
