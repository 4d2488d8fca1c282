"""``airflow-leastaction catalog``: report external completions and read the catalog."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_leastaction.catalog.external import report_completion
from airflow_leastaction.catalog.outcomes import replay, spool_dir
from airflow_leastaction.catalog.schema import task, task_run
from airflow_leastaction.catalog.spool_check import QUARANTINE_PREFIX, quarantined
from airflow_leastaction.cli.arguments import Checked, Count, Directory, Identity, Name, Slot
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.slots import cron_granularity, normalize_cron, resolve_timezone
from airflow_leastaction.reruns.late_arrival import sweep


def _identity_args(parser, what: str) -> None:
    parser.add_argument("name", type=Name(task.c.name), help=f"the task's name in its project ({what})")
    parser.add_argument("--project", required=True, type=Name(task.c.project), help="the project owning the task")
    parser.add_argument(
        "--account", default="", type=Name(task.c.account, empty=True), help="the account, if the owner uses one"
    )
    parser.add_argument(
        "--partition",
        default="",
        type=Name(task.c.partition, empty=True),
        help="the partition, if the owner uses one (an Airflow mapped task: its map index)",
    )


def register(sub) -> None:
    cat = sub.add_parser("catalog", help="the task catalog").add_subparsers(dest="catalog_command", required=True)
    rep = cat.add_parser("report", help="publish a completed interval of a task outside Airflow")
    _identity_args(rep, "a task of an Airflow DAG cannot be reported")
    rep.add_argument(
        "--slot",
        required=True,
        type=Slot(),
        help="interval start, ISO-8601 with offset, e.g. 2026-11-28T00:00:00+00:00",
    )
    rep.add_argument(
        "--cron",
        default=None,
        type=Checked(normalize_cron, "a cron expression of five fields or a macro such as @daily", task.c.cron),
        help="the task's schedule; the latest report naming one sets it (omitted: the task keeps its schedule, "
        "ad hoc for a new task)",
    )
    rep.add_argument(
        "--timezone",
        default="UTC",
        type=Checked(resolve_timezone, "an IANA time zone such as UTC or Europe/Paris", task.c.timezone),
        help="the time zone the cron is read in (default: UTC; with --cron only)",
    )
    rep.add_argument(
        "--rows-written",
        type=Count(0),
        default=None,
        help="rows inserted, updated and deleted, for HAS_DATA dependencies",
    )
    run = rep.add_mutually_exclusive_group()
    run.add_argument(
        "--repair",
        action="store_true",
        help="the slot was computed again: publish a new revision (each --repair is one more); without it "
        "a slot already recorded is left as it is",
    )
    run.add_argument(
        "--run-id",
        default=None,
        type=Name(task_run.c.run_id),
        help="the reporting system's run; the same run again changes nothing, another one is a repair "
        "(default: derived from the slot)",
    )
    rep.add_argument(
        "--parent",
        action="append",
        default=[],
        type=Identity(),
        help="a catalog task this one reads, project/name (repeat for each); re-run plans list this task",
    )
    rep.set_defaults(func=_report)
    show = cat.add_parser("show", help="print one task with its watermark")
    _identity_args(show, "as the catalog names it")
    show.set_defaults(func=_show)
    replay = cat.add_parser("replay", help="apply outcomes the listener spooled while the catalog was down")
    replay.add_argument(
        "--spool-dir", default=None, type=Directory(), help="the spool directory (default: [leastaction] spool_dir)"
    )
    replay.set_defaults(func=_replay)
    rerun = cat.add_parser(
        "rerun-late",
        help='re-run every degraded run whose missing inputs all arrived (on_late_arrival="rerun"), and '
        "every re-run a process claimed and died with",
    )
    rerun.set_defaults(func=_rerun_late)


def _report(args) -> int:
    # A report the catalog cannot take is an InvalidReportError (exit 2); an unknown or unreachable
    # catalog is not a bad argument: 1, as for every other command.
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
        parents=args.parent,
        repair=args.repair,
    )
    what = "published revision" if outcome.applied else "already recorded at revision"
    print(f"{args.project}/{args.name} slot {args.slot.isoformat()}: {what} {outcome.output_revision}")
    return 0


def _show(args) -> int:
    row = catalog_store(args.conn_id).get_task(TaskIdentity(args.name, args.project, args.account, args.partition))
    if row is None:
        print(f"{args.project}/{args.name}: not in the catalog")
        return 1
    data = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in dict(row).items()}
    data["granularity"] = cron_granularity(row["cron"]) if row["cron"] else None
    print(json.dumps(data, indent=2))
    return 0


def _replay(args) -> int:
    directory = Path(args.spool_dir) if args.spool_dir else spool_dir()
    store = catalog_store(args.conn_id, reachable=True)  # fails while the catalog is down, spool or not
    set_aside: list[str] = []
    applied = replay(store, directory, set_aside)
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


def _rerun_late(args) -> int:
    store = catalog_store(args.conn_id, reachable=True)  # fails while the catalog is down
    lines = sweep(store, everything=True)
    for line in lines:
        print(line)
    print(f"{len(lines)} re-run(s) on late arrival asked of Airflow")
    return 0
