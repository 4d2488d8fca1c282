"""``airflow-leastaction catalog``: report external completions and read the catalog."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.outcomes import replay, spool_dir
from airflow_leastaction.catalog.spool_check import QUARANTINE_PREFIX, quarantined
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.exceptions import CatalogError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.slots import cron_granularity


def register(sub) -> None:
    cat = sub.add_parser("catalog", help="the task catalog").add_subparsers(dest="catalog_command", required=True)
    rep = cat.add_parser("report", help="publish a completed interval of a task outside Airflow")
    rep.add_argument("name")
    rep.add_argument("--project", required=True)
    rep.add_argument(
        "--slot", required=True, help="interval start, ISO-8601 with offset, e.g. 2026-11-28T00:00:00+00:00"
    )
    rep.add_argument("--account", default="")
    rep.add_argument("--partition", default="")
    rep.add_argument("--cron", default=None, help="the task's schedule (omit for ad hoc)")
    rep.add_argument("--timezone", default="UTC")
    rep.add_argument("--rows-written", type=int, default=None)
    rep.add_argument("--run-id", default=None)
    rep.set_defaults(func=_report)
    show = cat.add_parser("show", help="print one task with its watermark")
    show.add_argument("name")
    show.add_argument("--project", required=True)
    show.add_argument("--account", default="")
    show.add_argument("--partition", default="")
    show.set_defaults(func=_show)
    replay = cat.add_parser("replay", help="apply outcomes the listener spooled while the catalog was down")
    replay.add_argument("--spool-dir", default=None, help="default: [leastaction] spool_dir")
    replay.set_defaults(func=_replay)


def _report(args) -> int:
    try:
        outcome = report_completion(
            args.name,
            args.project,
            args.slot,
            account=args.account,
            partition=args.partition,
            cron=args.cron,
            timezone=args.timezone,
            rows_written=args.rows_written,
            run_id=args.run_id,
            conn_id=args.conn_id,
        )
    except CatalogError:
        raise  # an unknown or unreachable catalog is not a bad argument: 1, like every other command
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    what = "published revision" if outcome.applied else "already recorded at revision"
    print(f"{args.project}/{args.name} slot {args.slot}: {what} {outcome.output_revision}")
    return 0


def _show(args) -> int:
    row = CatalogStore(conn_id=args.conn_id).get_task(
        TaskIdentity(args.name, args.project, args.account, args.partition)
    )
    if row is None:
        print(f"{args.project}/{args.name}: not in the catalog")
        return 1
    data = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in dict(row).items()}
    data["granularity"] = cron_granularity(row["cron"]) if row["cron"] else None
    print(json.dumps(data, indent=2))
    return 0


def _replay(args) -> int:
    directory = Path(args.spool_dir) if args.spool_dir else spool_dir()
    set_aside: list[str] = []
    applied = replay(CatalogStore(conn_id=args.conn_id), directory, set_aside)
    print(f"replayed {applied} spooled outcome(s) from {directory}")
    for reason in set_aside:
        print(f"quarantined (can never be applied): {reason}")
    held = len(quarantined(directory))
    if held:
        print(
            f"{held} quarantined outcome(s) in {directory}/{QUARANTINE_PREFIX}*.jsonl: each gives its reason "
            "and the outcome; once dealt with, delete the file"
        )
    # 1 when this replay set something aside, so a scheduled replay alerts someone.
    return 1 if set_aside else 0
