"""The object the plugin mounts: builds the FastAPI app on its first request.

Every Airflow process loads plugins (workers do, for the listener); only the API server serves pages, so
the web stack is imported there, when the first page is asked for, and nowhere else.
"""

from __future__ import annotations


class LeastActionApp:
    """An ASGI app that delegates to :func:`airflow_leastaction.www.app.create_app`, built once."""

    def __init__(self, catalog_url: str | None = None):
        self.catalog_url = catalog_url
        self._app = None

    @property
    def app(self):
        if self._app is None:
            from airflow_leastaction.www.app import create_app

            self._app = create_app(self.catalog_url)
        return self._app

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)
