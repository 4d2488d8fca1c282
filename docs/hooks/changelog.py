"""MkDocs hook: the changelog page is CHANGELOG.md itself, put where ``docs/changelog.md`` says
``<!-- changelog -->``. Its links are written from the repository's root (``docs/upgrading.md``), so that
they work where it is read on its own; on the site, where the pages are siblings, they drop ``docs/``."""

from __future__ import annotations

from pathlib import Path

MARKER = "<!-- changelog -->"
CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"


def on_page_markdown(markdown: str, **kwargs) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, CHANGELOG.read_text().replace("](docs/", "]("))
