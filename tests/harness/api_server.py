"""A real Airflow API server with the LeastAction plugin, and a headless Chromium logged in to it.

The server is :class:`AirflowCluster` with the API server and the DAG processor only (the DAG processor
puts the test's DAGs in the UI). The browser is Debian's ``/usr/bin/chromium`` driven by Playwright.

Typical use::

    with api_server(dags_folder, catalog_url) as server, browser() as chromium:
        page = logged_in_page(chromium, server)
        page.goto(server.base_url + "/plugin/leastaction-decisions")
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness.airflow_cluster import ADMIN_PASSWORD, ADMIN_USER, AirflowCluster

CHROMIUM = os.environ.get("LEASTACTION_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 900}


@contextmanager
def api_server(dags_folder: Path, catalog_url: str, *, timeout: float = 180) -> Iterator[AirflowCluster]:
    """Migrate Airflow's database, start the API server and DAG processor; stop them on exit."""
    # PYTHONSAFEPATH: a server started from a source checkout must not also see the checkout's egg-info
    # on sys.path, or the plugin's entry point is found twice ("already registered").
    cluster = AirflowCluster(dags_folder, catalog_url=catalog_url, components=("api-server", "dag-processor"),
                             env={"PYTHONSAFEPATH": "1"})
    cluster.migrate()
    try:
        yield cluster.start(timeout)
    except BaseException:
        print(cluster.describe())
        raise
    finally:
        cluster.stop()


def chromium_available() -> bool:
    return shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists()


@contextmanager
def browser():
    """Headless Chromium (the system binary: nothing is downloaded)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


def logged_in_page(chromium, server: AirflowCluster, *, user: str = ADMIN_USER, password: str = ADMIN_PASSWORD):
    """A page that signed in through the auth manager's login form, as a person does."""
    context = chromium.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(server.base_url + "/", wait_until="networkidle")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/auth/" not in url, timeout=30_000)
    return page
