"""``airflow-leastaction``: the catalog's command line.

Each subcommand family lives in its own module with a ``register(subparsers)`` function. Whatever goes
wrong, a command prints one ``error: ...`` line on stderr (details, if any, indented below it) and exits
with its documented status, never with a traceback: 2 for a bad argument (checked while parsing, before
anything is read or written: :mod:`~airflow_leastaction.cli.arguments`), the error's own ``exit_status``
when it has one, otherwise 1 (the catalog cannot be reached, among others).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from collections.abc import Iterator

from sqlalchemy.exc import SQLAlchemyError

from airflow_leastaction.catalog.engine import is_outage, shown_url
from airflow_leastaction.cli.arguments import CONN_ID_LENGTH, Name, give_every_option_a_kind
from airflow_leastaction.exceptions import LeastActionError

log = logging.getLogger(__name__)

#: Subcommand modules, in the order ``--help`` lists them.
COMMAND_MODULES = ["db", "catalog", "queue", "dbt", "graph", "stale", "plan", "eta"]

#: Exit status when an error without an ``exit_status`` of its own escapes a command.
EXIT_ERROR = 1
#: Exit status of a bad argument (argparse's own usage errors exit 2 too).
EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one ``error:`` line pointing at the command's ``--help``."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="airflow-leastaction", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--conn-id",
        default=None,
        type=Name(CONN_ID_LENGTH),
        help="catalog connection id (default: [leastaction] catalog_conn_id)",
    )
    parser.set_defaults(uses_catalog=True)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"airflow_leastaction.cli.{name}").register(sub)
    give_every_option_a_kind(parser)
    return parser


class _Stderr:
    """``sys.stderr`` as it is when a line is written (a test may have replaced it since)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@contextlib.contextmanager
def _logs_to_stderr() -> Iterator[None]:
    """Airflow's log lines go to stderr while a command runs, so what it prints (JSON included) is all
    that reaches stdout; where Airflow's structured loggers write is restored when the command returns."""
    # Airflow sets its log handlers up on first import, on whatever stdout is then.
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        from airflow_leastaction.version_compat import structlog_logger_factory

        factory = structlog_logger_factory()
    finally:
        sys.stdout = stdout
    # Airflow's structured loggers that are not told where to write use the sys.stdout of the moment each
    # is made, later, during the command: a warning logged then (Airflow 3.1 warns that the catalog's
    # connection type has an underscore) would land among what the command prints.
    redirect = getattr(factory, "io", False) is None
    if redirect:
        factory.io = _Stderr()
    try:
        yield
    finally:
        if redirect:
            factory.io = None


def main(argv: list[str] | None = None) -> int:
    with _logs_to_stderr():
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2): argparse has printed what it had to say
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except LeastActionError as exc:
        return error(exc, getattr(exc, "exit_status", EXIT_ERROR))
    except Exception as exc:  # the catalog's driver, the file system, a bug: one line all the same
        log.debug("airflow-leastaction %s failed", args.command, exc_info=True)
        return error(_describe(exc, args), EXIT_ERROR)


def error(message: object, status: int) -> int:
    """Print ``message`` as one ``error:`` line (further lines of it indented below) and return ``status``."""
    first, *rest = str(message).strip().splitlines() or [""]
    print(f"error: {first}", *(f"  {line}" for line in rest), sep="\n", file=sys.stderr)
    return status


def _describe(exc: Exception, args) -> str:
    if not isinstance(exc, SQLAlchemyError):
        return f"{type(exc).__name__}: {exc}"
    # The driver's own words, without SQLAlchemy's statement and link lines.
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    where = _catalog_shown(args.conn_id)
    if is_outage(exc):
        return f"the catalog {where} cannot be reached: {reason}"
    return f"the catalog {where} refused the command: {reason}"


def _catalog_shown(conn_id: str | None) -> str:
    try:
        from airflow_leastaction.hooks.catalog import CatalogHook

        return shown_url(CatalogHook(conn_id).get_url())
    except Exception:  # it was resolved once already; say which connection at least
        return f"(connection {conn_id or 'default'})"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
