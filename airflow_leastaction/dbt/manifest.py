"""What the queue reads from a dbt project's manifest: each node's inputs, its code identity, and the catalog
task that loads each source. Pure logic: no Airflow, no database, no dbt import (the manifest is a dict).

**Inputs.** A node's inputs are its parents in the manifest, seen through the nodes that hold no data of
their own: a view or an ephemeral model passes on its own parents (and its code joins the reader's code
identity), and a seed is its file (its checksum joins the code identity). What remains are sources and
nodes that hold data (tables, incremental models, snapshots).

**Code identity.** A hash of everything besides the inputs' data that decides what a build writes: the
node's checksum and config; the same of the views, ephemeral models and seeds it reads through; the
project's ``on-run-start``/``on-run-end`` hooks; the definition of each source it reads; the SQL of every
macro any of them calls; and the value of each ``var()`` and ``env_var()`` they name, in their SQL, their
pre- and post-hooks, the config ``dbt_project.yml`` gives them (as written, before dbt renders it) and the
project hooks. A ``var()`` whose name is not a literal makes every var count; an ``env_var()`` whose name
is not a literal leaves the code identity unknown (the node is always built).

A checksum that is not a hash of the file's content (dbt records a seed above 1 MiB by its path) stands
for the file only through :func:`file_checksums`, which hashes the file's bytes; a file that cannot be
read leaves the code identity unknown.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from airflow_leastaction.identity import TaskIdentity

#: Materializations that hold no data: a node reading one reads its parents.
PASS_THROUGH = frozenset({"view", "ephemeral"})
#: Where a source names the catalog task that loads it: ``meta: {leastaction: {task: ..., project: ...}}``.
META_KEY = "leastaction"
_VAR = re.compile(r"\bvar\s*\(\s*(['\"])([^'\"]+)\1")
_ANY_VAR = re.compile(r"\bvar\s*\(")
_ENV_VAR = re.compile(r"\benv_var\s*\(\s*(['\"])([^'\"]+)\1")
_ANY_ENV_VAR = re.compile(r"\benv_var\s*\(")
#: Jinja expressions and statements: only there is ``var(...)`` a call (elsewhere it is SQL or a comment).
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
#: Marks a code identity that reads a var whose name is computed: all vars count.
ALL = "*"
#: dbt's checksums that are not a hash of the file's content: a seed above 1 MiB is recorded by its path.
NOT_CONTENT = frozenset({"path", "none"})
#: Config keys whose text dbt renders only when it runs the node: a var there is read at build time.
HOOK_KEYS = ("pre-hook", "post-hook", "pre_hook", "post_hook")


@dataclass(frozen=True)
class SourceMapping:
    """How a source's state is known: the catalog task that loads it, or dbt source freshness, or neither."""

    source: str  # unique id
    task: TaskIdentity | None = None
    freshness: bool = False
    #: Where the mapping came from ("meta", "argument") or why there is none.
    origin: str = ""


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _meta(node: Mapping) -> dict:
    config = node.get("config") or {}
    return {**(node.get("meta") or {}), **(config.get("meta") or {})}


