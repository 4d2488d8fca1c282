"""Every LeastAction page inside the real Airflow UI, in headless Chromium, on a small catalog story with a
hostile task name. The pictures of docs/ui.md come from the demo's data: tests/system/www/test_ui_demo_pages.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
from tests.helpers import www_scenario as scenario
from tests.helpers.api_server import api_server, browser, chromium_available, logged_in_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="Debian's chromium is not installed"),
]

# The suite writes no tracked file: these pictures stay in a temporary directory.
IMAGES = Path(tempfile.mkdtemp(prefix="leastaction-story-shots-"))
DAGS = Path(__file__).parent / "e2e_dags"

NAV_PAGES = {
    "decisions": ["Gate verdicts", "expected slot 2024-01-04 (day), completed up to 2024-01-03", "UNSATISFIED"],
    "consumption": ["Consumption records", "stale", "crm_export"],
    "catalog": ["Task catalog", "<script>alert(1)</script>", "external", "week"],
    "graph": ["Dependency graph", "Search for a task"],
    "queue": ["dbt model queue", "worker-1", "already_running", "model.shop.orders"],
}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('ui-catalog')}/catalog.db"
    engine = get_engine(url, migrate=True)
    story = scenario.build(CatalogStore(engine))
    scenario.build_queue(engine)
    with api_server(DAGS, url) as server:
        server.wait_for_dag("sales_daily")
        run = server.trigger("sales_daily", logical_date="2024-01-04T03:00:00+00:00")
        who = AttemptKey("sales_daily", "load_orders", run["dag_run_id"], -1, 1)
        scenario.gate(story.store, who, [scenario.CRM], scenario.day(4), scenario.day(4, 6))
        yield server, story, run["dag_run_id"]
    dispose_all()


@pytest.fixture(scope="module")
def page(deployment):
    server, _, _ = deployment
    with browser() as chromium:
        page = logged_in_page(chromium, server)
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.dialogs = dialogs
        yield page


def _open(page, url: str):
    """Open an Airflow UI route and return the LeastAction frame inside it."""
    page.goto(url, wait_until="networkidle")
    frame = page.frame_locator("iframe").first
    frame.locator("main").wait_for(timeout=30_000)
    return frame


def _shot(page, name: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    path = IMAGES / f"ui-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path


class TestInsideTheAirflowUI:
    def test_no_plugin_failed_to_import(self, deployment):
        server, _, _ = deployment
        assert server.api("GET", "/api/v2/plugins/importErrors")["import_errors"] == []

    @pytest.mark.parametrize("slug", list(NAV_PAGES))
    def test_each_page_renders_inside_the_ui(self, deployment, page, slug):
        server, _, _ = deployment
        frame = _open(page, f"{server.base_url}/plugin/leastaction-{slug}")
        text = frame.locator("body").inner_text()
        for expected in NAV_PAGES[slug]:
            assert expected in text, f"{slug}: {expected!r} not shown"
        _shot(page, slug)

    def test_a_task_named_like_a_script_is_shown_as_text_and_never_runs(self, deployment, page):
        server, _, _ = deployment
        frame = _open(page, f"{server.base_url}/plugin/leastaction-catalog")
        assert frame.get_by_text("<script>alert(1)</script>", exact=True).count() == 1
        assert page.dialogs == []

    def test_the_graph_of_a_task_shows_coloured_nodes_and_judged_edges(self, deployment, page):
        server, _, _ = deployment
        frame = _open(page, f"{server.base_url}/plugin/leastaction-graph")
        frame.get_by_label("Find a task").fill("rollup")
        frame.get_by_role("button", name="Search").click()
        frame.get_by_role("link", name=scenario.ROLLUP.name).click()
        frame.locator("svg.graph").wait_for()
        frame.get_by_label("Interval (UTC)").fill("2024-01-02 03:00:00")
        frame.get_by_role("button", name="Judge edges").click()
        frame.get_by_text("Edges judged for interval 2024-01-02 03:00:00 UTC").wait_for()
        assert frame.locator("svg.graph g.node").count() == 4  # rollup, its two parents, one grandparent
        assert frame.locator("svg.graph path.edge.tone-success").count() == 2
        assert frame.locator("svg.graph path.edge.wait").count() == 1
        assert "ledger_close: not in the catalog" in frame.locator("body").inner_text()
        _shot(page, "graph-task")

    def test_the_dag_view_shows_catalog_parents_and_children(self, deployment, page):
        server, _, _ = deployment
        frame = _open(page, f"{server.base_url}/dags/sales_daily/plugin/leastaction-dag")
        text = frame.locator("body").inner_text()
        assert "Dependencies of sales_daily" in text
        assert "sales/crm_export" in text and "finance/finance_weekly.rollup" in text
        _shot(page, "dag")

    def test_the_task_instance_view_shows_that_attempts_gate_decisions(self, deployment, page):
        server, _, run_id = deployment
        from urllib.parse import quote

        page.goto(
            f"{server.base_url}/dags/sales_daily/runs/{quote(run_id, safe='')}/tasks/load_orders",
            wait_until="networkidle",
        )
        page.get_by_role("tab", name="Gate verdict").or_(page.get_by_role("link", name="Gate verdict")).first.click()
        frame = page.frame_locator("iframe").first
        frame.locator("main").wait_for(timeout=30_000)
        verdicts = frame.locator("section.verdict")
        assert verdicts.count() == 1
        assert run_id in verdicts.first.inner_text()
        assert "completed up to 2024-01-03" in verdicts.first.inner_text()
        _shot(page, "task-instance")
