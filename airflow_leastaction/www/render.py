"""Server-rendered pages: one Jinja environment with autoescaping always on, and the catalog reader."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fastapi import Request
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from airflow_leastaction.catalog.engine import get_engine, resolve_url
from airflow_leastaction.www.reads import CatalogReads

TEMPLATES = Path(__file__).parent / "templates"

PAGES = (
    ("decisions", "Gate decisions"),
    ("consumption", "Consumption"),
    ("catalog", "Catalog"),
    ("graph", "Dependency graph"),
    ("queue", "dbt queue"),
)


def _when(value: dt.datetime | None) -> str:
    if value is None:
        return "—"
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _environment() -> Environment:
    # autoescape=True for every template, whatever its extension: catalog names come from anyone who reports.
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.globals["PAGES"] = PAGES
    return env


templates = Jinja2Templates(env=_environment())


def render(request: Request, name: str, active: str, **context):
    """Render ``name`` with the base path of the mounted app, so links work under any prefix."""
    base = request.scope.get("root_path", "").rstrip("/")
    return templates.TemplateResponse(request, name, {"base": base, "active": active, **context})


def catalog_reads(request: Request) -> CatalogReads:
    """The reader for this app's catalog (the default catalog connection unless the factory named one)."""
    url = getattr(request.app.state, "catalog_url", None) or resolve_url()
    return CatalogReads(get_engine(url))
