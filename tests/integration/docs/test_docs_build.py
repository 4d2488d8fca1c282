"""The documentation site builds with MkDocs in strict mode: any warning (a broken link, a missing
snippet file, a docstring that names a parameter the signature lacks) fails the build."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.paths import ROOT


def page_text(path: Path) -> str:
    """A built page's text with markup (syntax highlighting included) removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


class TestDocsSite:
    def test_every_page_in_the_nav_is_built(self, site):
        config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
        for page in nav_pages(config["nav"]):
            assert (site / page.replace(".md", "") / "index.html").exists() or page == "index.md", page
        assert (site / "index.html").exists()

    def test_every_markdown_page_is_in_the_nav(self):
        config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
        listed = set(nav_pages(config["nav"]))
        on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
        assert on_disk <= listed, f"pages missing from the nav: {sorted(on_disk - listed)}"

    @pytest.mark.parametrize(
        "page,example",
        [
            ("interval-dependencies", "orders_backfill.py"),
            ("interval-dependencies", "weekly_parent.py"),
            ("run-conditions", "run_conditions_pipeline.py"),
            ("dbt-queue", "dbt_queue_worker.py"),
        ],
    )
    def test_guides_show_the_example_dags_verbatim(self, site, page, example):
        text = page_text(site / page / "index.html")
        source = (ROOT / "dags_examples" / example).read_text()
        for line in source.splitlines():
            assert line.strip() in text, f"{page} lacks {example}: {line!r}"
        assert "--8<--" not in text

    def test_reference_is_generated_from_docstrings(self, site):
        html = (site / "reference" / "sensors" / "index.html").read_text()
        doc = "Wait until every parent in the task catalog has finished the interval that covers this run"
        assert doc in html
        assert "wait_for_new_output" in html

    def test_command_line_reference_lists_every_command(self, site):
        from airflow_leastaction.cli import COMMAND_MODULES

        html = (site / "reference" / "cli" / "index.html").read_text()
        for name in COMMAND_MODULES:
            assert f"airflow-leastaction {name}" in html, name

    def test_screenshots_are_published(self, site):
        for image in (ROOT / "docs" / "images").glob("*.png"):
            assert (site / "images" / image.name).exists(), image.name
