"""The pieces of HTML drawn once per row (a state's badge, a link into Airflow, a task instance's links),
as functions the templates call. Pure.

They were Jinja macros: a page of gate verdicts calls them hundreds of times, and a macro call (its
arguments bound, its own output buffer) cost more than the text it produced. Every value is escaped, as
autoescaping did (``escape``, not ``Markup.format``, whose formatter costs what the macro did).
"""

from __future__ import annotations

from functools import lru_cache

from markupsafe import Markup, escape

from airflow_leastaction.www.links import AirflowLinks
from airflow_leastaction.www.present import tone


@lru_cache(maxsize=512)  # a page draws the same few states hundreds of times
def badge(value, label=None) -> Markup:
    """A state (or result, outcome) in its tone's colours; ``label`` shown instead of the state's name."""
    return Markup(f'<span class="badge tone-{escape(tone(value))}">{escape(label or value or "—")}</span>')


def to_airflow(href: str, text, cls: str = "") -> Markup:
    """A link into Airflow's own pages: it opens there, not inside the frame."""
    attrs = f' class="{escape(cls)}"' if cls else ""
    return Markup(f'<a href="{escape(href)}" target="_top"{attrs}>{escape(text)}</a>')


def task_instance(airflow: AirflowLinks, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Markup:
    """``DAG · task[index] · run``, each linked into Airflow."""
    label = f"{task_id}[{map_index}]" if map_index >= 0 else task_id
    dag = to_airflow(airflow.dag(dag_id), dag_id)
    ti = to_airflow(airflow.task_instance(dag_id, run_id, task_id, map_index), label)
    return Markup(f"{dag} · {ti} ·\n{to_airflow(airflow.run(dag_id, run_id), run_id, 'mono')}\n")
