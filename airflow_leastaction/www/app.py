"""The LeastAction FastAPI app: built by :func:`create_app`, mounted by the plugin under ``/leastaction``."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request, status
from fastapi.responses import JSONResponse

from airflow_leastaction.www.params import plain_query
from airflow_leastaction.www.queries import BadCursorError
from airflow_leastaction.www.routers import catalog, consumption, decisions, eta, graph, plan, queue

ROUTERS = (
    decisions.router,
    consumption.router,
    catalog.router,
    graph.router,
    queue.router,
    plan.router,
    eta.router,
)


def create_app(catalog_url: str | None = None) -> FastAPI:
    """Build the app.

    :param catalog_url: the catalog to read; by default the catalog connection, resolved per request.
    """
    # No /docs, /redoc or /openapi.json: every route this app answers requires an Airflow login.
    app = FastAPI(
        title="LeastAction",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        dependencies=[Depends(plain_query)],
    )
    app.state.catalog_url = catalog_url
    for router in ROUTERS:
        app.include_router(router)
    app.add_exception_handler(BadCursorError, _bad_cursor)
    return app


async def _bad_cursor(request: Request, exc: BadCursorError) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_400_BAD_REQUEST)
