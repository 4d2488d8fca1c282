"""The guides are executable: what a page tells a user to type is what the product accepts.

* ``docs/getting-started.md`` is followed literally: every ``bash`` block runs, in order, in one shell,
  in a fresh ``AIRFLOW_HOME`` and a copy of the virtualenv, from a copy of the checkout; the Python block
  with a file title is saved where the page says. The user must reach the state the page describes:
  the DAG run waits, the ``catalog report`` line releases it, it succeeds, and the catalog holds the one
  SATISFIED decision of the sensor, consumed by ``enrich``.
* Every ``airflow-leastaction`` command in the other guides parses with the command line's own parser
  and runs, in the page's order, in a fresh ``AIRFLOW_HOME``; every Python block of every guide
  compiles. A block that names nothing it does not define (a whole DAG file, a call with its imports) is
  executed, against a fresh catalog, with the files a ``--8<--`` line includes in its place; fragments
  that use the reader's own tasks (``publish``, ``PROJECT_DIR``) only compile, and so do the blocks in
  :data:`NEEDS_A_RUNNING_TASK`.
"""

from __future__ import annotations

import builtins
import os
import re
import shlex
import shutil
import subprocess
import symtable
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.helpers.airflow_minors import needs
from tests.helpers.paths import ROOT

DOCS = ROOT / "docs"
GUIDES = sorted(p for p in DOCS.glob("*.md"))
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(page: Path) -> list[tuple[str, str, str]]:
    """``(language, attributes, body)`` of every fenced block of a page, in order."""
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(page.read_text())]


def cli_commands(body: str) -> list[list[str]]:
    """The ``airflow-leastaction`` command lines of a shell block (continuations joined, comments and
    prompts dropped)."""
    joined = body.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = line.strip().removeprefix("$ ")
        if line.startswith("airflow-leastaction "):
            commands.append(shlex.split(line, comments=True)[1:])
    return commands


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: p.name)
def test_every_cli_example_of_a_guide_parses(page):
    from airflow_leastaction.cli import build_parser

    parser = build_parser()
    for lang, _, body in blocks(page):
        if lang not in ("bash", "console", "text"):
            continue
        for argv in cli_commands(body):
            if "--help" in argv or "[" in " ".join(argv):  # usage synopses and help requests
                continue
            parser.parse_args(argv)  # exits 2 (SystemExit) on an unknown command or option


def runnable_commands(page: Path) -> list[list[str]]:
    """The command lines of a page that run as written (usage synopses such as ``[--json]`` aside)."""
    return [
        argv
        for lang, _, body in blocks(page)
        if lang in ("bash", "console", "text")
        for argv in cli_commands(body)
        if "[" not in " ".join(argv)
    ]


#: Guides with command examples, each run in order in a fresh AIRFLOW_HOME (getting-started runs whole).
RUN_COMMANDS = [p for p in GUIDES if p.name != "getting-started.md" and runnable_commands(p)]


def test_the_guides_with_commands_to_run_are_found():
    assert {p.name for p in RUN_COMMANDS} >= {"catalog.md", "operations.md", "dbt-queue.md"}


