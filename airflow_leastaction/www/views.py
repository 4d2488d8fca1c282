"""Where the pages appear in the Airflow UI (``external_views``): a LeastAction menu, a DAG tab, a task-instance tab."""

from __future__ import annotations

URL_PREFIX = "/leastaction"
MENU = "LeastAction"

_NAV = (
    ("Gate decisions", "decisions"),
    ("Consumption", "consumption"),
    ("Catalog", "catalog"),
    ("Dependency graph", "graph"),
    ("dbt queue", "queue"),
)

EXTERNAL_VIEWS = [
    *(
        {
            "name": name,
            "href": f"{URL_PREFIX}/{slug}",
            "destination": "nav",
            "category": MENU,
            "url_route": f"leastaction-{slug}",
        }
        for name, slug in _NAV
    ),
    {
        "name": "Gate decisions",
        "href": f"{URL_PREFIX}/decisions?dag_id={{DAG_ID}}&task_id={{TASK_ID}}&run_id={{RUN_ID}}"
        "&map_index={MAP_INDEX}",
        "destination": "task_instance",
        "url_route": "leastaction-task-instance",
    },
    {
        "name": "Catalog dependencies",
        "href": f"{URL_PREFIX}/dag?dag_id={{DAG_ID}}",
        "destination": "dag",
        "url_route": "leastaction-dag",
    },
]
