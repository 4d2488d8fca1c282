"""Bad input on the command line, generated: every command, every option it takes (read from the argparse
parser, so an option added later is covered without being listed here), bad values drawn from what the
command-line reference says each kind of option accepts.

Whatever the value, the command exits 1 or 2, prints exactly one ``error:`` line on stderr naming the
option at fault, never a traceback, and writes nothing: not the catalog (every table, both backends),
not the spool, not the dbt project.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import string
import zoneinfo
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_leastaction.catalog.engine import dispose_all, get_engine
from airflow_leastaction.catalog.metadata import metadata
from airflow_leastaction.cli import build_parser, main
from airflow_leastaction.cli.arguments import (
    MAX_COUNT,
    MAX_SECONDS,
    MAX_TEXT,
    Checked,
    Count,
    Directory,
    File,
    Identity,
    Instant,
    Name,
    Seconds,
    Text,
    commands,
    takes_a_value,
)

ROOT = Path(__file__).resolve().parents[3]
PARSER = build_parser()
TOP_LEVEL = [a for a in PARSER._actions if takes_a_value(a)]
LEAVES = [(path, parser) for path, parser in commands(PARSER) if parser.get_default("func") is not None]
UNREACHABLE = "postgresql+psycopg2://la:s3cret-Pa55@127.0.0.1:9/catalog"


def value_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if takes_a_value(a)]


CASES = [
    pytest.param(
        path, action, id=f"{' '.join(path)} {action.option_strings[0] if action.option_strings else action.dest}"
    )
    for path, parser in LEAVES
    for action in [*TOP_LEVEL, *value_options(parser)]
]


# -- the oracle: what the reference says each kind accepts ----------------------------------------------
def letters(min_size: int = 1, max_size: int = 20) -> st.SearchStrategy[str]:
    return st.text(string.ascii_letters, min_size=min_size, max_size=max_size)


def with_nul() -> st.SearchStrategy[str]:
    """Text no option takes: a NUL character, or bytes that are not UTF-8 (Python passes them on from argv
    as lone surrogates)."""
    return st.builds(
        lambda a, c, b: f"{a}{c}{b}", letters(0, 5), st.sampled_from(["\x00", "\udcff", "\ud800"]), letters(0, 5)
    )


def bad_values(action: argparse.Action, workdir: Path) -> st.SearchStrategy[str]:
    kind = action.type
    if action.choices is not None:
        return letters().filter(lambda v: v not in action.choices)
    if isinstance(kind, Name):  # 1 to the column's length characters (0 allowed for account and partition)
        too_long = st.integers(kind.limit + 1, kind.limit + 300).map(lambda n: "n" * n)
        blank = st.sampled_from(["", " ", "\t"])
        return st.one_of(too_long, with_nul(), *([] if kind.empty else [blank]))
    if isinstance(kind, Count):  # a whole number from its minimum to 2**63 - 1
        return st.one_of(
            st.integers(max_value=kind.minimum - 1).map(str),
            st.integers(min_value=MAX_COUNT + 1).map(str),
            st.floats(allow_nan=False).map(lambda f: f"{f}x"),
            letters(),
        )
    if isinstance(kind, Seconds):  # more than 0, at most 30 days
        return st.one_of(
            st.floats(max_value=0).map(repr),
            st.floats(min_value=MAX_SECONDS, exclude_min=True).map(repr),
            st.sampled_from(["nan", "inf", "-inf", "soon"]),
        )
    if isinstance(kind, Instant):  # an ISO-8601 time with an offset
        naive = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)).map(
            dt.datetime.isoformat
        )
        return st.one_of(naive, letters())
    if isinstance(kind, Identity):  # project/name (then @account, [partition]), each within its column
        too_long = st.integers(251, 550).map(lambda n: f"p/{'n' * n}")
        unwritten = st.one_of(letters(), letters().map(lambda v: f"/{v}"), letters().map(lambda v: f"{v}/"))
        return st.one_of(unwritten, too_long, with_nul())
    if isinstance(kind, Checked):  # a cron, a time zone, a date: never a word of letters alone
        zones = zoneinfo.available_timezones() | {"utc", "UTC"}
        return st.one_of(letters().filter(lambda v: v not in zones), with_nul())
    if isinstance(kind, Directory):  # an existing directory (holding the file it names)
        return st.one_of(letters().map(lambda v: str(workdir / "missing" / v)), st.just(str(workdir / "a-file")))
    if isinstance(kind, File):
        return st.one_of(letters().map(lambda v: str(workdir / "missing" / v)), st.just(str(workdir)))
    if isinstance(kind, Text):  # at most 65,536 characters; some must not be blank
        too_long = st.just("t" * (MAX_TEXT + 1))
        return st.one_of(too_long, with_nul(), *([st.sampled_from(["", "  "])] if kind.nonempty else []))
    pytest.fail(
        f"option {action.option_strings or action.dest} takes a kind of value the reference does not name: {kind!r}"
    )


def valid_value(action: argparse.Action, workdir: Path) -> str:
    """A value every command accepts for an option it requires."""
    kind = action.type
    if isinstance(kind, Instant):
        return "2026-11-28T00:00:00+00:00"
    if isinstance(kind, Checked):
        return "2026-01-01"  # db prune --before: a past date
    if isinstance(kind, Directory):
        return str(workdir / "project")
    if isinstance(kind, File):
        return str(workdir / "dag.py")
    if isinstance(kind, Count):
        return str(max(kind.minimum, 1))
    if isinstance(kind, Identity):
        return "shop/orders_raw"
    return "orders_raw"


def argv_with(path: tuple[str, ...], action: argparse.Action, value: str, workdir: Path) -> list[str]:
    """The command ``path`` with valid required arguments and ``value`` for ``action``."""
    parser = dict(LEAVES)[path]
    options, positionals = [], {}
    for other in value_options(parser):
        if not other.option_strings:
            positionals[other.dest] = valid_value(other, workdir)
        elif other.required:
            options.append(f"{other.option_strings[0]}={valid_value(other, workdir)}")
    top = []
    if not action.option_strings:
        positionals[action.dest] = value
    elif action in TOP_LEVEL:
        top = [f"{action.option_strings[0]}={value}"]
    else:
        options = [o for o in options if not o.startswith(f"{action.option_strings[0]}=")]
        options.append(f"{action.option_strings[0]}={value}")
    return [*top, *path, *options, *(["--", *positionals.values()] if positionals else [])]


def valid_argv(path: tuple[str, ...], workdir: Path) -> list[str]:
    """The command ``path`` with a valid value for everything it requires (and defaults for the rest)."""
    conn_id = next(a for a in TOP_LEVEL if a.dest == "conn_id")
    return argv_with(path, conn_id, "leastaction_catalog_default", workdir)


def catalog_rows(url: str) -> dict[str, list]:
    engine = get_engine(url)
    with engine.connect() as conn:
        return {t.name: sorted(map(repr, conn.execute(sa.select(t)).all())) for t in metadata.sorted_tables}


def files_under(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_catalog(request, tmp_path_factory):
    """One migrated catalog per backend for the whole module: nothing here may write to it."""
    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path_factory.mktemp('catalog')}/catalog.db", dispose_all
    else:
        url, drop = request.getfixturevalue("new_pg_database")()
    get_engine(url, migrate=True)
    yield url
    drop()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    project = tmp_path / "project"
    shutil.copytree(ROOT / "dags_examples" / "dbt_project", project, ignore=shutil.ignore_patterns("target", "logs"))
    (tmp_path / "a-file").write_text("")
    (tmp_path / "dag.py").write_text("")
    monkeypatch.setenv("AIRFLOW__LEASTACTION__SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(("path", "action"), CASES)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_bad_value_is_one_error_line_naming_the_option_and_nothing_is_written(
    path, action, data, shared_catalog, use_catalog, workdir, capsys
):
    use_catalog(shared_catalog)
    value = data.draw(bad_values(action, workdir), label="value")
    before = catalog_rows(shared_catalog), files_under(workdir)
    capsys.readouterr()
    status = main(argv_with(path, action, value, workdir))
    err = capsys.readouterr().err
    [line] = error_lines(err)
    assert status in (1, 2), err
    named = action.option_strings or [action.dest, action.metavar]
    assert any(n and n in line for n in named), line
    assert (catalog_rows(shared_catalog), files_under(workdir)) == before


@pytest.mark.parametrize("path", [pytest.param(path, id=" ".join(path)) for path, _ in LEAVES])
def test_the_valid_command_lines_these_tests_start_from_parse(path, tmp_path):
    workdir = tmp_path
    shutil.copytree(ROOT / "dags_examples" / "dbt_project", workdir / "project")
    (workdir / "dag.py").write_text("")
    args = PARSER.parse_args(valid_argv(path, workdir))
    assert args.func is dict(LEAVES)[path].get_default("func")


def test_every_option_says_what_it_is_for():
    missing = [
        f"{' '.join(path)} {a.option_strings or a.dest}"
        for path, parser in commands(PARSER)
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction) and not a.help
    ]
    assert missing == []


# A command that does not read the catalog says so (``uses_catalog=False``); the others inherit True.
CATALOG_COMMANDS = [
    pytest.param(path, id=" ".join(path)) for path, parser in LEAVES if parser.get_default("uses_catalog") is not False
]


@pytest.mark.postgres
@pytest.mark.parametrize("path", CATALOG_COMMANDS)
def test_an_unreachable_catalog_is_one_error_line_without_its_password(path, workdir, use_catalog, capsys):
    use_catalog(UNREACHABLE)
    argv = valid_argv(path, workdir)
    before = files_under(workdir)
    capsys.readouterr()
    status = main(argv)
    err = capsys.readouterr().err
    [line] = error_lines(err)
    assert status == 1, err
    assert "cannot be reached" in line and "127.0.0.1:9" in line
    assert "s3cret" not in err
    assert files_under(workdir) == before
    dispose_all()


class TestDrain:
    def test_a_heartbeat_not_shorter_than_the_grace_period_is_refused(
        self, shared_catalog, use_catalog, workdir, capsys
    ):
        use_catalog(shared_catalog)
        project = str(workdir / "project")
        assert main(["queue", "drain", f"--project-dir={project}", "--grace=5"]) == 2
        [line] = error_lines(capsys.readouterr().err)
        assert "--heartbeat" in line and "--grace" in line


class TestEnqueue:
    def test_an_empty_selector_is_an_error_on_stderr(self, shared_catalog, use_catalog, workdir, capsys):
        use_catalog(shared_catalog)
        assert main(["queue", "enqueue", f"--project-dir={workdir / 'project'}", "--", " "]) == 2
        out = capsys.readouterr()
        assert out.out == ""
        [line] = error_lines(out.err)
        assert "selector" in line


def test_the_help_of_every_command_exits_0_without_error(capsys):
    for path, _ in commands(PARSER):
        assert main([*path, "--help"]) == 0
        out = capsys.readouterr()
        assert out.out.startswith("usage:") and out.err == ""
