"""``airflow-leastaction dbt check``: can the dbt queue know every source's state? A CI check against drift.

Each source of the project's manifest is mapped to the catalog task that loads it (``meta: {leastaction:
{task: ..., project: ...}}``, or ``--source-task``); a source without one is known only through dbt source
freshness, where configured. The check lists every source and how it is known, and fails (exit 3) when a
source has neither, or names a catalog task the catalog does not hold.
"""

from __future__ import annotations

import json

from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.cli.queue import project_args, source_task_arg, source_task_option
from airflow_leastaction.dbt.manifest import ProjectGraph
from airflow_leastaction.dbt.runner import DbtRunner
from airflow_leastaction.exceptions import DbtCheckError
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.refs import deployment_project


def register(sub) -> None:
    dbt = sub.add_parser("dbt", help="the dbt project the queue builds").add_subparsers(
        dest="dbt_command", required=True
    )
    check = dbt.add_parser(
        "check", help="fail when a source maps to no catalog task (or to one the catalog does not hold)"
    )
    project_args(check)
    source_task_arg(check, "as the drain is given it; wins over the source's meta")
    check.add_argument("--json", action="store_true", help="print the sources as JSON")
    check.set_defaults(func=_check)


def _check(args) -> int:
    # The catalog is checked before dbt is asked anything: an unreachable catalog fails the command first.
    store = catalog_store(args.conn_id, reachable=True)
    runner = DbtRunner(args.project_dir, profiles_dir=args.profiles_dir, target=args.target)
    with runner.session() as session:
        graph = ProjectGraph(session.manifest(), runner.project_vars())
    overrides = dict(source_task_option(text) for text in args.source_task)
    found = [_judge(graph, store, source, overrides) for source in graph.all_sources]
    if args.json:
        print(json.dumps(found, indent=2))
    else:
        for f in found:
            print(f"{'ok' if f['ok'] else 'FAIL':<4} {f['source']}: {f['how']}")
    unmapped = [f["source"] for f in found if not f["ok"] and f["task"] is None]
    missing = [f["source"] for f in found if not f["ok"] and f["task"] is not None]
    if unmapped or missing:
        parts = [f"unmapped: {', '.join(unmapped)}"] if unmapped else []
        parts += [f"mapped to tasks not in the catalog: {', '.join(missing)}"] if missing else []
        raise DbtCheckError(
            f"{len(unmapped) + len(missing)} source(s) the dbt queue cannot follow; " + "; ".join(parts)
        )
    return 0


def _judge(graph: ProjectGraph, store: CatalogStore, source: str, overrides) -> dict:
    name = graph.source_name(source)
    mapping = graph.source_mapping(source, overrides, deployment_project())
    if mapping.task is None:
        ok = mapping.freshness
        how = "known through dbt source freshness" if ok else "no catalog mapping (and no dbt freshness configured)"
        return {"source": name, "ok": ok, "task": None, "how": how}
    present = store.get_task(mapping.task) is not None
    how = f"catalog task {mapping.task} ({mapping.origin})" + ("" if present else ", which is not in the catalog")
    return {"source": name, "ok": present, "task": str(mapping.task), "how": how}
