"""MkDocs hook: render ``airflow-leastaction --help`` for every command where a page says ``<!-- cli-help -->``.

The command line reference is thereby generated from the same argparse parsers the CLI runs.
"""

from __future__ import annotations

MARKER = "<!-- cli-help -->"


def render() -> str:
    from airflow_leastaction.cli import build_parser
    from airflow_leastaction.cli.arguments import commands

    parts = []
    for path, parser in commands(build_parser()):
        title = " ".join(("airflow-leastaction", *path))
        level = "#" * min(2 + len(path), 4)
        parts.append(f"{level} `{title}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, **kwargs) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