@pytest.mark.parametrize("page", RUN_COMMANDS, ids=lambda p: p.name)
def test_every_cli_example_of_a_guide_runs_in_a_fresh_home(page, tmp_path):
    """Each command a guide shows runs, in the page's order, in a fresh ``AIRFLOW_HOME`` with the embedded
    catalog, and exits 0 without a traceback."""
    commands = runnable_commands(page)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LEASTACTION"))}
    env["AIRFLOW_HOME"] = str(tmp_path / "home")
    for argv in commands:
        done = subprocess.run(
            [sys.executable, "-m", "airflow_leastaction.cli", *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, (argv, done.stdout, done.stderr[-3000:])


@pytest.mark.parametrize("page", GUIDES, ids=lambda p: p.name)
def test_every_python_block_of_a_guide_compiles(page):
    for _, attrs, body in (b for b in blocks(page) if b[0] == "python"):
        compile(body, f"{page.name}:{attrs or 'python block'}", "exec")


SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)

#: Self-contained blocks that only work inside a running task, by page and a line of the block.
NEEDS_A_RUNNING_TASK = {
    ("run-conditions.md", "report_rows_written(0, inserted=120, updated=4, deleted=0)"),
}


def undefined_names(source: str) -> set[str]:
    """Names a block reads but neither defines nor gets from builtins: a fragment of the reader's code."""
    top = symtable.symtable(source, "block", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    read: set[str] = set()

    def walk(table) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and (table is top or sym.is_global()):
                read.add(sym.get_name())
        for child in table.get_children():
            walk(child)

    walk(top)
    return read - defined - set(dir(builtins)) - {"__file__", "__name__"}  # a module has both


def runnable_blocks() -> list[tuple[str, str, Path | None]]:
    """``(name, source, file)`` of every self-contained Python block of the guides, snippets expanded (a
    block that is one included file runs as that file)."""
    found = []
    for page in GUIDES:
        for index, (lang, attrs, body) in enumerate(blocks(page)):
            if lang != "python":
                continue
            included = SNIPPET.findall(body)
            source = SNIPPET.sub(lambda m: (ROOT / m.group(1)).read_text(), body)
            if undefined_names(source):
                continue
            if any(page.name == name and line in body for name, line in NEEDS_A_RUNNING_TASK):
                continue
            file = ROOT / included[0] if len(included) == 1 else None
            found.append((f"{page.name}#{index} {attrs}".strip(), source, file))
    return found


RUNNABLE = runnable_blocks()
SDK_IMPORT = re.compile(r"^from airflow\.sdk import ([\w, ]+)$", re.MULTILINE)


def on_this_airflow(name: str, source: str, file: Path | None):
    """The block as a test case, skipped where this Airflow's SDK lacks a name it imports (a later minor's)."""
    import airflow.sdk

    wanted = {n.strip() for names in SDK_IMPORT.findall(source) for n in names.split(",")}
    missing = sorted(n for n in wanted if not hasattr(airflow.sdk, n))
    marks = needs(not missing, f"{', '.join(missing)} (airflow.sdk of a later minor)") if missing else ()
    return pytest.param(name, source, file, id=name, marks=marks)


def test_the_blocks_that_run_include_a_dag_file_a_call_and_an_included_example():
    names = [name for name, _, _ in RUNNABLE]
    assert any(n.startswith("getting-started.md") and "orders_enriched.py" in n for n in names), names
    assert any(n.startswith("catalog.md") for n in names), names  # report_completion(...)
    assert any("dags_examples/" in n for n in names), names
    assert any("dags_examples/dbt_queue_worker.py" in n for n in names), names
    assert not any(n.startswith("run-conditions.md#0") for n in names)  # uses the reader's tasks
    # Each block listed as needing a running task still exists (or the list would hide nothing).
    for page, line in NEEDS_A_RUNNING_TASK:
        assert line in (DOCS / page).read_text(), (page, line)


@pytest.mark.parametrize("name,source,file", [on_this_airflow(*block) for block in RUNNABLE])
def test_a_self_contained_python_block_of_a_guide_runs(name, source, file, sqlite_url, use_catalog, tmp_path):
    use_catalog(sqlite_url)
    namespace = {"__name__": "guide_block", "__file__": str(file or tmp_path / "block.py")}
    exec(compile(source, name, "exec"), namespace)


def test_getting_started_blocks_are_the_ones_this_test_follows():
    langs = [lang for lang, _, _ in blocks(DOCS / "getting-started.md")]
    assert langs.count("bash") >= 3 and langs.count("python") == 1, langs


def _checkout_copy(dest: Path) -> Path:
    """The files a clone would have (tracked, and new files not ignored), without build leftovers."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    for name in files:
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _venv_copy(dest: Path) -> Path:
    """A copy of the running virtualenv (so the page's ``pip install`` cannot touch the suite's).

    Its scripts name the virtualenv's interpreter (on their ``#!`` line, or on the next one when pip wrote
    a ``/bin/sh`` launcher for a long path) by the path the virtualenv was made at, which is not
    ``sys.prefix`` when it is reached through a symbolic link: both spellings are rewritten, and a script
    still naming the suite's interpreter fails here, before ``pip`` could install into the suite's own
    virtualenv through it."""
    source = Path(sys.prefix)
    shutil.copytree(source, dest, symlinks=True)
    olds = {f"{prefix}/bin/python".encode() for prefix in (source, source.resolve())}
    new = f"{dest}/bin/python".encode()
    for script in (dest / "bin").iterdir():
        if script.is_file() and not script.is_symlink():
            data = script.read_bytes()
            if not data.startswith(b"#!"):
                continue
            head, sep, body = data.partition(b"\n")
            second, sep2, rest = body.partition(b"\n")
            for old in sorted(olds, key=len, reverse=True):
                head, second = head.replace(old, new), second.replace(old, new)
            assert not any(old in head + second for old in olds), f"{script.name} still runs {head!r}"
            script.write_bytes(head + sep + second + sep2 + rest)
    return dest


# What the page says the user sees after a block, checked before the next block runs (the shell waits
# here the way a person reads the output before typing the next command).
AFTER_BLOCK = {
    # The DAG run was started in the background: wait until its sensor has deferred on orders_raw.
    "airflow dags test orders_enriched": "until grep -q 'not admitted yet' orders_enriched.log; do "
    "kill -0 $! || { cat orders_enriched.log; exit 9; }; sleep 1; done",
}


def test_getting_started_followed_literally_releases_the_waiting_dag(tmp_path):
    page = blocks(DOCS / "getting-started.md")
    clone = _checkout_copy(tmp_path / "clone")
    venv = _venv_copy(tmp_path / "venv")
    home = tmp_path / "home"
    (home / "dags").mkdir(parents=True)
    for _, attrs, body in (b for b in page if b[0] == "python"):
        title = re.search(r'title="([^"]+)"', attrs)
        assert title, "the guide's DAG block names the file to save it as"
        (home / "dags" / title.group(1)).write_text(body)

    script = ["set -euo pipefail"]
    for lang, _, body in page:
        if lang != "bash":
            continue
        script.append(body)
        script.extend(check for start, check in AFTER_BLOCK.items() if start in body)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LEASTACTION", "PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PATH=f"{venv}/bin:{env['PATH']}",
        VIRTUAL_ENV=str(venv),
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
    )
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=clone, env=env, capture_output=True, text=True, timeout=900
    )
    log = (clone / "orders_enriched.log").read_text() if (clone / "orders_enriched.log").exists() else ""
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:] + log[-4000:]

    # The package the DAG ran with is the one the page installed, not the suite's editable checkout.
    installed = subprocess.run(
        [f"{venv}/bin/python", "-c", "import airflow_leastaction as p; print(p.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert installed.startswith(str(venv)), installed
    assert ("sales-platform/orders_raw slot 2026-11-02T00:00:00+00:00: published revision 1") in done.stdout
    # The sensor's log lines the page quotes are in the log as the page quotes them, whole.
    page = " ".join((DOCS / "getting-started.md").read_text().split())
    quoted = re.findall(r"`((?:not )?admitted(?: yet)?: [^`]+)`", page)
    assert len(quoted) == 2, quoted
    # A log line: time, [level], the message, [logger], loc=...
    messages = {" ".join(m.split()) for m in re.findall(r"\[\w+\s*\] (.*?) \[[\w.]+\] loc=", log)}
    for line in quoted:
        assert line in messages, (line, sorted(m for m in messages if "admitted" in m))
    assert '"prev_interval_start": "2026-11-02T00:00:00' in done.stdout

    # "The sensor recorded one SATISFIED gate decision, and enrich consumed it": read as the LeastAction
    # pages of the UI read them, from the catalog the page's commands created under AIRFLOW_HOME.
    from airflow_leastaction.www.queries import ConsumptionFilter, DecisionFilter
    from airflow_leastaction.www.reads import CatalogReads

    catalog = home / "leastaction" / "catalog.db"
    assert catalog.is_file()
    engine = sa.create_engine(f"sqlite:///{catalog}")
    try:
        reads = CatalogReads(engine)
        decisions = reads.decisions(DecisionFilter(dag_id="orders_enriched"), None, 100).rows
        consumed = reads.consumption(ConsumptionFilter(dag_id="orders_enriched"), None, 100).rows
    finally:
        engine.dispose()
    satisfied = [d for d in decisions if d["result"] == "SATISFIED"]
    assert [(d["task_id"], d["upstream_revision"]) for d in satisfied] == [("wait_for_orders_raw", 1)], decisions
    assert [(c["task_id"], c["decision_id"], c["upstream_revision"]) for c in consumed] == [
        ("enrich", satisfied[0]["id"], 1)
    ], consumed
