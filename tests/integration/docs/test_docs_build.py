"""The documentation site builds with MkDocs in strict mode: any warning (a broken link, a missing
snippet file, a docstring that names a parameter the signature lacks) fails the build."""

from __future__ import annotations

import html
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from airflow_leastaction.version_compat import PARTITION_ROLLUPS
from tests.helpers.airflow_minors import needs
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


def public_definitions() -> dict[str, set[str]]:
    """Every public class and function of the package, by name: the dotted paths that define it."""
    import airflow_leastaction

    defined: dict[str, set[str]] = {}
    for info in pkgutil.walk_packages(airflow_leastaction.__path__, "airflow_leastaction."):
        if ".migrations" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            public = not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__
            if public and (inspect.isclass(obj) or inspect.isfunction(obj)):
                defined.setdefault(name, set()).add(f"{module.__name__}.{name}")
    return defined


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

    def test_every_public_class_and_function_the_guides_name_is_in_the_reference(self, site):
        # The home page promises every public class and function; those a guide names must be there.
        defined = public_definitions()
        guides = "\n".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
        spans = re.findall(r"`([^`\n]+)`", guides)
        # A name counts by its dotted path, as a call (`name()`) or as a class (`CapWords`): a bare
        # lowercase word in a guide is as often a parameter or a state as a function.
        named = {m.group(1) for span in spans if (m := re.fullmatch(r"airflow_leastaction\.[\w.]*\.(\w+)", span))}
        named |= {m.group(1) for span in spans if (m := re.match(r"([A-Za-z_]\w*)\(", span))}
        named |= {span for span in spans if re.fullmatch(r"[A-Z][a-z]\w*", span)}
        documented = {
            anchor
            for page in (site / "reference").rglob("*.html")
            for anchor in re.findall(r'id="(airflow_leastaction[\w.]*)"', page.read_text())
        }
        missing = sorted(
            f"{name} ({', '.join(sorted(defined[name]))})"
            for name in named & defined.keys()
            if not defined[name] & documented
        )
        assert missing == []

    def test_screenshots_are_published(self, site):
        for image in (ROOT / "docs" / "images").glob("*.png"):
            assert (site / "images" / image.name).exists(), image.name


@needs(PARTITION_ROLLUPS, "partition roll-ups (Airflow 3.3): the page counts the examples the newest minor defines")
def test_the_performance_page_counts_the_example_dags_as_they_are(dagbag):
    examples = {d for d, dag in dagbag.dags.items() if "/examples/" in dag.fileloc}
    text = " ".join((ROOT / "docs" / "performance.md").read_text().split())
    stated = re.search(r"there are (\d+) example DAGs today", text)
    assert stated and int(stated.group(1)) == len(examples), (stated, sorted(examples))


def test_the_ui_page_names_the_migration_that_creates_each_filter_index():
    from airflow_leastaction.catalog.migrations import versions

    text = " ".join((ROOT / "docs" / "ui.md").read_text().split())
    claim = re.search(r"the result filter's, on `\((\w+), time, id\)`, comes with .*? \(migration `(\w+)`\)", text)
    assert claim, "ui.md says which migration creates the result filter's index"
    source = next(
        p for p in Path(versions.__path__[0]).glob("*.py") if f'revision = "{claim.group(2)}"' in p.read_text()
    )
    assert '"ix_la_gate_decision_result_time", ["result", "decided_at", "id"]' in source.read_text()
