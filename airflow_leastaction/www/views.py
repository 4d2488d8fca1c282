"""Where the pages appear in the Airflow UI (``external_views``): a LeastAction menu, a DAG tab, a task-instance tab.

The tabs open their page with ``tab=dag`` or ``tab=task``: inside a tab every link and form of the pages
keeps the DAG (and the task instance), and the menu of every page is replaced by the tab's own pages.
"""

from __future__ import annotations

URL_PREFIX = "/leastaction"
MENU = "LeastAction"
#: The ``url_route`` of the tabs (Airflow's UI shows them under ``.../plugin/<url_route>``).
DAG_TAB_ROUTE = "leastaction-dag"
TASK_INSTANCE_TAB_ROUTE = "leastaction-task-instance"

_NAV = (
    ("Gate verdicts", "decisions"),
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
        "name": "Gate verdict",
        "href": f"{URL_PREFIX}/decisions?tab=task&dag_id={{DAG_ID}}&task_id={{TASK_ID}}&run_id={{RUN_ID}}"
        "&map_index={MAP_INDEX}",
        "destination": "task_instance",
        "url_route": TASK_INSTANCE_TAB_ROUTE,
    },
    {
        "name": "Dependencies",
        "href": f"{URL_PREFIX}/dag?tab=dag&dag_id={{DAG_ID}}",
        "destination": "dag",
        "url_route": DAG_TAB_ROUTE,
    },
]
