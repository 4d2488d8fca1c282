"""The package's entry points as an installed distribution declares them, for a child process.

The test environment's install of the package may predate an entry point added to ``pyproject.toml``; a
child process that is given :func:`declared_entry_points` on its path sees the checkout's entry points,
read from ``pyproject.toml``, as Airflow will see them once the package is installed (through
``importlib.metadata``, as pluggy and Airflow's plugin manager look them up).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.helpers.paths import ROOT


def declared_entry_points(directory: Path, groups: tuple[str, ...]) -> Path:
    """A directory holding a distribution with the ``groups`` of entry points ``pyproject.toml`` declares."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    dist_info = directory / "airflow_leastaction_entry_points-0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: airflow-leastaction-entry-points\nVersion: 0\n")
    sections = [
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in declared.get(group, {}).items())
        for group in groups
    ]
    (dist_info / "entry_points.txt").write_text("\n".join(sections))
    return directory
