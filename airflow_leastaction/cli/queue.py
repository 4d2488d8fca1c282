"""``airflow-leastaction queue``: request dbt models, drain the queue, read its state and history."""

from __future__ import annotations

import datetime as dt
import json

from airflow_leastaction.dbt.demand import submit
from airflow_leastaction.dbt.planner import DEFAULT_EXCLUDED, Planner, validate_selector
from airflow_leastaction.dbt.queue_store import QueueStore, summarize
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.dbt.worker import QueueWorker
from airflow_leastaction.exceptions import DbtPlanningError

#: Exit status of a drain that left failed models.
EXIT_FAILED_MODELS = 3
#: Exit status of an enqueue whose selector cannot be planned: empty (nothing recorded) or matching no
#: enabled dbt node (recorded as planning_failed).
EXIT_UNPLANNABLE = 2


def _project_args(parser) -> None:
    parser.add_argument("--project-dir", required=True, help="the dbt project directory")
    parser.add_argument("--profiles-dir", default=None, help="directory holding profiles.yml (default: project dir)")
    parser.add_argument("--target", default=None, help="dbt target name")


def register(sub) -> None:
    queue = sub.add_parser("queue", help="the dbt model queue").add_subparsers(dest="queue_command", required=True)
    enq = queue.add_parser("enqueue", help="resolve a selector with dbt ls and queue its models")
    enq.add_argument("selector", help="dbt selector, e.g. 'source:field_ops.work_orders+'")
    enq.add_argument("--environment", default="default")
    enq.add_argument("--exclude", nargs="*", default=list(DEFAULT_EXCLUDED), help="materializations not queued")
    enq.add_argument("--requested-by", default="cli")
    _project_args(enq)
    enq.set_defaults(func=_enqueue)
    drain = queue.add_parser("drain", help="claim compatible batches and build them until nothing is eligible")
    drain.add_argument("--environment", default="default")
    drain.add_argument("--grace", type=float, default=300.0, help="seconds before a silent worker's rows return")
    drain.add_argument("--heartbeat", type=float, default=10.0, help="seconds between heartbeats")
    drain.add_argument("--max-batches", type=int, default=None)
    _project_args(drain)
    drain.set_defaults(func=_drain)
    status = queue.add_parser("status", help="active rows (pending and running)")
    status.add_argument("--environment", default="default")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_status)
    hist = queue.add_parser("history", help="finished models, requests and merge outcome counts")
    hist.add_argument("--environment", default="default")
    hist.add_argument("--limit", type=int, default=20)
    hist.add_argument("--json", action="store_true")
    hist.set_defaults(func=_history)


def _runner(args) -> DbtRunner:
    return DbtRunner(args.project_dir, profiles_dir=args.profiles_dir, target=args.target)


def _store(args) -> QueueStore:
    return QueueStore(conn_id=args.conn_id)


def _enqueue(args) -> int:
    try:
        selector = validate_selector(args.selector)
    except DbtPlanningError as exc:  # refused before the planner: no request to record
        print(f"error: {exc} (nothing recorded)")
        return EXIT_UNPLANNABLE
    try:
        report = submit(
            Planner(_runner(args), args.exclude),
            _store(args),
            args.environment,
            selector,
            requested_by=args.requested_by,
        )
    except DbtPlanningError as exc:
        print(f"error: {exc} (recorded as planning_failed)")
        return EXIT_UNPLANNABLE
    print(json.dumps(report.as_dict(), indent=2))
    return 0


def _drain(args) -> int:
    worker = QueueWorker(
        _store(args),
        _runner(args),
        args.environment,
        grace=dt.timedelta(seconds=args.grace),
        heartbeat_interval=args.heartbeat,
    )
    report = worker.drain(args.max_batches).as_dict()
    print(json.dumps(report, indent=2))
    return EXIT_FAILED_MODELS if report["failed"] else 0


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
    if args.json:
        print(
            json.dumps(
                {
                    "outcomes": counts,
                    "finished": [_jsonable(r) for r in finished],
                    "requests": [_jsonable(r) for r in requests],
                },
                indent=2,
            )
        )
        return 0
    print("request events: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("finished models (newest first):")
    for r in finished:
        note = f" - {' '.join(r['message'].split())[:240]}" if r["message"] else ""
        print(f"  {r['finished_at']:%Y-%m-%d %H:%M:%S} {r['status']:<7} {r['outcome']:<16} {r['unique_id']}{note}")
    print("requests (newest first):")
    for r in requests:
        note = f" - {r['message']}" if r["message"] else ""
        print(
            f"  {r['requested_at']:%Y-%m-%d %H:%M:%S} {r['status']:<16} {r['model_count']:>3} model(s) "
            f"{r['selector']}{note}"
        )
    return 0
