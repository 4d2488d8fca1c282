"""``make demo`` as a new user meets it: the example DAGs run green on the embedded defaults (the checks of
``make demo-check``), and the LeastAction pages on the demo's data, in headless Chromium inside the Airflow
UI: the URL it prints, the verdicts, the DAG tab, the frame width, dark mode, links; Ctrl-C stops it all.

The demo runs in a temporary home (one slot per DAG). Screenshots go to a temporary directory;
``make screenshots`` writes them to docs/images/ (the pictures of docs/ui.md) by setting
``LEASTACTION_SCREENSHOTS_DIR``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.helpers.airflow_cluster import free_port
from tests.helpers.api_server import browser, chromium_available

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="no Chromium to drive"),
    # The demo's start and its runs are part of the first test: on a busy machine they take most of an hour.
    pytest.mark.timeout(3600),
]

ROOT = Path(__file__).resolve().parents[3]
IMAGES = Path(os.environ.get("LEASTACTION_SCREENSHOTS_DIR") or tempfile.mkdtemp(prefix="leastaction-shots-"))
FRAME = {"width": 1000, "height": 900}
RC = "run_conditions_pipeline"
DEMO_FROM, DEMO_TO = "2026-11-16", "2026-11-18"
NAV = ("decisions", "consumption", "catalog", "graph", "queue")


class Demo:
    def __init__(self, url: str, printed: str, home: Path, proc: subprocess.Popen):
        self.url, self.printed, self.home, self.proc = url, printed, home, proc

    def output(self) -> str:
        return (self.home / "demo.out").read_text(errors="replace")

    def runs(self, dag_id: str) -> list[dict]:
        with httpx.Client(base_url=self.url, timeout=120) as client:
            token = client.post("/auth/token", json={"username": "admin", "password": "admin"}).json()
            response = client.get(
                f"/api/v2/dags/{dag_id}/dagRuns", headers={"Authorization": f"Bearer {token['access_token']}"}
            )
        return response.json()["dag_runs"] if response.status_code == 200 else []

    def wait_for_runs(self, dag_ids, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = {d: self.runs(d) for d in dag_ids}
            if all(rs and all(r["state"] in ("success", "failed") for r in rs) for rs in runs.values()):
                return
            # A DAG started only by the demo's driver (an asset-driven one) gets no run once the driver gave
            # up: nothing is left to wait for.
            if "did not finish" in self.output() and not all(runs.values()):
                break
            time.sleep(2)
        pytest.fail(f"the demo's runs did not finish within {timeout:.0f}s: {runs}\n{self.failures()}")

    def failures(self) -> str:
        """What went wrong in the demo, for a test's failure message: the driver's lines, and the last lines of
        every task or trigger log holding an error or a critical line (Airflow writes them as JSON lines)."""
        lines = [line for line in self.output().splitlines() if line.startswith(("demo:", "timed out"))]
        for path in sorted((self.home / "logs").glob("dag_id=*/run_id=*/task_id=*/attempt=*.log*")):
            text = path.read_text(errors="replace")
            if re.search(r'"level":\s*"(error|critical)"', text):
                lines.append(f"--- {path.relative_to(self.home / 'logs')}")
                lines.extend(text.splitlines()[-30:])
        standalone = self.home / "standalone.log"
        if standalone.exists():  # the scheduler's word on a task it failed (an executor event, a lost task)
            text = standalone.read_text(errors="replace")
            said = [line for line in text.splitlines() if re.search(r"\[(error|critical)\s*\]|\bERROR - ", line)]
            lines.extend(["--- standalone.log, its error lines", *said[-40:]])
        return "\n".join(lines)

    def run_of(self, dag_id: str) -> str:
        (finished,) = [r for r in self.runs(dag_id) if r["state"] == "success"][:1]
        return finished["dag_run_id"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """``scripts/demo.sh`` as a user starts it, until it says every example run finished; stopped after."""
    home = tmp_path_factory.mktemp("demo-home")
    port = free_port()
    env = {
        **os.environ,
        "DEMO_HOME": str(home),
        "DEMO_PORT": str(port),
        "DEMO_RUNS": "1",  # one slot per DAG keeps the suite short; make demo shows three
        "DEMO_TIMEOUT": "900",
        "DEMO_FROM": DEMO_FROM,
        "DEMO_TO": DEMO_TO,
    }
    log = (home / "demo.out").open("w+")
    proc = subprocess.Popen(
        [str(ROOT / "scripts" / "demo.sh")],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=_signals_as_a_shell_gives_them,
    )
    try:
        out = _wait_for(log, proc, "LeastAction:", 600)
        printed = re.search(r"LeastAction:\s+(\S+)", out).group(1)
        found = Demo(f"http://localhost:{port}", printed, home, proc)
        # The demo settles its runs itself; on a busy machine its driver may give up waiting for a slow
        # answer while the runs go on, so the test waits for the runs it reads, as long as they take.
        _wait_for(log, proc, "demo: ", 0, after="Press Ctrl-C to stop.", until=("every example run", "did not finish"))
        found.wait_for_runs(("run_conditions_pipeline", "orders_daily_report", "dbt_queue_worker"), 1200)
        yield found
    finally:
        if proc.poll() is None:  # the last test stops it as a user does; after a failure, stop it here
            proc.send_signal(signal.SIGTERM)  # its trap stops Airflow
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()


def _signals_as_a_shell_gives_them() -> None:
    """The demo starts with the signal state a user's shell gives a command: none ignored or blocked. A
    test process may have inherited or left SIGINT ignored, and bash cannot trap a signal ignored when it
    starts, so Ctrl-C would not reach the demo's trap."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


