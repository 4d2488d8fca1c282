"""``airflow-leastaction db``: create or upgrade the catalog schema; prune old history."""

from __future__ import annotations

import datetime as dt
import json

from airflow_leastaction.catalog.engine import shown_url
from airflow_leastaction.catalog.migrate import current_revisions, head_revisions, upgrade
from airflow_leastaction.catalog.retention import DEFAULT_BATCH_SIZE, prune_catalog
from airflow_leastaction.cli.arguments import Checked, Count
from airflow_leastaction.exceptions import InvalidRetentionCutoffError
from airflow_leastaction.hooks.catalog import CatalogHook


def register(sub) -> None:
    db = sub.add_parser("db", help="catalog schema migrations and retention").add_subparsers(
        dest="db_command", required=True
    )
    up = db.add_parser("upgrade", help="apply every pending migration")
    up.set_defaults(func=_upgrade)
    cur = db.add_parser("current", help="print the applied and the latest revisions")
    cur.set_defaults(func=_current)
    prune = db.add_parser("prune", help="delete history older than a date, keeping what is still needed")
    prune.add_argument(
        "--before",
        required=True,
        metavar="DATE",
        type=Checked(parse_cutoff, "a date or an ISO-8601 time with an offset"),
        help="cutoff: a date (midnight UTC) or an ISO-8601 time with an offset, in the past",
    )
    prune.add_argument("--dry-run", action="store_true", help="count what would go; delete nothing")
    prune.add_argument(
        "--batch-size",
        type=Count(1),
        default=None,
        help=f"rows deleted per transaction (default: {DEFAULT_BATCH_SIZE:,})",
    )
    prune.add_argument("--json", action="store_true", help="print the counts as JSON")
    prune.set_defaults(func=_prune)


def _upgrade(args) -> int:
    hook = CatalogHook(args.conn_id)
    url, engine = hook.get_url(), hook.get_engine(migrate=False)
    upgrade(engine)
    print(f"catalog at {shown_url(url)} is at {', '.join(sorted(current_revisions(engine)))}")
    return 0


def _current(args) -> int:
    engine = CatalogHook(args.conn_id).get_engine(migrate=False)
    current, heads = current_revisions(engine), head_revisions()
    print(f"applied: {', '.join(sorted(current)) or 'none'}; latest: {', '.join(sorted(heads))}")
    return 0 if current == heads else 3


def parse_cutoff(text: str) -> dt.datetime:
    """``--before``: a bare date means midnight UTC of that day; a time must carry its UTC offset."""
    try:
        if len(text) == 10:
            return dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), dt.UTC)
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRetentionCutoffError(text, "not an ISO-8601 date or time") from None


def _prune(args) -> int:
    cutoff = parse_cutoff(args.before)
    report = prune_catalog(
        cutoff,
        conn_id=args.conn_id,
        dry_run=args.dry_run,
        batch_size=DEFAULT_BATCH_SIZE if args.batch_size is None else args.batch_size,
    )
    if args.json:
        print(json.dumps({"before": report.cutoff.isoformat(), "dry_run": report.dry_run, "rows": report.counts()}))
        return 0
    verb = "would delete" if report.dry_run else "deleted"
    for name, rows in report.counts().items():
        print(f"{name}: {verb} {rows}")
    return 0
