"""``airflow-leastaction db``: create or upgrade the catalog schema."""

from __future__ import annotations

from airflow_leastaction.catalog.engine import get_engine, resolve_url
from airflow_leastaction.catalog.migrate import current_revisions, head_revisions, upgrade


def register(sub) -> None:
    db = sub.add_parser("db", help="catalog schema migrations").add_subparsers(dest="db_command", required=True)
    up = db.add_parser("upgrade", help="apply every pending migration")
    up.set_defaults(func=_upgrade)
    cur = db.add_parser("current", help="print the applied and the latest revisions")
    cur.set_defaults(func=_current)


def _upgrade(args) -> int:
    url = resolve_url(args.conn_id)
    engine = get_engine(url, migrate=False)
    upgrade(engine)
    print(f"catalog at {engine.url.render_as_string(hide_password=True)} is at {', '.join(sorted(current_revisions(engine)))}")
    return 0


def _current(args) -> int:
    engine = get_engine(resolve_url(args.conn_id), migrate=False)
    current, heads = current_revisions(engine), head_revisions()
    print(f"applied: {', '.join(sorted(current)) or 'none'}; latest: {', '.join(sorted(heads))}")
    return 0 if current == heads else 3
