"""A clean install is reproducible and starts from a stock machine.

* ``constraints/airflow-<minor>.txt`` pins, for each Airflow minor the package supports, every package of
  the environment the suite passed in on that minor, as a constraints file anyone can use (plain
  ``name==version`` pins from an index, not this package itself); ``pyproject.toml`` claims exactly the
  minors that have one, and the running environment is the one its minor's file pins.
* ``make`` asks for the system packages before it creates the virtualenv; without root,
  ``scripts/system-deps.sh`` prints the one ``apt-get install`` line to run and stops.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from airflow_leastaction.version_compat import OLDEST_SUPPORTED
from tests.helpers.paths import CONSTRAINTS, ROOT, minor_key

SYSTEM_DEPS = ROOT / "scripts" / "system-deps.sh"
RUNNING_MINOR = ".".join(version("apache-airflow").split(".")[:2])


def pins(minor: str = RUNNING_MINOR) -> dict[str, Requirement]:
    text = CONSTRAINTS[minor].read_text()
    reqs = [Requirement(line) for line in text.splitlines() if line and not line.startswith("#")]
    by_name = {canonicalize_name(r.name): r for r in reqs}
    assert len(by_name) == len(reqs), f"{CONSTRAINTS[minor].name}: a package is pinned twice"
    return by_name


def pinned_version(req: Requirement) -> str:
    (spec,) = req.specifier
    return spec.version


def declared_airflow() -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return next(Requirement(d) for d in project["dependencies"] if d.startswith("apache-airflow"))


@pytest.mark.parametrize("minor", list(CONSTRAINTS))
def test_constraints_are_plain_pins_from_an_index_without_this_package(minor):
    for name, req in pins(minor).items():
        assert req.url is None, f"{name}: a direct URL is not reproducible elsewhere"
        assert [s.operator for s in req.specifier] == ["=="], f"{name}: not pinned to one version"
        assert name != "airflow-leastaction", "the package itself is what gets installed with the pins"
    assert pinned_version(pins(minor)["apache-airflow"]).startswith(minor + "."), "the file of another minor"


def test_constraints_pin_every_package_of_the_running_environment():
    assert RUNNING_MINOR in CONSTRAINTS, f"Airflow {RUNNING_MINOR} has no constraints file: not a supported minor"
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable", "--isolated"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    # A pin whose marker excludes this Python (a release needing a later patch level) leaves that
    # package's version to pip here.
    free = {name for name, req in pins().items() if req.marker and not req.marker.evaluate()}
    installed = {
        canonicalize_name(r.name): pinned_version(r)
        for r in map(Requirement, frozen)
        if canonicalize_name(r.name) not in free | {"airflow-leastaction"}
    }
    pinned = {name: pinned_version(req) for name, req in pins().items() if name not in free}
    differ = {
        name: (pinned.get(name), installed.get(name))
        for name in pinned.keys() | installed.keys()
        if pinned.get(name) != installed.get(name)
    }
    assert not differ, (
        f"{CONSTRAINTS[RUNNING_MINOR].name} is not this environment (pinned, installed): {differ}; "
        f"once the suite passes here, run make constraints AIRFLOW={RUNNING_MINOR}"
    )


def test_the_supported_airflow_range_is_the_minors_with_constraints():
    airflow = declared_airflow()
    minors = list(CONSTRAINTS)
    for minor in minors:
        assert airflow.specifier.contains(pinned_version(pins(minor)["apache-airflow"])), minor
    oldest, newest = minor_key(minors[0]), minor_key(minors[-1])
    # Neither the minor below the oldest tested nor the one above the newest is claimed.
    assert not airflow.specifier.contains(f"{oldest[0]}.{oldest[1] - 1}.0")
    assert not airflow.specifier.contains(f"{newest[0]}.{newest[1] + 1}.0")
    assert oldest == OLDEST_SUPPORTED
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^AIRFLOW_MINORS := (.+)$", makefile, re.MULTILINE).group(1).split() == minors
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"Programming Language :: Python :: {sys.version_info[0]}.{sys.version_info[1]}" in project["classifiers"]


@pytest.mark.parametrize("minor", list(CONSTRAINTS))
def test_every_dependency_of_the_package_and_its_extras_is_pinned(minor):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
    missing = {canonicalize_name(Requirement(d).name) for d in wanted} - set(pins(minor))
    assert not missing, missing


def test_make_installs_system_packages_before_it_creates_the_virtualenv(tmp_path):
    plan = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "test", f"VENV={tmp_path}/venv"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    deps = next(i for i, line in enumerate(plan) if "scripts/system-deps.sh" in line)
    venv = next(i for i, line in enumerate(plan) if "-m venv" in line)
    assert deps < venv, plan
    assert plan[deps].split()[-4:] == ["venv", "postgres", "redis", "browser"], plan[deps]


#: How the README names what each argument of scripts/system-deps.sh installs.
SYSTEM_PACKAGE_NAMES = {"venv": "python3-venv", "postgres": "PostgreSQL", "redis": "Redis", "browser": "Chromium"}


def test_the_readme_names_every_system_package_make_test_installs(tmp_path):
    plan = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "test", f"VENV={tmp_path}/venv"], check=True, capture_output=True, text=True
    ).stdout
    wanted = next(line for line in plan.splitlines() if "scripts/system-deps.sh" in line).split("system-deps.sh")[1]
    readme = " ".join((ROOT / "README.md").read_text().split())
    sentence = next(s for s in readme.split(". ") if "the system packages it needs" in s)
    assert [w for w in wanted.split() if SYSTEM_PACKAGE_NAMES[w] not in sentence] == [], sentence


def test_make_builds_another_minor_in_its_own_virtualenv_from_its_constraints():
    oldest = min(CONSTRAINTS, key=minor_key)
    plan = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "install", f"AIRFLOW={oldest}"], check=True, capture_output=True, text=True
    ).stdout
    assert f".venv-airflow-{oldest}/bin/pip install -q -c constraints/airflow-{oldest}.txt -e" in plan, plan
    refused = subprocess.run(["make", "-n", "-C", str(ROOT), "install", "AIRFLOW=2.11"], capture_output=True, text=True)
    assert refused.returncode != 0
    assert f"AIRFLOW=2.11 is not a supported minor: {' '.join(list(CONSTRAINTS))}" in refused.stderr


def test_make_test_minors_runs_the_unit_and_integration_tiers_on_every_minor_but_the_newest():
    # Ask make itself which minors the goal loops over (first line) and what it runs on each (-p: its rules).
    shown = subprocess.run(
        ["make", "-s", "-p", "-C", str(ROOT), "-f", "Makefile", "-f", "-", "show"],
        input="show:\n\t@echo 'older: $(OLDER_MINORS)'\n",
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    older = re.search(r"^older: (.*)$", shown, re.MULTILINE).group(1)
    assert older.split() == list(CONSTRAINTS)[:-1]
    goal = shown[shown.index("\ntest-minors:") :].split("\n\n")[0]
    assert "install AIRFLOW=$$minor VENV=.venv-airflow-$$minor" in goal
    assert ".venv-airflow-$$minor/bin/python -m pytest" in goal and "tests/unit tests/integration" in goal


def test_ci_tests_the_older_minors_and_then_the_wheel_after_the_whole_suite_on_the_newest():
    steps = [line.split() for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert steps == [["make", "lint"], ["make", "test"], ["make", "test-minors"], ["make", "wheel-test"]]


def _as_a_user(argv: list[str]) -> list[str]:
    """The command run without root: as ``nobody`` when the suite runs as root."""
    if os.geteuid() != 0:
        return argv
    if not shutil.which("runuser"):
        pytest.skip("running as root without runuser: cannot drop to a user without root")
    return ["runuser", "-u", "nobody", "--", *argv]


def _others_may_enter(directory: Path) -> bool:
    return all(os.stat(d).st_mode & 0o001 for d in (directory, *directory.parents))


def _system_deps_without_root(script: Path) -> subprocess.CompletedProcess:
    """``script`` run as a user without root, on a stock machine lacking python3-venv and chromium."""
    with tempfile.TemporaryDirectory() as tools:
        os.chmod(tools, 0o755)
        if os.geteuid() == 0 and not _others_may_enter(Path(tools)):
            pytest.skip(f"the temporary directory {tools} is inside a directory nobody may not enter (TMPDIR)")
        # A PATH without chromium, and a python3 that cannot make a virtualenv (what python3 without
        # python3-venv does on Debian): the two packages a stock machine lacks.
        for tool in ("ls", "id", "readlink"):
            os.symlink(shutil.which(tool), Path(tools) / tool)
        # The checkout may be a directory only its owner can enter: the user runs a readable copy.
        copy = Path(tools) / script.name
        shutil.copyfile(script, copy)
        copy.chmod(0o644)
        env = ["/usr/bin/env", "-i", f"PATH={tools}", "PYTHON=/bin/false", f"LEASTACTION_VENV={tools}/no-venv-yet"]
        return subprocess.run(
            _as_a_user([*env, shutil.which("bash"), str(copy), "venv", "browser"]),
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )


def _prints_the_one_apt_get_line(done: subprocess.CompletedProcess) -> None:
    distro = re.search(r"^ID=\"?(\w+)", Path("/etc/os-release").read_text(), re.MULTILINE)
    expected = ["python3-venv"] + ([] if distro and distro.group(1) == "ubuntu" else ["chromium"])
    assert done.returncode == 1, done.stderr
    apt_lines = [line for line in done.stderr.splitlines() if "apt-get" in line]
    assert apt_lines == ["sudo apt-get install -y " + " ".join(expected)], done.stderr
    assert done.stdout == ""


def test_without_root_system_deps_prints_the_one_apt_get_line_and_stops():
    _prints_the_one_apt_get_line(_system_deps_without_root(SYSTEM_DEPS))


def test_without_root_system_deps_runs_from_a_checkout_only_its_owner_can_enter(tmp_path):
    # A clone in root's home or in a `mktemp -d` directory: nobody else may enter it.
    private = tmp_path / "clone"
    (private / "scripts").mkdir(parents=True)
    private.chmod(0o700)
    script = private / "scripts" / "system-deps.sh"
    shutil.copy2(SYSTEM_DEPS, script)
    _prints_the_one_apt_get_line(_system_deps_without_root(script))