def _signal_state(pid: int) -> str:
    """The process's blocked, ignored and caught signals, as the kernel shows them (for a failure message)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return f"pid {pid} is gone"
    return " ".join(
        line.replace("\t", "=") for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt"))
    )


def _wait_for(log, proc, line: str, timeout: float, *, after: str = "", until: tuple[str, ...] = ()) -> str:
    """The demo's output once ``line`` (or, after ``after``, one of ``until``) is in it."""
    deadline = time.monotonic() + (timeout or 1800)
    while time.monotonic() < deadline:
        log.seek(0)
        out = log.read()
        tail = out.split(after, 1)[1] if after and after in out else ("" if after else out)
        if (not until and line in tail) or any(u in tail for u in until):
            return out
        if proc.poll() is not None:
            pytest.fail(f"the demo stopped (exit {proc.returncode}):\n{out[-4000:]}")
        time.sleep(3)
    pytest.fail(f"the demo did not print {line!r} within {timeout:.0f}s")


@pytest.fixture(scope="module")
def chromium():
    with browser() as launched:
        yield launched


def _login(page, demo: Demo) -> None:
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "admin")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/auth/" not in url, timeout=60_000)


@pytest.fixture(scope="module")
def page(demo, chromium):
    context = chromium.new_context(viewport=FRAME)
    page = context.new_page()
    page.goto(demo.url + "/", wait_until="networkidle")
    page.wait_for_selector("input[name=username]", timeout=60_000)
    _login(page, demo)
    yield page
    context.close()


def _frame(page, path: str):
    page.goto(path, wait_until="networkidle")
    frame = page.frame_locator("iframe").first
    frame.locator("main").wait_for(timeout=60_000)
    return frame


def _shot(page, name: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / f"ui-{name}.png"))


def _pages(demo: Demo) -> dict[str, str]:
    run = quote(demo.run_of(RC), safe="")
    ti = f"/dags/{RC}/runs/{run}/tasks"
    return {
        **{slug: f"{demo.url}/plugin/leastaction-{slug}" for slug in NAV},
        "dag": f"{demo.url}/dags/{RC}/plugin/leastaction-dag",
        "task-instance": f"{demo.url}{ti}/reconcile/plugin/leastaction-task-instance",
        "ungated": f"{demo.url}{ti}/extract_east/plugin/leastaction-task-instance",
    }


