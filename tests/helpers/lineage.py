"""Running Airflow with the OpenLineage provider writing events to a file, and checking the facets against
the schema the package ships."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from airflow_leastaction.lineage import schema_text

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads(schema_text())


def validate(facet: dict, definition: str) -> None:
    """``facet`` is valid against the shipped schema's ``definition``, and names that definition."""
    registry = Registry().with_resource(SCHEMA["$id"], Resource.from_contents(SCHEMA))
    Draft202012Validator({"$ref": f"{SCHEMA['$id']}#/$defs/{definition}"}, registry=registry).validate(facet)
    assert facet["_schemaURL"] == f"{SCHEMA['$id']}#/$defs/{definition}"


def run_python(
    script: str, env: dict, timeout: float = 600, site_packages: Path | None = None
) -> subprocess.CompletedProcess:
    """``script`` in a Python process of its own (the provider reads its configuration once per process);
    with ``site_packages``, that directory instead of the virtualenv's (:func:`without_openlineage`)."""
    argv = [sys.executable, "-c", textwrap.dedent(script)]
    path = str(ROOT)
    if site_packages is not None:
        argv.insert(1, "-S")  # no site: the virtualenv's packages are not on the path, only the overlay
        path += os.pathsep + str(site_packages)
    done = subprocess.run(
        argv,
        env={**os.environ, "PYTHONPATH": path, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done


def catalog_env(catalog_url: str) -> dict:
    return {
        "AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT": json.dumps(
            {"conn_type": "leastaction_catalog", "extra": {"url": catalog_url}}
        )
    }


def lineage_env(events: Path, catalog_url: str) -> dict:
    """The provider writing every event to ``events`` (the OpenLineage client's file transport), with the
    consumption facet as a custom run facet."""
    return {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(events), "append": True}),
        "AIRFLOW__OPENLINEAGE__CUSTOM_RUN_FACETS": "airflow_leastaction.lineage.facets.consumption_facets",
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "leastaction-tests",
        **catalog_env(catalog_url),
    }


def read_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def without_openlineage(directory: Path) -> Path:
    """A site-packages made of links to the virtualenv's, without the OpenLineage provider and client: an
    install of Airflow without them (their modules and their distributions' metadata are missing)."""
    real = Path(next(p for p in sys.path if p.endswith("site-packages") and (Path(p) / "airflow").is_dir()))
    hidden = ("openlineage", "apache_airflow_providers_openlineage")
    directory.mkdir(parents=True, exist_ok=True)
    for entry in real.iterdir():
        if entry.name.startswith(hidden) or entry.name.startswith("__editable__") or entry.name == "airflow":
            continue
        (directory / entry.name).symlink_to(entry)
    _link_tree(real / "airflow", directory / "airflow", skip=real / "airflow" / "providers" / "openlineage")
    return directory


def _link_tree(source: Path, target: Path, skip: Path) -> None:
    """``target`` holds a link to each entry of ``source``, except ``skip`` and the directories on its way."""
    target.mkdir()
    for entry in source.iterdir():
        if entry == skip:
            continue
        if entry.is_dir() and skip.is_relative_to(entry):
            _link_tree(entry, target / entry.name, skip)
        else:
            (target / entry.name).symlink_to(entry)
