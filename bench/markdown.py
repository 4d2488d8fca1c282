"""Markdown building blocks of the generated tables of docs/performance.md (see :mod:`bench.tables`)."""

from __future__ import annotations

BACKEND = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


class ReportError(Exception):
    """A generated region that cannot be filled: names the region and what is missing."""


def _ms(x: float) -> str:
    return f"{x:,.1f}"


def _runs(xs: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in xs)


def _table(header: list[str], align: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
