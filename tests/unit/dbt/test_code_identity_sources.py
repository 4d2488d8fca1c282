"""What dbt does not hash for the queue: a large seed's bytes, and the vars read in hooks and project config.
Where the code identity cannot be known for sure it is unknown (the model is built), never a stale match."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.dbt.manifest import ProjectGraph, file_checksums

SEED, MODEL, HOOK = "seed.shop.big", "model.shop.from_big", "operation.shop.shop-on-run-start-0"
ENV = {"HOME": "/root"}


def large_seed_manifest(root) -> dict:
    """A model reading a seed that dbt recorded by its path, as it does above 1 MiB."""
    return {
        "metadata": {"project_name": "shop"},
        "nodes": {
            SEED: {
                "resource_type": "seed",
                "package_name": "shop",
                "checksum": {"name": "path", "checksum": "seeds/big.csv"},
                "root_path": str(root),
                "original_file_path": "seeds/big.csv",
                "config": {"materialized": "seed"},
                "depends_on": {"nodes": [], "macros": []},
            },
            MODEL: node("select * from {{ ref('big') }}", parents=[SEED]),
        },
    }


def node(code: str = "select 1", parents=(), config=None, unrendered=None, kind="model") -> dict:
    return {
        "resource_type": kind,
        "package_name": "shop",
        "checksum": {"name": "sha256", "checksum": f"sum of {code}"},
        "config": {"materialized": "table", **(config or {})},
        "unrendered_config": unrendered or {},
        "raw_code": code,
        "depends_on": {"nodes": list(parents), "macros": []},
    }


class TestALargeSeed:
    @pytest.fixture
    def seed_file(self, tmp_path):
        (tmp_path / "seeds").mkdir()
        path = tmp_path / "seeds" / "big.csv"
        path.write_text("id,v\n1,a\n")
        return path

    def identities(self, manifest) -> tuple[str | None, str | None]:
        graph = ProjectGraph(manifest, {}, file_checksums(manifest))
        return graph.code_identity(SEED, {}, ENV), graph.code_identity(MODEL, {}, ENV)

    def test_a_seed_recorded_by_its_path_changes_identity_when_its_bytes_change_and_its_readers_with_it(
        self, tmp_path, seed_file
    ):
        manifest = large_seed_manifest(tmp_path)
        before = self.identities(manifest)
        assert self.identities(manifest) == before and None not in before
        seed_file.write_text("id,v\n1,b\n")  # same size, same path: only the bytes say it changed
        after = self.identities(manifest)
        assert after[0] != before[0] and after[1] != before[1]

    def test_a_seed_recorded_by_its_path_whose_file_cannot_be_read_has_unknown_code(self, tmp_path, seed_file):
        manifest = large_seed_manifest(tmp_path)
        seed_file.unlink()
        assert self.identities(manifest) == (None, None)

    def test_without_hashing_its_file_a_seed_recorded_by_its_path_has_unknown_code(self, tmp_path, seed_file):
        graph = ProjectGraph(large_seed_manifest(tmp_path), {})
        assert (graph.code_identity(SEED, {}, ENV), graph.code_identity(MODEL, {}, ENV)) == (None, None)

    def test_a_seed_dbt_hashed_keeps_dbts_checksum_and_no_file_is_read(self, tmp_path):
        manifest = large_seed_manifest(tmp_path / "nowhere")
        manifest["nodes"][SEED]["checksum"] = {"name": "sha256", "checksum": "abc"}
        assert file_checksums(manifest) == {}
        assert None not in self.identities(manifest)


#: Where a var can decide a model's build without appearing in its SQL.
PLACES = {
    "sql": lambda m: m["nodes"][MODEL].update(raw_code="select '{{ var(\"v\") }}'"),
    "post-hook": lambda m: m["nodes"][MODEL]["config"].update(
        {"post-hook": [{"sql": "grant select to {{ var('v') }}", "transaction": True, "index": None}]}
    ),
    "pre-hook": lambda m: m["nodes"][MODEL]["config"].update({"pre-hook": [{"sql": "set x = '{{ var('v') }}'"}]}),
    "project config": lambda m: m["nodes"][MODEL]["unrendered_config"].update(schema="s_{{ var('v', 'a') }}"),
    "on-run-start": lambda m: m["nodes"].update(
        {HOOK: node("create table t_{{ var('v') }} as select 1", kind="operation")}
    ),
    "nowhere": lambda m: None,
}


def var_manifest(place: str) -> dict:
    manifest = {"metadata": {"project_name": "shop"}, "nodes": {MODEL: node()}}
    PLACES[place](manifest)
    return manifest


@pytest.mark.parametrize("place", sorted(set(PLACES) - {"nowhere"}))
def test_a_var_read_in_a_hook_or_the_project_config_is_part_of_the_code_identity(place):
    graph = ProjectGraph(var_manifest(place), {"v": "a"})
    assert graph.code_identity(MODEL, {"v": "b"}, ENV) != graph.code_identity(MODEL, {}, ENV)
    assert graph.code_identity(MODEL, {"v": "a"}, ENV) == graph.code_identity(MODEL, {}, ENV)


@given(
    place=st.sampled_from(sorted(PLACES)),
    project=st.sampled_from(["a", "b", None]),
    first=st.sampled_from(["a", "b", None]),
    second=st.sampled_from(["a", "b", None]),
    other=st.booleans(),
)
def test_the_code_identity_moves_exactly_when_a_var_the_model_reads_takes_another_value(
    place, project, first, second, other
):
    """Oracle: the model reads ``v`` unless it is named nowhere; its value is the request's over the
    project's; a var it does not read (``w``) never counts."""
    graph = ProjectGraph(copy.deepcopy(var_manifest(place)), {"v": project} if project else {})

    def request(value):
        return {**({"v": value} if value else {}), **({"w": value} if other else {})}

    def seen(value):
        return value or project

    moved = graph.code_identity(MODEL, request(first), ENV) != graph.code_identity(MODEL, request(second), ENV)
    assert moved == (place != "nowhere" and seen(first) != seen(second))


def test_a_project_hook_counts_by_its_own_sql_not_by_the_rest_of_dbt_project_yml():
    """dbt's checksum of an on-run-start hook is the whole dbt_project.yml's: a var's value there would
    otherwise rebuild every model, not only those that read it."""
    manifest = var_manifest("on-run-start")
    other_file = copy.deepcopy(manifest)
    other_file["nodes"][HOOK]["checksum"]["checksum"] = "dbt_project.yml with another var"
    other_sql = copy.deepcopy(manifest)
    other_sql["nodes"][HOOK]["raw_code"] = "create table t_{{ var('v') }} as select 2"
    identity = ProjectGraph(manifest, {"v": "a"}).code_identity(MODEL, {}, ENV)
    assert ProjectGraph(other_file, {"v": "a"}).code_identity(MODEL, {}, ENV) == identity
    assert ProjectGraph(other_sql, {"v": "a"}).code_identity(MODEL, {}, ENV) != identity