class ProjectGraph:
    """A parsed manifest, as the reuse rule and the catalog need it.

    :param manifest: the ``manifest.json`` document.
    :param project_vars: ``vars`` of ``dbt_project.yml`` (global names, and per-package mappings).
    :param file_checksums: node -> a hash of its file's bytes (:func:`file_checksums`), for the nodes whose
        manifest checksum is not a content hash; without one such a node's code is unknown.
    """

    def __init__(
        self,
        manifest: Mapping,
        project_vars: Mapping | None = None,
        file_checksums: Mapping[str, str | None] | None = None,
    ):
        self.nodes: Mapping[str, Mapping] = manifest.get("nodes") or {}
        self.sources: Mapping[str, Mapping] = manifest.get("sources") or {}
        self.macros: Mapping[str, Mapping] = manifest.get("macros") or {}
        self.project_name: str = (manifest.get("metadata") or {}).get("project_name") or ""
        self.project_vars = dict(project_vars or {})
        self.file_checksums = dict(file_checksums or {})
        #: on-run-start and on-run-end hooks: they run around every build, so they count for every node.
        self.project_hooks = sorted(u for u, n in self.nodes.items() if n.get("resource_type") == "operation")

    def __contains__(self, unique_id: str) -> bool:
        return unique_id in self.nodes or unique_id in self.sources

    # -- inputs -------------------------------------------------------------------------------------
    def passes_through(self, unique_id: str) -> bool:
        node = self.nodes.get(unique_id)
        if node is None:
            return False
        if node.get("resource_type") == "seed":
            return True
        return str((node.get("config") or {}).get("materialized") or "").lower() in PASS_THROUGH

    def _parents(self, unique_id: str) -> list[str]:
        node = self.nodes.get(unique_id) or {}
        return [p for p in (node.get("depends_on") or {}).get("nodes") or [] if p in self]

    def _closure(self, unique_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(inputs, pass-through nodes read on the way), each sorted."""
        inputs, through, stack, seen = set(), set(), list(self._parents(unique_id)), set()
        while stack:
            parent = stack.pop()
            if parent in seen:
                continue
            seen.add(parent)
            if self.passes_through(parent):
                through.add(parent)
                stack.extend(self._parents(parent))
            else:
                inputs.add(parent)
        return tuple(sorted(inputs)), tuple(sorted(through))

    def inputs(self, unique_id: str) -> tuple[str, ...]:
        """Sources and data-holding nodes the node reads, directly or through views, ephemerals and seeds."""
        return self._closure(unique_id)[0]

    # -- code identity ------------------------------------------------------------------------------
    def code_identity(self, unique_id: str, variables: Mapping | None = None, env: Mapping | None = None) -> str | None:
        """The node's code identity (see the module docstring) under ``variables`` (``--vars`` of the request,
        over the project's vars) and ``env`` (the environment dbt runs with); None when it cannot be known."""
        inputs, through = self._closure(unique_id)
        own = [unique_id, *through, *self.project_hooks]
        definitions = {u: self._definition(u) for u in own}
        if any(d["checksum"] is None for d in definitions.values()):
            return None  # a file that dbt did not hash and that could not be hashed here
        texts = [t for u in own for t in self._code_texts(u)]
        macros = self._macro_closure(own)
        texts += [str(self.macros[m].get("macro_sql") or "") for m in macros]
        package = (self.nodes.get(unique_id) or {}).get("package_name") or self.project_name
        values = {**self.package_vars(package), **dict(variables or {})}
        env_values = _named(texts, _ENV_VAR, _ANY_ENV_VAR, dict(env or {}))
        if ALL in env_values:  # the environment is too wide to hash, and changes from run to run
            return None
        return _digest(
            {
                "nodes": definitions,
                "sources": {s: self._source_definition(s) for s in inputs if s in self.sources},
                "macros": {m: _digest(self.macros[m].get("macro_sql") or "") for m in macros},
                "vars": _named(texts, _VAR, _ANY_VAR, values),
                "env_vars": env_values,
            }
        )

    def package_vars(self, package: str) -> dict:
        """The project's vars as a node of ``package`` sees them: global ones, then the package's own."""
        scoped = self.project_vars.get(package)
        globals_ = {k: v for k, v in self.project_vars.items() if not isinstance(v, Mapping)}
        return {**globals_, **(dict(scoped) if isinstance(scoped, Mapping) else {})}

    def _definition(self, unique_id: str) -> dict:
        node = self.nodes.get(unique_id) or {}
        checksum = node.get("checksum") or {}
        content = checksum.get("checksum") if checksum.get("name") not in NOT_CONTENT else None
        if node.get("resource_type") == "operation":  # dbt's checksum is of all of dbt_project.yml
            content = _digest(node.get("raw_code") or "")
        return {"checksum": content or self.file_checksums.get(unique_id), "config": node.get("config")}

    def _code_texts(self, unique_id: str) -> list[str]:
        """The texts of a node where a ``var()`` or ``env_var()`` decides its build: its SQL, its hooks, and
        the config as written (``dbt_project.yml`` config is stored rendered, with the vars of the parse)."""
        node = self.nodes.get(unique_id) or {}
        config = node.get("config") or {}
        hooks = [config.get(k) for k in HOOK_KEYS]
        return [str(node.get("raw_code") or ""), *_strings([hooks, node.get("unrendered_config") or {}])]

    def _source_definition(self, unique_id: str) -> dict:
        source = self.sources[unique_id]
        meta = {k: v for k, v in _meta(source).items() if k != META_KEY}
        keys = ("database", "schema", "identifier", "relation_name", "external")
        return {**{k: source.get(k) for k in keys}, "meta": meta}

    def _macro_closure(self, unique_ids: Iterable[str]) -> list[str]:
        stack = [m for u in unique_ids for m in ((self.nodes.get(u) or {}).get("depends_on") or {}).get("macros", [])]
        seen: set[str] = set()
        while stack:
            macro = stack.pop()
            if macro in seen or macro not in self.macros:
                continue
            seen.add(macro)
            stack.extend((self.macros[macro].get("depends_on") or {}).get("macros") or [])
        return sorted(seen)

    # -- sources and catalog names ------------------------------------------------------------------
    def source_mapping(
        self, unique_id: str, overrides: Mapping[str, TaskIdentity] | None = None, default_project: str = ""
    ) -> SourceMapping:
        """The catalog task loading source ``unique_id``: ``overrides`` (by unique id or ``source.table``),
        then the table's ``meta.leastaction``, then its source's; else dbt freshness where configured."""
        source = self.sources[unique_id]
        name = f"{source.get('source_name')}.{source.get('name')}"
        for key in (unique_id, name):
            if overrides and key in overrides:
                return SourceMapping(unique_id, overrides[key], origin="argument")
        for where, meta in (("meta", _meta(source)), ("source meta", source.get("source_meta") or {})):
            wanted = meta.get(META_KEY)
            if isinstance(wanted, Mapping) and wanted.get("task"):
                project = str(wanted.get("project") or default_project)
                task = TaskIdentity(
                    str(wanted["task"]), project, str(wanted.get("account") or ""), str(wanted.get("partition") or "")
                )
                return SourceMapping(unique_id, task, origin=where)
        if _has_freshness(source):
            return SourceMapping(unique_id, freshness=True, origin="dbt source freshness")
        return SourceMapping(unique_id, origin="no catalog mapping and no dbt freshness configured")

    def source_name(self, unique_id: str) -> str:
        source = self.sources[unique_id]
        return f"{source.get('source_name')}.{source.get('name')}"

    def catalog_name(self, unique_id: str) -> str:
        """The catalog name of a node: its name in the root project, ``<package>.<name>`` in another
        (a versioned model keeps its version: ``orders.v2``)."""
        node = self.nodes.get(unique_id) or {}
        package = node.get("package_name") or unique_id.split(".")[1]
        rest = unique_id.split(".", 2)[2] if unique_id.count(".") >= 2 else unique_id
        return rest if package == self.project_name else f"{package}.{rest}"

    @cached_property
    def all_sources(self) -> list[str]:
        return sorted(self.sources)


def _has_freshness(source: Mapping) -> bool:
    config = source.get("config") or {}
    loaded = source.get("loaded_at_field") or source.get("loaded_at_query") or config.get("loaded_at_field")
    freshness = source.get("freshness") or config.get("freshness") or {}
    counted = any((freshness.get(k) or {}).get("count") for k in ("warn_after", "error_after"))
    return bool(loaded) and counted


def file_checksums(manifest: Mapping) -> dict[str, str | None]:
    """A hash of the file's bytes for each node whose manifest checksum is not one (None: unreadable).
    The one function here that reads files: dbt gives the file as ``root_path`` / ``original_file_path``."""
    out: dict[str, str | None] = {}
    for unique_id, node in (manifest.get("nodes") or {}).items():
        if (node.get("checksum") or {}).get("name") not in NOT_CONTENT:
            continue
        root, relative = node.get("root_path"), node.get("original_file_path")
        out[unique_id] = _file_sha256(Path(root) / relative) if root and relative else None
    return out


def _file_sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return f"file-sha256:{digest.hexdigest()}"


def _strings(value) -> list[str]:
    """Every text inside a config value (strings, and those in lists and mappings)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _named(texts: list[str], literal: re.Pattern, any_use: re.Pattern, values: Mapping) -> dict:
    """The values of the names ``texts`` use (every value when one use is not a literal name)."""
    names: set[str] = set()
    for text in texts:
        jinja = " ".join(_JINJA.findall(text))
        found = [m.group(2) for m in literal.finditer(jinja)]
        if len(found) < len(any_use.findall(jinja)):
            return {ALL: {k: values[k] for k in sorted(values)}}  # every name counts
        names.update(found)
    return {n: values.get(n) for n in sorted(names)}
