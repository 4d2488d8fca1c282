"""``airflow-leastaction stale``: consumers whose consumed upstream revision is older than the current one.

After a repair of an upstream slot (it completed again, publishing revision + 1), every task that
consumed an older revision of that slot is listed: what to re-run. So is every run admitted degraded at
its fallback's deadline once a dependency it ran without completed ("ran without X").
"""

from __future__ import annotations

import json

from airflow_leastaction.catalog.schema import consumption
from airflow_leastaction.cli.arguments import Name
from airflow_leastaction.hooks.catalog import catalog_store


def register(sub) -> None:
    p = sub.add_parser("stale", help="list consumers of upstream output that has since been repaired")
    p.add_argument("--dag-id", default=None, type=Name(consumption.c.dag_id), help="only consumers in this DAG")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=_stale)


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def _stale(args) -> int:
    rows = catalog_store(args.conn_id).audit.stale_consumers(args.dag_id)
    if args.json:
        for r in rows:
            print(json.dumps({k: _iso(v) if hasattr(v, "isoformat") else v for k, v in r.items()}, sort_keys=True))
        return 0
    if not rows:
        print("no stale consumers")
        return 0
    print(f"{len(rows)} stale consumer(s): re-run them to consume the repaired or late output")
    for r in rows:
        where = f"{r['dag_id']}.{r['task_id']} slot {_iso(r['downstream_slot'])}"
        if r["missing"]:
            what = (
                f"ran without {r['dependency']} slot {_iso(r['upstream_slot'])} (degraded at its fallback's "
                f"deadline), which completed since at revision {r['current_revision']}"
            )
        else:
            what = (
                f"consumed {r['dependency']} slot {_iso(r['upstream_slot'])} revision {r['consumed_revision']}, "
                f"current revision {r['current_revision']}"
            )
        print(f"{where}: {what} (run {r['run_id']})")
    return 0