class TestTheDemo:
    def test_example_dags_run_green_and_the_plugin_shows_their_activity(self, demo):
        # What `make demo-check` runs once the demo is up: the driver's check, against this demo.
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "demo_driver.py"), "check", "--url", demo.url,
             "--dags-folder", str(ROOT / "dags_examples"), "--from-date", DEMO_FROM, "--to-date", DEMO_TO,
             "--timeout", "900", "--runs-per-dag", "1"],
            capture_output=True, text=True, timeout=1800, check=False,
        )  # fmt: skip
        report = [line for line in done.stdout.splitlines() if line.startswith("check:")]
        assert done.returncode == 0, "\n".join(report) + "\n" + done.stderr[-4000:] + "\n" + demo.failures()
        run_line = re.compile(r"check: (\w+)\s+((?:(?:success|failed|running|queued) ?)+|no runs)$")
        runs = {m.group(1): m.group(2).split() for m in map(run_line.match, report) if m}
        assert {"orders_raw", "orders_enriched", "orders_daily_report"} <= set(runs)
        assert all(states and set(states) == {"success"} for states in runs.values()), runs
        activity = next(line for line in report if line.startswith("check: plugin API"))
        counts = dict(re.findall(r"(\w[\w ]*?): (\d+)", activity.removeprefix("check: plugin API ")))
        assert int(counts["decisions"]) > 0 and int(counts["consumption"]) > 0, activity
        assert int(counts["queue batches"]) > 0 and int(counts["queue events"]) > 0, activity
        assert int(counts["queue batches not successful"]) == 0, activity

    def test_the_printed_url_leads_through_login_to_the_plugin_page_inside_airflow(self, demo, chromium):
        assert demo.printed == f"{demo.url}/plugin/leastaction-decisions"
        context = chromium.new_context(viewport=FRAME)
        try:
            page = context.new_page()
            page.goto(demo.printed, wait_until="networkidle")
            page.wait_for_selector("input[name=username]", timeout=60_000)
            _login(page, demo)
            page.wait_for_url(re.compile(r"/plugin/leastaction-decisions"), timeout=60_000)
            frame = page.frame_locator("iframe").first
            frame.get_by_role("heading", name="Gate verdicts").wait_for(timeout=60_000)
        finally:
            context.close()

    def test_an_n_of_m_gate_that_ran_with_one_dependency_unmet_reads_admitted_2_of_3(self, demo, page):
        frame = _frame(page, _pages(demo)["task-instance"])
        verdict = frame.locator("section.verdict").first
        assert "admitted: 2 of 3" in verdict.locator(".headline").inner_text()
        assert "needs N = 2 of 3" in verdict.inner_text()
        _shot(page, "task-instance")

    def test_an_ungated_tasks_tab_says_it_has_no_gate(self, demo, page):
        frame = _frame(page, _pages(demo)["ungated"])
        assert "extract_east has no gate" in frame.locator("main").inner_text()

    def test_the_run_conditions_dag_tab_draws_its_edges(self, demo, page):
        frame = _frame(page, _pages(demo)["dag"])
        # Eight through gates (HAS_DATA, ANY of three, N of three, FAILURE) and the native ALWAYS.
        assert frame.locator("svg.dag path.edge:not(.plain)").count() == 9
        assert frame.locator("svg.dag text.edge-label", has_text="HAS_DATA").count() == 1
        assert frame.locator("svg.dag g.node", has_text="__gate").count() == 0
        _shot(page, "dag")

    def test_inside_a_dag_tab_the_address_follows_the_page_and_a_reload_keeps_it(self, demo, page):
        frame = _frame(page, _pages(demo)["dag"])
        frame.get_by_role("link", name="Gate verdicts").click()
        frame.get_by_role("heading", name="Gate verdicts").wait_for(timeout=60_000)
        page.wait_for_url(re.compile(r"[?&]la=%2Fleastaction%2Fdecisions"), timeout=30_000)
        assert f"/dags/{RC}/plugin/leastaction-dag" in page.url  # still the DAG's tab
        page.reload(wait_until="networkidle")
        reloaded = page.frame_locator("iframe").first
        reloaded.get_by_role("heading", name="Gate verdicts").wait_for(timeout=60_000)
        assert "DAG run_conditions_pipeline" in reloaded.locator("nav.la-nav").inner_text()  # the scope is kept

    @pytest.mark.parametrize("name", [*NAV, "dag", "task-instance"])
    def test_no_page_is_wider_than_its_frame_at_1000_px(self, demo, page, name):
        frame = _frame(page, _pages(demo)[name])
        scroll, client = frame.locator("html").evaluate("html => [html.scrollWidth, html.clientWidth]")
        assert scroll <= client, f"{name}: {scroll} px of content in a {client} px frame"
        if name in NAV and name != "graph":
            _shot(page, name)

    def test_the_menu_lists_every_page(self, demo, page):
        page.goto(demo.url + "/", wait_until="networkidle")
        page.get_by_role("button", name="Plugins").click()
        page.get_by_text("LeastAction", exact=True).hover()
        page.get_by_text("dbt queue", exact=True).wait_for()
        for label in ("Gate verdicts", "Consumption", "Catalog", "Dependency graph", "dbt queue"):
            assert page.get_by_text(label, exact=True).is_visible(), label
        _shot(page, "menu")

    def test_the_graph_of_a_task_draws_its_parents_and_children(self, demo, page):
        frame = _frame(page, _pages(demo)["graph"])
        frame.get_by_label("Find a task").fill("orders_enriched.enrich")
        frame.get_by_role("button", name="Search").click()
        frame.get_by_role("link", name="orders_enriched.enrich").click()
        frame.locator("svg.graph").wait_for()
        # orders_raw upstream (declared through the sensor), the daily report downstream.
        assert frame.locator("svg.graph g.node").count() >= 3
        assert frame.locator("svg.graph path.edge").count() >= 2
        _shot(page, "graph")

    def test_dark_mode_follows_airflow_and_has_no_white_background(self, demo, page):
        page.evaluate("localStorage.setItem('theme', 'dark')")
        try:
            for name in ("decisions", "dag"):
                frame = _frame(page, _pages(demo)[name])
                frame.locator("html.dark").wait_for(timeout=30_000)
                mode = frame.locator("html").get_attribute("class")
                background = frame.locator("body").evaluate("body => getComputedStyle(body).backgroundColor")
                assert "dark" in mode.split()
                assert background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)", "#ffffff"), background
            _shot(page, "dark")
        finally:
            page.evaluate("localStorage.setItem('theme', 'light')")

    @pytest.mark.parametrize("name", [*NAV, "dag", "task-instance"])
    def test_every_link_on_the_page_answers_2xx(self, demo, page, name):
        frame = _frame(page, _pages(demo)[name])
        hrefs = frame.locator("a[href]").evaluate_all(
            "links => links.map(a => new URL(a.getAttribute('href'), document.baseURI).href)"
        )  # an SVG link's href is an object, not text
        links = sorted({h for h in hrefs if h.startswith(demo.url)})
        assert links, f"{name} has no link"
        cookies = {c["name"]: c["value"] for c in page.context.cookies()}
        with httpx.Client(cookies=cookies, timeout=60) as client:
            failed = {url: client.get(url).status_code for url in links}
        assert {u: s for u, s in failed.items() if not 200 <= s < 300} == {}


class TestStopping:
    """Last in the module: it ends the demo the other tests read."""

    def test_ctrl_c_stops_airflow_and_frees_the_port(self, demo):
        state = _signal_state(demo.proc.pid)
        demo.proc.send_signal(signal.SIGINT)
        try:
            status = demo.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the demo did not stop within 90 s of Ctrl-C ({state}); its output:\n{demo.output()[-3000:]}")
        assert status == 130  # the demo's trap: stopped by the user
        port = int(demo.url.rsplit(":", 1)[1])
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0, "the API server outlived the demo"
