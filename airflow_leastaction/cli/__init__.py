"""``airflow-leastaction``: the catalog's command line.

Each subcommand family lives in its own module with a ``register(subparsers)`` function.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from airflow_leastaction.exceptions import LeastActionError

#: Subcommand modules, in the order ``--help`` lists them.
COMMAND_MODULES = ["db", "catalog", "queue", "graph", "stale"]

#: Exit status when a LeastActionError escapes a command (usage errors exit 2, as argparse does).
EXIT_ERROR = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="airflow-leastaction", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--conn-id", default=None, help="catalog connection id (default: [leastaction] catalog_conn_id)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"airflow_leastaction.cli.{name}").register(sub)
    return parser


def _logs_to_stderr() -> None:
    # Airflow sets its log handlers up on first import, on whatever stdout is then; point them at stderr
    # so what a command prints (JSON included) is all that reaches stdout.
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        import airflow.configuration
        import airflow.settings  # noqa: F401
    except ImportError:  # pragma: no cover - Airflow is a hard dependency
        pass
    finally:
        sys.stdout = stdout


def main(argv: list[str] | None = None) -> int:
    _logs_to_stderr()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LeastActionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_status", EXIT_ERROR)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
