"""A real Airflow API server with the LeastAction plugin, and a headless Chromium logged in to it.

The server is :class:`AirflowCluster` with the API server and the DAG processor only (the DAG processor
puts the test's DAGs in the UI). The browser is Debian's ``/usr/bin/chromium`` driven by Playwright.

Typical use::

    with api_server(dags_folder, catalog_url) as server, browser() as chromium:
        page = logged_in_page(chromium, server)
        page.goto(server.base_url + "/plugin/leastaction-decisions")

With ``auth_manager=FAB_AUTH_MANAGER`` the server runs Airflow's FAB auth manager instead of the simple
one: the admin login is created with FAB's CLI, and :func:`fab_role` / :func:`fab_user` / :func:`token_for`
make users with per-DAG permissions and sign them in through ``/auth/token``.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.helpers.airflow_cluster import ADMIN_PASSWORD, ADMIN_USER, TEARDOWN_GRACE, AirflowCluster

CHROMIUM = os.environ.get("LEASTACTION_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 900}
FAB_AUTH_MANAGER = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"


@contextmanager
def api_server(
    dags_folder: Path, catalog_url: str, *, timeout: float = 180, auth_manager: str | None = None
) -> Iterator[AirflowCluster]:
    """Migrate Airflow's database, start the API server and DAG processor; stop them on exit.

    :param auth_manager: the auth manager's class path (default: Airflow's simple auth manager).
    """
    # PYTHONSAFEPATH: a server started from a source checkout must not also see the checkout's egg-info
    # on sys.path, or the plugin's entry point is found twice ("already registered").
    env = {"PYTHONSAFEPATH": "1"}
    if auth_manager is not None:
        env["AIRFLOW__CORE__AUTH_MANAGER"] = auth_manager
    cluster = AirflowCluster(dags_folder, catalog_url=catalog_url, components=("api-server", "dag-processor"), env=env)
    cluster.migrate()
    if auth_manager == FAB_AUTH_MANAGER:
        fab_user(cluster, ADMIN_USER, ADMIN_PASSWORD, "Admin")
    try:
        yield cluster.start(timeout)
    except BaseException:
        print(cluster.describe())
        raise
    finally:
        cluster.stop(TEARDOWN_GRACE)


def fab_user(cluster: AirflowCluster, username: str, password: str, role: str) -> None:
    """Create a FAB user with one role (``airflow users create``)."""
    email = f"{username}-{uuid.uuid4().hex[:6]}@example.com"
    cluster.run(
        "users",
        "create",
        "--username",
        username,
        "--password",
        password,
        "--role",
        role,
        "--firstname",
        username,
        "--lastname",
        "test",
        "--email",
        email,
    )


def fab_role(
    cluster: AirflowCluster, name: str, resources: list[str], actions: tuple[str, ...] = ("can_read",)
) -> None:
    """Create a FAB role holding ``actions`` on ``resources`` (``DAG:<dag_id>`` for one DAG).

    DAG resources exist once the DAGs are parsed and ``airflow sync-perm --include-dags`` ran.
    """
    cluster.run("roles", "create", name)
    cluster.run("roles", "add-perms", name, "--resource", *resources, "--action", *actions)


def token_for(cluster: AirflowCluster, username: str, password: str) -> str:
    """A JWT for ``username`` from the auth manager's token endpoint, as an API client gets one."""
    resp = httpx.post(f"{cluster.base_url}/auth/token", json={"username": username, "password": password}, timeout=30)
    resp.raise_for_status()
    return resp.json()["access_token"]


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
