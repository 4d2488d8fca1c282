"""What a release promises users, checked against the files that make it.

* Every extra the docs tell users to install exists, and every extra a user may install is in the docs.
* The version is written once (``airflow_leastaction.__version__``): the distribution, the provider info
  and the changelog's newest release say the same.
* The ``dbt`` extra stays on the dbt-core line the suite runs.
* The upgrading guide says what every catalog migration does to a large catalog.
"""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

import airflow_leastaction
from tests.helpers.paths import CONSTRAINTS, ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]
USER_EXTRAS = sorted(set(EXTRAS) - {"dev"})
#: Where users read how to install: the README, the guides, the Compose image.
INSTALL_TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md")), ROOT / "docker" / "Dockerfile"]
#: ``pip install ... .[a,b]``, ``airflow-leastaction[a]``, ``dist/airflow_leastaction-....whl[a,b]``, ``<wheel>[a]``.
EXTRAS_NAMED = re.compile(
    r"(?:airflow-leastaction|airflow_leastaction[^\s\"'\[]*|<wheel>|\.|\$\w+|\}|\))\[([a-z0-9,\- ]+)\]"
)
#: A release heading of CHANGELOG.md (Keep a Changelog): ``## [0.1.0] - 2026-12-06``.
RELEASE_HEADING = re.compile(r"^## \[(?P<version>\d[^\]]*)\]", re.MULTILINE)


def extras_named_in(text: str) -> set[str]:
    named = set()
    for line in text.splitlines():
        if "pip install" in line or "airflow-leastaction[" in line:
            for group in EXTRAS_NAMED.findall(line):
                named |= {name.strip() for name in group.split(",")}
    return named


def test_every_extra_the_docs_install_exists():
    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in INSTALL_TEXTS
        for name in extras_named_in(path.read_text())
        if name not in EXTRAS
    }
    assert not unknown, f"extras the docs name that the package does not have: {sorted(unknown)}"


def test_every_extra_a_user_installs_is_in_the_install_guide():
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    section = guide[guide.index("## Install") : guide.index("\n## ", guide.index("## Install") + 1)]
    missing = [extra for extra in USER_EXTRAS if f"`{extra}`" not in section]
    assert not missing, f"extras the install guide does not explain: {missing}"


def test_the_version_is_written_once():
    assert "version" not in PYPROJECT["project"], "pyproject.toml must read the version from the package"
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert airflow_leastaction.get_provider_info()["versions"][0] == airflow_leastaction.__version__
    Version(airflow_leastaction.__version__)  # a version pip can compare


def test_the_changelogs_newest_release_is_the_packages_version():
    releases = RELEASE_HEADING.findall((ROOT / "CHANGELOG.md").read_text())
    assert releases, "CHANGELOG.md has no release heading (## [x.y.z] - date)"
    assert releases[0] == airflow_leastaction.__version__


def test_the_dbt_extra_stays_on_the_tested_dbt_line():
    dbt_core = next(Requirement(r) for r in EXTRAS["dbt"] if Requirement(r).name == "dbt-core")
    assert not dbt_core.specifier.contains("1.12.0"), "dbt-core 1.12 is not what the suite runs"
    for path in CONSTRAINTS.values():
        pinned = re.search(r"^dbt-core==(\S+)$", path.read_text(), re.MULTILINE).group(1)
        assert dbt_core.specifier.contains(pinned), f"{path.name} pins dbt-core {pinned} outside the extra"


def test_the_docs_name_the_wheel_of_this_version():
    wheels = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in INSTALL_TEXTS
        for name in re.findall(r"airflow_leastaction-([^-\s]+)-py3-none-any\.whl", path.read_text())
        if name != airflow_leastaction.__version__
    }
    assert not wheels, f"wheels of another version in the docs: {sorted(wheels)}"


def test_the_upgrading_guide_describes_every_catalog_migration():
    versions = ROOT / "airflow_leastaction" / "catalog" / "migrations" / "versions"
    revisions = [
        re.search(r'^revision = "([^"]+)"', p.read_text(), re.MULTILINE).group(1) for p in versions.glob("*.py")
    ]
    guide = (ROOT / "docs" / "upgrading.md").read_text()
    table = guide[guide.index("## Catalog migrations") :]
    described = set(re.findall(r"^\| `([^`]+)` \| [^|]*[a-z]", table, re.MULTILINE))
    first = "0001_catalog", "0002_dbt_queue"  # an empty catalog's: the guide's catalogs start after them
    missing = sorted(set(revisions) - described - set(first))
    assert not missing, f"catalog migrations the upgrading guide does not describe: {missing}"


def test_the_guides_of_openlineage_and_celery_install_the_extra_that_brings_their_provider():
    for guide, extra, provider in (
        ("assets.md", "openlineage", "apache-airflow-providers-openlineage"),
        ("operations.md", "celery", "apache-airflow-providers-celery"),
    ):
        assert provider in {Requirement(r).name for r in EXTRAS.get(extra, [])}, f"no {extra} extra with {provider}"
        assert f"`{extra}` extra" in (ROOT / "docs" / guide).read_text(), f"{guide} does not name the {extra} extra"
