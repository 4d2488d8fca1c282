"""``airflow-leastaction queue``: request dbt models, drain the queue, read its state and history."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

from airflow_leastaction.catalog.schema import task
from airflow_leastaction.cli.arguments import Checked, Count, Directory, Instant, Name, Seconds, Text
from airflow_leastaction.dbt.demand import submit
from airflow_leastaction.dbt.passes import PassOptions
from airflow_leastaction.dbt.planner import DEFAULT_EXCLUDED, Planner, validate_selector
from airflow_leastaction.dbt.queue_store import QueueStore, summarize
from airflow_leastaction.dbt.request_key import COMMANDS, canonical_vars, request_key
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.dbt.schema import dbt_queue, dbt_request
from airflow_leastaction.dbt.worker import QueueWorker
from airflow_leastaction.exceptions import DbtPlanningError, DbtRequestError, InvalidArgumentError
from airflow_leastaction.hooks.catalog import queue_store
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import deployment_project

#: Exit status of a drain that left failed models.
EXIT_FAILED_MODELS = 3
#: Exit status of an enqueue whose selector cannot be planned: empty (nothing recorded) or matching no
#: enabled dbt node (recorded as planning_failed).
EXIT_UNPLANNABLE = 2


def source_task_arg(parser, note: str) -> None:
    parser.add_argument(
        "--source-task",
        action="append",
        default=[],
        metavar="SOURCE=PROJECT/TASK",
        type=Checked(source_task_option, "SOURCE=PROJECT/TASK, e.g. field_ops.orders=team_a/orders_raw"),
        help=f"the catalog task loading a source, e.g. field_ops.orders=team_a/orders_raw (repeatable; {note})",
    )


def project_args(parser) -> None:
    parser.add_argument(
        "--project-dir", required=True, type=Directory("dbt_project.yml"), help="the dbt project directory"
    )
    parser.add_argument(
        "--profiles-dir",
        default=None,
        type=Directory("profiles.yml"),
        help="directory holding profiles.yml (default: the project directory)",
    )
    parser.add_argument(
        "--target", default=None, type=Text(nonempty=True), help="dbt target name (default: the profile's)"
    )


def _environment_arg(parser, what: str) -> None:
    parser.add_argument(
        "--environment",
        default="default",
        type=Name(dbt_queue.c.environment),
        help=f"the queue environment {what} (default: default)",
    )


def register(sub) -> None:
    queue = sub.add_parser("queue", help="the dbt model queue").add_subparsers(dest="queue_command", required=True)
    enq = queue.add_parser("enqueue", help="resolve a selector with dbt ls and queue its models")
    enq.add_argument(
        "selector",
        type=Text(nonempty=True, expected="a dbt selector"),
        help="dbt selector, e.g. 'source:field_ops.work_orders+'",
    )
    _environment_arg(enq, "to queue the models in")
    enq.add_argument(
        "--exclude",
        nargs="*",
        default=list(DEFAULT_EXCLUDED),
        type=Name(dbt_queue.c.materialized),
        help=f"materializations not queued (default: {' '.join(DEFAULT_EXCLUDED)})",
    )
    enq.add_argument(
        "--requested-by",
        default="cli",
        type=Name(dbt_request.c.requested_by),
        help="who asks, as the queue's history shows it (default: cli)",
    )
    enq.add_argument(
        "--command",
        default="build",
        choices=COMMANDS,
        help="the dbt command to queue the models for (default: build; only requests with equal command, "
        "flags and target share a batch)",
    )
    enq.add_argument("--full-refresh", action="store_true", help="dbt --full-refresh (build, run, seed only)")
    enq.add_argument(
        "--vars",
        dest="dbt_vars",
        default=None,
        type=Checked(canonical_vars, "a JSON object of dbt vars"),
        help="dbt --vars, a JSON object",
    )
    enq.add_argument(
        "--exclude-selector",
        default=None,
        type=Text(nonempty=True, expected="a dbt selector"),
        help="dbt --exclude: nodes left out of the selector",
    )
    enq.add_argument("--force", action="store_true", help="build the models even if nothing they read changed")
    enq.add_argument(
        "--slot",
        default=None,
        type=Instant(),
        help="the interval the request is for (ISO-8601 with offset; default: now): the catalog slot the "
        "models' pass completes",
    )
    project_args(enq)
    enq.set_defaults(func=_enqueue)
    drain = queue.add_parser("drain", help="claim compatible batches and build them until nothing is eligible")
    _environment_arg(drain, "to drain")
    drain.add_argument(
        "--grace",
        type=Seconds(),
        default=300.0,
        help="seconds before a silent worker's lease and rows return (default: 300; longer than --heartbeat)",
    )
    drain.add_argument("--heartbeat", type=Seconds(), default=10.0, help="seconds between heartbeats (default: 10)")
    drain.add_argument(
        "--max-batches",
        type=Count(1),
        default=None,
        help="stop after this many batches (default: until none is eligible)",
    )
    drain.add_argument(
        "--state-aware",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="reuse models whose code and inputs have not changed since their last build (default: on)",
    )
    source_task_arg(drain, "wins over the source's meta")
    drain.add_argument(
        "--catalog-project",
        default=None,
        type=Name(task.c.project),
        help="catalog project of the models (default: the dbt project's name)",
    )
    project_args(drain)
    drain.set_defaults(func=_drain)
    status = queue.add_parser("status", help="active rows (pending and running)")
    _environment_arg(status, "to show")
    status.add_argument("--json", action="store_true", help="print the rows as JSON")
    status.set_defaults(func=_status)
    hist = queue.add_parser("history", help="finished models, requests and merge outcome counts")
    _environment_arg(hist, "to show")
    hist.add_argument(
        "--limit", type=Count(1), default=20, help="most finished models and requests shown, each (default: 20)"
    )
    hist.add_argument("--json", action="store_true", help="print the outcomes, models and requests as JSON")
    hist.set_defaults(func=_history)


def _runner(args) -> DbtRunner:
    return DbtRunner(args.project_dir, profiles_dir=args.profiles_dir, target=args.target)


def _store(args) -> QueueStore:
    # The queue is checked before dbt is asked anything: an unreachable catalog fails the command first.
    return queue_store(args.conn_id, reachable=True)


def _enqueue(args) -> int:
    try:
        selector = validate_selector(args.selector)
    except DbtPlanningError as exc:  # refused before the planner: no request to record
        print(f"error: {exc} (nothing recorded)", file=sys.stderr)
        return EXIT_UNPLANNABLE
    request_key(args.environment, command=args.command, full_refresh=args.full_refresh, dbt_vars=args.dbt_vars)
    try:
        report = submit(
            Planner(_runner(args), args.exclude),
            _store(args),
            args.environment,
            selector,
            command=args.command,
            full_refresh=args.full_refresh,
            dbt_vars=args.dbt_vars,
            exclude_selector=args.exclude_selector,
            force=args.force,
            slot=args.slot,
            requested_by=args.requested_by,
        )
    except DbtPlanningError as exc:
        print(f"error: {exc} (recorded as planning_failed)", file=sys.stderr)
        return EXIT_UNPLANNABLE
    print(json.dumps(report.as_dict(), indent=2))
    return 0


def _drain(args) -> int:
    if args.heartbeat >= args.grace:  # the lease would lapse between two renewals
        raise InvalidArgumentError("--heartbeat", args.heartbeat, f"must be shorter than --grace ({args.grace:g})")
    worker = QueueWorker(
        _store(args),
        _runner(args),
        args.environment,
        grace=dt.timedelta(seconds=args.grace),
        heartbeat_interval=args.heartbeat,
        passes=PassOptions(
            state_aware=args.state_aware,
            source_tasks=dict(source_task_option(text) for text in args.source_task),
            catalog_project=args.catalog_project,
            default_project=deployment_project(),
        ),
    )
    report = worker.drain(args.max_batches).as_dict()
    print(json.dumps(report, indent=2))
    return EXIT_FAILED_MODELS if report["failed"] else 0


def source_task_option(text: str) -> tuple[str, TaskIdentity]:
    source, _, task = text.partition("=")
    project, _, name = task.rpartition("/")
    if not source.strip() or not project.strip() or not name.strip():
        raise DbtRequestError(f"--source-task {text!r}: write SOURCE=PROJECT/TASK, e.g. shop.orders=team_a/load")
    return source.strip(), TaskIdentity(name.strip(), project.strip())


def _jsonable(row: dict) -> dict:
    return {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in row.items()}


def _status(args) -> int:
    rows = _store(args).active_rows(args.environment)
    if args.json:
        print(json.dumps([_jsonable(r) for r in rows], indent=2))
        return 0
    counts = summarize(rows)
    print(f"environment {args.environment!r}: {counts['pending']} pending, {counts['running']} running")
    for r in rows:
        flag = " (follow-up owed)" if r["requested_while_running"] else ""
        print(f"  {r['status']:<8} {r['tier']:<10} x{r['request_count']:<5} {r['unique_id']}{flag}")
    return 0


def _history(args) -> int:
    store = _store(args)
    finished = store.history(args.environment, limit=args.limit)
    requests = store.requests(args.environment, limit=args.limit)
    counts = store.outcome_counts(args.environment)
    today = store.passes_today(args.environment)
    if args.json:
        print(
            json.dumps(
                {
                    "outcomes": counts,
                    "today": today,
                    "finished": [_jsonable(r) for r in finished],
                    "requests": [_jsonable(r) for r in requests],
                },
                indent=2,
            )
        )
        return 0
    print("request events: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"today (UTC): {today['built']} model build(s), {today['reused']} reused: builds saved {today['reused']}")
    print("finished models (newest first):")
    for r in finished:
        why = r["message"] if r["status"] == "failed" or not r["reason"] else r["reason"]
        note = f" - {' '.join(why.split())[:240]}" if why else ""
        print(
            f"  {r['finished_at']:%Y-%m-%d %H:%M:%S} {r['status']:<7} {r['outcome']:<16} {r['decision'] or '':<7} "
            f"{r['unique_id']}{note}"
        )
    print("requests (newest first):")
    for r in requests:
        note = f" - {r['message']}" if r["message"] else ""
        print(
            f"  {r['requested_at']:%Y-%m-%d %H:%M:%S} {r['status']:<16} {r['model_count']:>3} model(s) "
            f"{r['selector']}{note}"
        )
    return 0
