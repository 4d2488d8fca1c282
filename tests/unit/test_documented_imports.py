"""Every import the docs, the README and the example DAGs show works: one case per import.

Modules move inside the package; the paths people copy from the docs must not. A ``from x import (a, b)``
over several lines is one case, and so is each ``::: x.y`` the API reference renders.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "airflow_leastaction"
TEXTS = sorted([*ROOT.joinpath("docs").rglob("*.md"), ROOT / "README.md"])
EXAMPLES = sorted(ROOT.joinpath("dags_examples").rglob("*.py"))
FROM_IMPORT = re.compile(rf"^[ \t>]*from ({PACKAGE}[\w.]*) import (\([^)]*\)|[^\n]+)", re.MULTILINE)
IMPORT = re.compile(rf"^[ \t>]*import ({PACKAGE}[\w.]*)", re.MULTILINE)
REFERENCE = re.compile(rf"^:::\s*({PACKAGE}[\w.]*)", re.MULTILINE)


def _names(clause: str) -> tuple[str, ...]:
    clause = clause.split("#")[0] if "(" not in clause else re.sub(r"#[^\n]*", "", clause)
    return tuple(part.split(" as ")[0].strip() for part in clause.strip("() \n").split(",") if part.strip())


def documented_imports() -> list[tuple[str, str, tuple[str, ...]]]:
    """(where, module, names): names empty for ``import module`` and for a ``:::`` reference."""
    found = []
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        for pattern in (FROM_IMPORT, IMPORT, REFERENCE):
            for match in pattern.finditer(text):
                where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
                names = _names(match.group(2)) if pattern is FROM_IMPORT else ()
                found.append((where, match.group(1), names))
    for path in EXAMPLES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE) and not node.level:
                found.append((where, node.module, tuple(alias.name for alias in node.names)))
            elif isinstance(node, ast.Import):
                found += [(where, a.name, ()) for a in node.names if a.name.split(".")[0] == PACKAGE]
    return found


IMPORTS = documented_imports()


def _resolve(dotted: str):
    """A module, or an attribute of the longest module prefix of ``dotted``."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError as exc:
            if exc.name != ".".join(parts[:end]):
                raise
            continue
        for attr in parts[end:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_docs_show_imports():
    assert len({module for _, module, _ in IMPORTS}) > 10, IMPORTS


@pytest.mark.parametrize(
    ("where", "module", "names"), IMPORTS, ids=[f"{w} {m} {','.join(n)}".strip() for w, m, n in IMPORTS]
)
def test_a_documented_import_imports(where, module, names):
    if not names:
        assert _resolve(module) is not None, where
        return
    imported = importlib.import_module(module)
    for name in names:
        if not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")  # a submodule, as ``from package import module``
