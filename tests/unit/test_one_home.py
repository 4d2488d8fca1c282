"""Each rule is written once: the tell-tale forms of a rule's copies are found nowhere but in its home.

The package is read from disk as source (string constants and comparisons, docstrings and comments left
out), so a copy written later fails here, naming the module and line, before it can drift from the home.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(importlib.util.find_spec("airflow_leastaction").origin).parent


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _modules() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(ROOT)): ast.parse(p.read_text(encoding="utf-8"))
        for p in sorted(ROOT.rglob("*.py"))
        if "migrations" not in p.parts
    }


MODULES = _modules()


def _strings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def _compared(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    yield node.lineno, side.value


def _code(tree: ast.Module) -> Iterator[tuple[int, str]]:
    yield from enumerate(ast.unparse(tree).splitlines(), 1)


def _event_statuses(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """What each ``{"status": ...}`` an event is built from says, unless it is a TriggerStatus (or the
    ``status`` a function was handed, which its callers give as one)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                written = ast.unparse(value)
                if not (isinstance(key, ast.Constant) and key.value == "status"):
                    continue
                if "TriggerStatus" not in written and written not in ("status", "status.value"):
                    yield node.lineno, written


#: What the provider reaches below Airflow's public interfaces: the task runner's supervisor channel and its
#: class, its task instance class, the serialization encoders, structlog's logger factory, the private
#: attributes the provider sets or calls on Airflow's objects.
AIRFLOW_INTERNALS = (
    r"airflow\.sdk\.execution_time|airflow\.serialization|SUPERVISOR_COMMS|InProcessSupervisorComms|"
    r"ExecutionAPISecretsBackend|RuntimeTaskInstance|\blogger_factory\b|structlog\.get_config|"
    r"_pre_execute_hook|_set_connection_class|_process_connection_result_conn|_latest_by_version_select"
)

#: rule -> (its home, what to read of each module, the tell-tale of a copy).
RULES: dict[str, tuple[set[str], Callable, Callable[[str], bool]]] = {
    "the gate-id rule": ({"run_conditions/model.py"}, _strings, lambda s: s.endswith("__gate")),
    "the task: dependency key": ({"run_conditions/model.py"}, _strings, lambda s: s.startswith("task:")),
    "ISO Z parsing": ({"instants.py"}, _code, lambda s: bool(re.search(r"replace\(['\"]Z['\"]", s))),
    "the gate mode": ({"gating/admission.py", "__init__.py"}, _strings, lambda s: s in {"enforce", "warn", "off"}),
    "the trigger statuses": (set(), _event_statuses, lambda s: True),
    "the batch statuses": ({"dbt/schema.py"}, _strings, lambda s: s == "abandoned"),
    "the run-outcome task id": ({"run_conditions/run_outcome.py"}, _strings, lambda s: s == "leastaction_run_outcome"),
    "on_late_arrival rerun": ({"gating/fallback.py"}, _compared, lambda s: s == "rerun"),
    "building the catalog's engine or store": (
        {"hooks/catalog.py"},
        _code,
        lambda s: bool(
            re.search(r"(?<![.\w])(?:get_engine|resolve_url)\(|\b(?:CatalogStore|QueueStore)\((?:conn_id=|\))", s)
        ),
    ),
    "Airflow's internals": (
        {"version_compat.py"},
        _code,
        lambda s: bool(re.search(AIRFLOW_INTERNALS, s)),
    ),
    "Airflow's private attributes read by the seam": (
        {"airflow_seam/schedule.py", "airflow_seam/deadline_alerts.py"},
        _code,
        lambda s: bool(re.search(r"getattr\((?!self\b)[^,]+, ['\"]_[a-z]", s)),
    ),
    "a task's timezone": (
        {"airflow_seam/schedule.py"},
        _code,
        lambda s: "def _timezone" in s or bool(re.search(r"has_dag\(\) else ['\"]UTC", s)),
    ),
    "the attempt filter": (
        {"catalog/audit_statements.py"},
        _code,
        lambda s: bool(re.search(r"\.attempt == \w+\.attempt\b", s)),
    ),
}

#: Where a copy of a rule could be written, when not anywhere in the package (other statuses are the queue's).
SCOPE = {"the trigger statuses": ("triggers/", "sensors/", "operators/")}

#: Modules that use a rule's words for something else: the deadline warning's own "warn" state, the UI's
#: tone of each word it shows.
#: The stores' own machinery, below the hook: the engine cache, the stores' documented ``conn_id=`` argument
#: and ``prune_catalog`` (a function a maintenance task calls) resolve a connection themselves.
ELSEWHERE = {
    # The attribute the provider keeps on a task of its own (a run's deadline watch), not Airflow's.
    "Airflow's private attributes read by the seam": {"airflow_seam/deadline_runs.py"},
    "the gate mode": {"gating/deadline_warning.py", "www/present.py"},
    "building the catalog's engine or store": {
        "catalog/engine.py",
        "catalog/store.py",
        "catalog/retention.py",
        "dbt/queue_store.py",
    },
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_a_rule_is_written_only_in_its_home(rule):
    home, read, copied = RULES[rule]
    allowed = home | ELSEWHERE.get(rule, set())
    copies = [
        f"{module}:{line}: {text}"
        for module, tree in MODULES.items()
        if module not in allowed and module.startswith(SCOPE.get(rule, ""))
        for line, text in read(tree)
        if copied(text)
    ]
    assert copies == [], f"{rule} is written again outside {sorted(home) or 'triggers/wire.py'}: call its home"


#: The rules whose home holds the tell-tale form itself (the others hold a function that is called).
WRITTEN_IN_HOME = [
    "Airflow's internals",
    "Airflow's private attributes read by the seam",
    "the batch statuses",
    "building the catalog's engine or store",
    "the gate mode",
    "the gate-id rule",
    "the run-outcome task id",
    "the task: dependency key",
]


@pytest.mark.parametrize("rule", WRITTEN_IN_HOME)
def test_the_search_finds_the_rule_in_its_home(rule):
    home, read, copied = RULES[rule]
    assert any(copied(text) for module in home - {"__init__.py"} for _, text in read(MODULES[module]))
