"""Server-rendered pages: one Jinja environment with autoescaping always on, the shared layout's context
(navigation, scope, clock, links into Airflow), and the catalog reader.

Every page extends ``base.html`` and gets from :func:`render`: ``nav`` (the tab bar), ``scope`` (the DAG or
task instance a tab of Airflow's opened it for), ``clock`` (times: :mod:`airflow_leastaction.www.present`)
and ``airflow`` (links: :mod:`airflow_leastaction.www.links`). Filters: ``when``, ``short``, ``in_text``
(times inside a reason) and ``tone`` (a state's colour class). Functions: ``badge``, ``to_airflow`` and
``task_instance`` (:mod:`airflow_leastaction.www.fragments`), ``verdict_card``
(:mod:`airflow_leastaction.www.verdict_card`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from fastapi import Query, Request
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from airflow_leastaction.gating.has_data import rows_text
from airflow_leastaction.hooks.catalog import catalog_engine
from airflow_leastaction.www import fragments
from airflow_leastaction.www.links import AirflowLinks
from airflow_leastaction.www.params import blank, bounded_int, one_of
from airflow_leastaction.www.present import Clock, ago, tone, worker_name
from airflow_leastaction.www.reads import CatalogReads
from airflow_leastaction.www.verdict_card import verdict_card

TEMPLATES = Path(__file__).parent / "templates"

#: The menu pages (slug, label): the same list as Airflow's LeastAction menu.
PAGES = (
    ("decisions", "Gate verdicts"),
    ("consumption", "Consumption"),
    ("catalog", "Catalog"),
    ("graph", "Dependency graph"),
    ("queue", "dbt queue"),
)

#: The tabs Airflow opens a page in: inside them the page keeps that scope.
TABS = ("dag", "task")


@dataclass(frozen=True)
class Scope:
    """What an Airflow tab opened the page for (``tab``: ``dag`` or ``task``), kept by every link and form."""

    tab: str | None = None
    dag_id: str | None = None
    task_id: str | None = None
    run_id: str | None = None
    map_index: int | None = None

    def params(self, **extra) -> dict:
        """The query that keeps this scope (and ``extra``)."""
        keep = {"tab": self.tab, "dag_id": self.dag_id}
        if self.tab == "task":
            keep.update(task_id=self.task_id, run_id=self.run_id, map_index=self.map_index)
        keep.update(extra)
        return {k: v for k, v in keep.items() if v is not None}

    def describe(self) -> str:
        if self.tab == "task":
            return f"{self.dag_id} · {self.task_id} · {self.run_id}"
        return f"DAG {self.dag_id}"


def page_scope(
    tab: str | None = Query(None, description="the Airflow tab the page is shown in: dag or task"),
    dag_id: str | None = None,
    task_id: str | None = None,
    run_id: str | None = None,
    map_index: str | None = None,
) -> Scope:
    """The scope of a page (no scope without ``tab``, or without the DAG a tab needs)."""
    tab = one_of(tab, TABS, "tab")
    dag_id = blank(dag_id)
    if tab is None or dag_id is None:
        return Scope()
    if tab == "task":
        index = None if map_index == "{MAP_INDEX}" else bounded_int(map_index, "map_index", low=-1)
        return Scope(tab, dag_id, blank(task_id), blank(run_id), index)
    return Scope(tab, dag_id)


def _nav(base: str, scope: Scope, active: str) -> list[dict]:
    if scope.tab == "dag":
        items = [("dag", "Dependencies"), ("decisions", "Gate verdicts"), ("consumption", "Consumption"),
                 ("catalog", "Catalog tasks")]  # fmt: skip
    elif scope.tab == "task":
        items = [("decisions", "Gate verdict"), ("consumption", "Consumption")]
    else:
        return [{"href": f"{base}/{slug}", "label": label, "active": slug == active} for slug, label in PAGES]
    return [
        {"href": f"{base}/{slug}?{urlencode(scope.params())}", "label": label, "active": slug == active}
        for slug, label in items
    ]


#: The clock of the page being rendered: filters read it (macros imported by a template do not see the
#: template's context); set by :func:`render` around its rendering.
_CLOCK: ContextVar[Clock | None] = ContextVar("leastaction_clock", default=None)
UTC_CLOCK = Clock()


def _when(value: dt.datetime | None) -> str:
    return (_CLOCK.get() or UTC_CLOCK).when(value)


def _short(value: dt.datetime | None) -> str:
    return (_CLOCK.get() or UTC_CLOCK).short(value)


def _in_text(value: str | None) -> str:
    return (_CLOCK.get() or UTC_CLOCK).in_text(value or "")


def _rows(slot: dict) -> str:
    """A slot record's rows written, in words (empty when the task reported none)."""
    shown = rows_text(slot.get("rows_written"), slot.get("rows_error"))
    return f" · {shown}" if shown else ""


def _environment() -> Environment:
    # autoescape=True for every template, whatever its extension: catalog names come from anyone who reports.
    # auto_reload off: the templates ship with the package, so a render need not stat each file it uses.
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        auto_reload=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=_when, short=_short, in_text=_in_text, tone=tone, rows=_rows)
    env.globals.update(PAGES=PAGES, ago=ago, worker_name=worker_name)
    env.globals.update(badge=fragments.badge, to_airflow=fragments.to_airflow, task_instance=fragments.task_instance)
    env.globals.update(verdict_card=verdict_card)
    return env


templates = Jinja2Templates(env=_environment())


def display_clock() -> Clock:
    """Times as Airflow's UI shows them by default: in ``[core] default_timezone``, named."""
    from airflow.settings import TIMEZONE

    return Clock.named(getattr(TIMEZONE, "name", None) or str(TIMEZONE))


def render(request: Request, name: str, active: str, *, scope: Scope | None = None, **context):
    """Render ``name`` in the shared layout, with the base path of the mounted app so links work under
    any prefix, and the scope of the Airflow tab it is shown in."""
    base = request.scope.get("root_path", "").rstrip("/")
    scope = scope or Scope()
    clock = context.pop("clock", None) or display_clock()
    token = _CLOCK.set(clock)
    try:
        return templates.TemplateResponse(
            request,
            name,
            {
                "base": base,
                "active": active,
                "scope": scope,
                "nav": _nav(base, scope, active),
                "clock": clock,
                "airflow": AirflowLinks.under(base),
                "now": dt.datetime.now(dt.UTC),
                **context,
            },
        )
    finally:
        _CLOCK.reset(token)


def catalog_reads(request: Request) -> Iterator[CatalogReads]:
    """The reader for this app's catalog (the default catalog connection unless the factory named one),
    one connection for all of the request's reads."""
    url = getattr(request.app.state, "catalog_url", None)
    with CatalogReads(catalog_engine(url=url)).held() as reads:
        yield reads
