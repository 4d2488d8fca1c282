"""airflow-leastaction: task-level interval dependencies, audited run conditions and a demand-driven dbt
queue for Apache Airflow 3."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "get_provider_info", "report_completion"]


def get_provider_info() -> dict:
    """Provider metadata read by Airflow's provider manager."""
    return {
        "package-name": "airflow-leastaction",
        "name": "LeastAction",
        "description": "Task-level interval dependencies, run conditions with an audit trail, and a "
        "demand-driven dbt model queue.",
        "versions": [__version__],
        "integrations": [{"integration-name": "LeastAction", "tags": ["software"]}],
        "sensors": [
            {"integration-name": "LeastAction", "python-modules": ["airflow_leastaction.sensors.parent_interval"]}
        ],
        "triggers": [
            {
                "integration-name": "LeastAction",
                "python-modules": [
                    "airflow_leastaction.triggers.parent_interval",
                    "airflow_leastaction.triggers.run_condition",
                    "airflow_leastaction.triggers.run_outcome",
                    "airflow_leastaction.triggers.held_work",
                    "airflow_leastaction.triggers.catalog_asset",
                ],
            }
        ],
        "hooks": [{"integration-name": "LeastAction", "python-modules": ["airflow_leastaction.hooks.catalog"]}],
        "operators": [
            {
                "integration-name": "LeastAction",
                "python-modules": [
                    "airflow_leastaction.operators.dbt_queue",
                    "airflow_leastaction.operators.run_condition",
                    "airflow_leastaction.operators.dag_run_condition",
                ],
            }
        ],
        "connection-types": [
            {
                "hook-class-name": "airflow_leastaction.hooks.catalog.CatalogHook",
                "connection-type": "leastaction_catalog",
            }
        ],
        "plugins": [
            {"name": "leastaction", "plugin-class": "airflow_leastaction.plugins.leastaction.LeastActionPlugin"}
        ],
        "config": {
            "leastaction": {
                "description": "airflow-leastaction: the task catalog and its gates.",
                "options": {
                    "catalog_conn_id": {
                        "description": "Connection (type leastaction_catalog) of the catalog database, used "
                        "by every component. When it is the default id and that connection is not defined, "
                        "catalog_url (or an embedded SQLite file under AIRFLOW_HOME) is used; any other "
                        "undefined id is an error.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": None,
                        "default": "leastaction_catalog_default",
                    },
                    "catalog_url": {
                        "description": "SQLAlchemy URL of the catalog of a deployment that defines no catalog "
                        "connection (empty: the embedded SQLite file). Ignored when the connection exists.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "sqlite:////data/catalog.db",
                        "default": "",
                    },
                    "project": {
                        "description": "Catalog project of this deployment's Airflow tasks: their identity is "
                        "(<dag_id>.<task_id>, project), <dag_id>:<task_id> when the DAG id has a dot.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "sales-airflow",
                        "default": "airflow",
                    },
                    "poll_interval": {
                        "description": "Seconds between catalog polls of the waiting gates in a triggerer.",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": None,
                        "default": "5",
                    },
                    "gate_wait_minutes": {
                        "description": "How long one run-condition check waits for an upstream in another DAG "
                        "whose latest run is in progress (0 judges at once). Per gate: max_wait.",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "15",
                        "default": "60",
                    },
                    "gates": {
                        "description": "enforce (default), warn or off. warn and off admit tasks whose "
                        "dependencies are not satisfied and record BYPASSED decisions.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "warn",
                        "default": "enforce",
                    },
                    "spool_dir": {
                        "description": "Where the listener keeps outcomes it could not write to the catalog "
                        "until it can. Default: AIRFLOW_HOME/leastaction/spool.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": None,
                        "default": "",
                    },
                    "airflow_api_conn_id": {
                        "description": "Connection to Airflow's public REST API, used to re-run a degraded run "
                        "once what it ran without arrived and by plan --apply: its host is the API server's URL, "
                        "its login and password a user allowed to clear task instances and create backfills.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": None,
                        "default": "leastaction_airflow_api_default",
                    },
                },
            }
        },
    }


def report_completion(*args, **kwargs):
    """Publish a completed interval of a task that lives outside Airflow. See
    :func:`airflow_leastaction.catalog.external.report_completion`."""
    from airflow_leastaction.catalog.external import report_completion as _report

    return _report(*args, **kwargs)
