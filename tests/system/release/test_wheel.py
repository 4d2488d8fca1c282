"""What users install is what the suite tested: the wheel of ``make dist``, not the checkout.

For each supported Airflow minor the wheel is installed, alone, into a fresh virtualenv outside the
checkout with that minor's constraints file, and checked there: Airflow lists the provider at its version,
``airflow-leastaction db upgrade`` creates a catalog from the wheel's migrations, the plugin's pages answer
in a real API server (templates and styles from the wheel), the example DAGs parse, the OpenLineage schema
loads, and each extra the docs name resolves alone with the same constraints (``pip install --dry-run``:
the resolution a real install makes, without installing each extra's packages once per minor).

``make wheel-test`` builds the dist once and points ``LEASTACTION_DIST`` at it; without it the module
builds its own with ``scripts/dist.sh`` (reproducible: two builds of one commit are the same bytes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers.airflow_cluster import ADMIN_PASSWORD, ADMIN_USER, TEARDOWN_GRACE, AirflowCluster
from tests.helpers.paths import CONSTRAINTS, EXAMPLES, ROOT

DIST_SCRIPT = ROOT / "scripts" / "dist.sh"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: The extras a user installs (``dev`` is the suite's own).
USER_EXTRAS = sorted(set(PROJECT["optional-dependencies"]) - {"dev"})
#: The pages of the LeastAction menu, and a rule of the stylesheet every page inlines from the wheel.
PAGES = ("decisions", "consumption", "catalog", "graph", "queue")
STYLE_MARKER = ".tone-"


def build_dist(out: Path) -> dict[str, Path]:
    """``scripts/dist.sh`` into ``out``: the sdist and the wheel, by kind."""
    done = subprocess.run(
        [str(DIST_SCRIPT), str(out)],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return files_of(out)


def files_of(directory: Path) -> dict[str, Path]:
    (sdist,) = directory.glob("airflow_leastaction-*.tar.gz")
    (wheel,) = directory.glob("airflow_leastaction-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    given = os.environ.get("LEASTACTION_DIST")
    return files_of(Path(given)) if given else build_dist(tmp_path_factory.mktemp("dist"))


def wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def test_two_builds_of_one_commit_are_the_same_bytes(dist, tmp_path):
    again = build_dist(tmp_path)
    for kind, path in dist.items():
        assert again[kind].name == path.name
        assert again[kind].read_bytes() == path.read_bytes(), f"the {kind} differs between two builds"


def test_the_sdist_rebuilds_to_the_same_wheel(dist, tmp_path):
    # The sdist's source files carry the build's timestamp (SOURCE_DATE_EPOCH): a rebuild from it uses the
    # same (its generated PKG-INFO carries none).
    with tarfile.open(dist["sdist"]) as sdist:
        stamp = {m.mtime for m in sdist.getmembers() if m.isfile() and not m.name.endswith("/PKG-INFO")}
    assert len(stamp) == 1, stamp
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(dist["sdist"])],
        env={**os.environ, "SOURCE_DATE_EPOCH": str(stamp.pop())},
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert (tmp_path / dist["wheel"].name).read_bytes() == dist["wheel"].read_bytes()


def test_the_wheel_carries_the_migrations_templates_and_schema(dist):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    package = ROOT / "airflow_leastaction"
    wanted = [
        *package.glob("catalog/migrations/versions/*.py"),
        package / "catalog" / "migrations" / "env.py",
        *package.glob("www/templates/*"),
        *package.glob("lineage/schemas/*.json"),
    ]
    missing = [str(p.relative_to(ROOT)) for p in wanted if str(p.relative_to(ROOT)) not in names]
    assert not missing, missing
    assert wheel_version(dist["wheel"]) == _checkout_version()


def _checkout_version() -> str:
    from airflow_leastaction import __version__

    return __version__


class Venv:
    """A fresh virtualenv outside the checkout, with the wheel installed, and a home of its own."""

    def __init__(self, root: Path, minor: str):
        self.root, self.minor = root, minor
        self.python = root / "venv" / "bin" / "python"
        self.home = root / "home"
        self.home.mkdir()
        self.catalog_url = f"sqlite:///{root}/catalog.db"

    def environ(self) -> dict[str, str]:
        # Nothing of the checkout or of the suite's Airflow: no PYTHONPATH, no AIRFLOW_* settings.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHON"))}
        return {
            **env,
            "PYTHONSAFEPATH": "1",
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home}/airflow.db",
            "AIRFLOW_CONN_LEASTACTION_CATALOG_DEFAULT": json.dumps(
                {"conn_type": "leastaction_catalog", "extra": {"url": self.catalog_url}}
            ),
        }

    def run(self, *argv: str, timeout: float = 600) -> str:
        done = subprocess.run(
            [str(a) for a in argv],
            cwd=self.root,
            env=self.environ(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, (
            f"{' '.join(map(str, argv))} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
        return done.stdout

    def pip(self, *args: str, timeout: float = 1200) -> str:
        return self.run(self.python, "-m", "pip", *args, "-c", CONSTRAINTS[self.minor], timeout=timeout)

    def script(self, name: str) -> Path:
        return self.python.with_name(name)


@pytest.fixture(scope="module", params=list(CONSTRAINTS))
def venv(request, dist, tmp_path_factory) -> Venv:
    minor = request.param
    env = Venv(tmp_path_factory.mktemp(f"airflow-{minor}"), minor)
    subprocess.run([sys.executable, "-m", "venv", str(env.root / "venv")], check=True)
    env.pip("install", "-q", str(dist["wheel"]))
    return env


def test_the_wheel_is_what_the_virtualenv_imports(venv):
    where = venv.run(venv.python, "-c", "import airflow_leastaction as p; print(p.__file__)").strip()
    assert Path(where).is_relative_to(venv.root / "venv"), where
    airflow = venv.run(venv.python, "-c", "from importlib.metadata import version; print(version('apache-airflow'))")
    assert airflow.startswith(venv.minor + "."), airflow


def test_airflow_lists_the_provider_at_its_version(venv, dist):
    listed = json.loads(venv.run(venv.python, "-m", "airflow", "providers", "list", "-o", "json"))
    ours = [p for p in listed if p["package_name"] == "airflow-leastaction"]
    assert [p["version"] for p in ours] == [wheel_version(dist["wheel"])], listed


def test_db_upgrade_creates_a_catalog_from_the_wheels_migrations(venv):
    venv.run(venv.script("airflow-leastaction"), "db", "upgrade")
    newest = max(p.name.split("_")[0] for p in (ROOT / "airflow_leastaction/catalog/migrations/versions").glob("0*.py"))
    probe = (
        "import sqlalchemy as sa, sys; e = sa.create_engine(sys.argv[1]);"
        "c = e.connect(); print(c.execute(sa.text('select version_num from la_alembic_version')).scalar());"
        "print(len([t for t in sa.inspect(e).get_table_names() if t.startswith('la_')]))"
    )
    head, tables = venv.run(venv.python, "-c", probe, venv.catalog_url).split()
    assert head.startswith(newest), head
    assert int(tables) > 1


def test_the_example_dags_parse(venv):
    probe = (
        "import json, sys; from airflow_leastaction.version_compat import dag_bag_class;"
        "bag = dag_bag_class()(sys.argv[1]);"
        "print(json.dumps({'errors': {k: str(v) for k, v in bag.import_errors.items()}, 'dags': len(bag.dag_ids)}))"
    )
    parsed = json.loads(venv.run(venv.python, "-c", probe, EXAMPLES).splitlines()[-1])
    assert parsed["errors"] == {}
    assert parsed["dags"] >= len(list(EXAMPLES.glob("*.py")))


def test_the_openlineage_schema_loads(venv):
    probe = (
        "import json; from airflow_leastaction.lineage import schema_text; print(json.dumps(json.loads(schema_text())))"
    )
    schema = json.loads(venv.run(venv.python, "-c", probe))
    shipped = json.loads((ROOT / "airflow_leastaction/lineage/schemas/LeastActionRunFacets.json").read_text())
    assert schema == shipped


def test_the_plugin_pages_answer_in_a_real_api_server(venv, tmp_path):
    dags = tmp_path / "dags"
    dags.mkdir()
    cluster = AirflowCluster(
        dags, catalog_url=venv.catalog_url, components=("api-server",), home=tmp_path / "home", python=str(venv.python)
    )
    cluster.environ.update({k: v for k, v in venv.environ().items() if not k.startswith("AIRFLOW")})
    for name in [k for k in cluster.environ if k.startswith("PYTHON") and k != "PYTHONSAFEPATH"]:
        cluster.environ.pop(name)
    cluster.run("db", "migrate")
    cluster.run_leastaction("db", "upgrade")
    try:
        cluster.start(timeout=300)
        token = httpx.post(
            f"{cluster.base_url}/auth/token", json={"username": ADMIN_USER, "password": ADMIN_PASSWORD}, timeout=30
        ).json()["access_token"]
        for page in PAGES:
            response = httpx.get(f"{cluster.base_url}/leastaction/{page}", cookies={"_token": token}, timeout=60)
            assert response.status_code == 200, (page, response.text[:2000])
            assert STYLE_MARKER in response.text, page
    except BaseException:
        print(cluster.describe())
        raise
    finally:
        cluster.stop(TEARDOWN_GRACE)


@pytest.mark.parametrize("extra", USER_EXTRAS)
def test_each_extra_installs_alone(venv, dist, extra, tmp_path):
    report = tmp_path / "report.json"
    venv.pip("install", "-q", "--dry-run", "--report", str(report), f"{dist['wheel']}[{extra}]")
    would = {
        canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert not {"apache-airflow", "apache-airflow-core"} & set(would), f"[{extra}] would replace Airflow: {would}"
    for requirement in map(Requirement, PROJECT["optional-dependencies"][extra]):
        name = canonicalize_name(requirement.name)
        if name in would:
            assert requirement.specifier.contains(would[name]), (extra, name, would[name])
        else:
            installed = venv.run(venv.python, "-c", f"from importlib.metadata import version; print(version({name!r}))")
            assert requirement.specifier.contains(installed.strip()), (extra, name, installed)
