"""Links into Airflow's own UI (DAG, run, task instance, its log) and between the LeastAction pages. Pure.

The shapes are the routes of Airflow 3's UI: ``/dags/<dag>``, ``/dags/<dag>/runs/<run>``,
``/dags/<dag>/runs/<run>/tasks/<task>`` (``/mapped/<index>`` for a mapped one), whose first tab is the
log (``?try_number=N`` picks the attempt), and ``.../plugin/<url_route>`` for a plugin's tab there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, urlencode

from airflow_leastaction.www.views import DAG_TAB_ROUTE, TASK_INSTANCE_TAB_ROUTE, URL_PREFIX


@lru_cache(maxsize=4096)  # a page links the same few DAGs, runs and tasks hundreds of times
def _seg(value) -> str:
    return quote(str(value), safe="")


@dataclass(frozen=True)
class TaskInstanceRef:
    """A task instance named by the ``dag|run|task|map_index`` text the dbt operators record."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1

    @classmethod
    def parse(cls, text: str | None) -> TaskInstanceRef | None:
        """The reference in ``text``, or None when it is not one (a name typed by a person)."""
        parts = (text or "").split("|")
        if len(parts) != 4 or not all(parts[:3]):
            return None
        try:
            return cls(parts[0], parts[1], parts[2], int(parts[3]))
        except ValueError:
            return None


@dataclass(frozen=True)
class AirflowLinks:
    """URLs of Airflow's UI pages, under the UI's base path (``""`` at the server's root).

    :param root: the base path of Airflow's UI: the plugin's mount path without ``/leastaction``.
    """

    root: str = ""

    @classmethod
    def under(cls, mount_path: str) -> AirflowLinks:
        """The links for a plugin app mounted at ``mount_path`` (``/leastaction``, ``/airflow/leastaction``)."""
        mount = mount_path.rstrip("/")
        return cls(mount[: -len(URL_PREFIX)] if mount.endswith(URL_PREFIX) else "")

    def dag(self, dag_id: str) -> str:
        return f"{self.root}/dags/{_seg(dag_id)}"

    def run(self, dag_id: str, run_id: str) -> str:
        return f"{self.dag(dag_id)}/runs/{_seg(run_id)}"

    def task_instance(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
        base = f"{self.run(dag_id, run_id)}/tasks/{_seg(task_id)}"
        return base if map_index is None or map_index < 0 else f"{base}/mapped/{int(map_index)}"

    def log(self, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int) -> str:
        """The log of one attempt (a gate's attempt is Airflow's try number)."""
        ti = self.task_instance(dag_id, run_id, task_id, map_index)
        return f"{ti}?{urlencode({'try_number': int(try_number)})}"

    def ref(self, ref: TaskInstanceRef) -> str:
        return self.task_instance(ref.dag_id, ref.run_id, ref.task_id, ref.map_index)

    def dag_tab(self, dag_id: str) -> str:
        """The DAG's *Dependencies* tab inside Airflow."""
        return f"{self.dag(dag_id)}/plugin/{DAG_TAB_ROUTE}"

    def task_instance_tab(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
        """A task instance's *Gate verdict* tab inside Airflow."""
        return f"{self.task_instance(dag_id, run_id, task_id, map_index)}/plugin/{TASK_INSTANCE_TAB_ROUTE}"
