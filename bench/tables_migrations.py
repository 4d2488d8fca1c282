"""The table of docs/upgrading.md: each catalog migration's time on a large catalog, and how long a gate of
the release before waited on the catalog while it ran (see :mod:`bench.bench_migrations`)."""

from __future__ import annotations

import re

from bench.markdown import BACKEND, _table


def _waits(row: dict) -> str:
    cell = f"{row['read_max_s']:.2f} / {row['write_max_s']:.2f}"
    # "write: (sqlite3.OperationalError) database is locked" -> "write failed: database is locked"
    failed = [re.sub(r"^(\w+): (\([\w.]+\) )?", r"\1 failed: ", error) for error in row["errors"]]
    return cell + (f" ({'; '.join(failed)})" if failed else "")


def migrations(doc: dict, part: str | None) -> list[str]:
    results = doc["results"]
    by_backend = {r["backend"]: {row["revision"]: row for row in r["revisions"]} for r in results}
    order = [row["revision"] for row in results[0]["revisions"]]
    header, align = ["revision"], ["---"]
    for r in results:
        header += [f"{BACKEND[r['backend']]} (s)", f"{BACKEND[r['backend']]}: gate read / write waited (s)"]
        align += ["---:", "---:"]
    rows = []
    for revision in order:
        row = [f"`{revision}`"]
        for r in results:
            found = by_backend[r["backend"]][revision]
            row += [f"{found['seconds']:,.1f}", _waits(found)]
        rows.append(row)
    total = ["all of them, one after the other (the sum)"]
    for r in results:
        total += [f"{sum(row['seconds'] for row in r['revisions']):,.1f}", ""]
    at_once = ["all of them in one transaction, as `db upgrade` runs them"]
    for r in results:
        (row,) = r["at_once"]
        at_once += [f"{row['seconds']:,.1f}", _waits(row)]
    inputs = doc["inputs"]
    scale = (
        f"A catalog of {inputs['decisions']:,} gate decisions, {inputs['consumption']:,} consumption records, "
        f"{inputs['tasks']:,} tasks and {inputs['slots']:,} slot records, loaded at `0002_dbt_queue`: each "
        "revision in a transaction of its own, then (the last row) a copy of that catalog in one transaction."
    )
    return [scale, "", *_table(header, align, [*rows, total, at_once])]
