"""``airflow-leastaction graph DAG_ID``: check a DAG's run conditions and print it as waves.

Exit status: 0 when the graph is valid; otherwise the ``exit_status`` of the error class
(:class:`~airflow_leastaction.exceptions.RunConditionError` and its subclasses: 11 self-dependency,
12 unknown task, 13 cycle, 14 invalid count, 15 count without N, 16 unknown type, 17 inactive upstream),
3 when no DAG has that id, 1 for any other import error.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from airflow_leastaction.cli.arguments import File, Name
from airflow_leastaction.exceptions import LeastActionError

#: The longest Airflow DAG id (Airflow's ``ID_LEN``).
DAG_ID_LENGTH = 250
EXIT_NO_SUCH_DAG = 3
EXIT_IMPORT_ERROR = 1


def register(sub) -> None:
    p = sub.add_parser("graph", help="check a DAG's run conditions and print its waves")
    p.add_argument("dag_id", type=Name(DAG_ID_LENGTH), help="the DAG to check")
    p.add_argument("--dag-file", default=None, type=File(), help="the DAG file (default: search the DAGs folder)")
    p.set_defaults(func=_graph, uses_catalog=False)


def _dags_folder() -> str:
    from airflow.configuration import conf

    return conf.get("core", "dags_folder")


def load_dag(dag_id: str, dag_file: str | None):
    """The DAG ``dag_id`` from ``dag_file`` or the DAGs folder. A file that fails to import is run again
    in this process so the error keeps its class (and exit status)."""
    from airflow_leastaction.version_compat import dag_bag_class

    bag = dag_bag_class()(dag_file or _dags_folder(), safe_mode=False)
    dag = bag.dags.get(dag_id)
    if dag is not None:
        return dag, None
    for path, error in sorted(bag.import_errors.items()):
        if dag_id in Path(path).read_text(errors="replace") or dag_file:
            runpy.run_path(path, run_name="__airflow_leastaction_graph__")  # raises the original error
            return None, f"{path}: {error}"
    return None, None


def _graph(args) -> int:
    from airflow_leastaction.run_conditions import dag_nodes
    from airflow_leastaction.run_conditions.waves import format_waves, validate, waves

    try:
        dag, import_error = load_dag(args.dag_id, args.dag_file)
    except LeastActionError:
        raise
    except Exception as exc:  # any other error while importing the DAG file
        print(f"error: cannot import the DAG file: {exc}", file=sys.stderr)
        return EXIT_IMPORT_ERROR
    if dag is None:
        if import_error:
            print(f"error: {import_error}", file=sys.stderr)
            return EXIT_IMPORT_ERROR
        print(f"error: no DAG {args.dag_id!r} in {args.dag_file or _dags_folder()}", file=sys.stderr)
        return EXIT_NO_SUCH_DAG
    nodes = dag_nodes(dag)
    validate(dag.dag_id, nodes)
    print(format_waves(dag.dag_id, nodes, waves(nodes)))
    return 0
