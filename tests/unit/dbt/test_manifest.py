"""What the queue reads from a manifest: inputs seen through views and seeds, code identity, source mappings."""

from __future__ import annotations

import copy

import pytest

from airflow_leastaction.dbt.manifest import ProjectGraph
from airflow_leastaction.identity import TaskIdentity

ORDERS, CUSTOMERS = "source.shop.raw.orders", "source.shop.raw.customers"
STG, VIEW, SEED, DIM = "model.shop.stg_orders", "model.shop.v_customers", "seed.shop.countries", "model.shop.dim"


def node(uid, kind, materialized, parents=(), code="select 1", macros=(), checksum=None):
    return {
        "unique_id": uid,
        "resource_type": kind,
        "package_name": uid.split(".")[1],
        "checksum": {"name": "sha256", "checksum": checksum or f"sum-{uid}"},
        "config": {"materialized": materialized, "meta": {}},
        "raw_code": code,
        "depends_on": {"nodes": list(parents), "macros": list(macros)},
    }


def source(uid, table, meta=None, source_meta=None, freshness=False):
    return {
        "unique_id": uid,
        "source_name": "raw",
        "name": table,
        "identifier": table,
        "relation_name": f'"raw"."{table}"',
        "meta": meta or {},
        "source_meta": source_meta or {},
        "config": {"meta": meta or {}},
        "loaded_at_field": "loaded_at" if freshness else None,
        "freshness": {"warn_after": {"count": 1 if freshness else None, "period": "hour"}},
    }


MANIFEST = {
    "metadata": {"project_name": "shop"},
    "nodes": {
        STG: node(STG, "model", "table", [ORDERS], "select * from orders where region = '{{ var(\"region\") }}'"),
        VIEW: node(VIEW, "model", "view", [CUSTOMERS]),
        SEED: node(SEED, "seed", "seed"),
        DIM: node(DIM, "model", "table", [STG, VIEW, SEED], "select {{ money('x') }}", ["macro.shop.money"]),
        "model.utils.calendar": node("model.utils.calendar", "model", "table"),
    },
    "sources": {ORDERS: source(ORDERS, "orders"), CUSTOMERS: source(CUSTOMERS, "customers")},
    "macros": {
        "macro.shop.money": {
            "macro_sql": "{% macro money(c) %}{{ inner(c) }} {{ env_var('CURRENCY') }}{% endmacro %}",
            "depends_on": {"macros": ["macro.shop.inner"]},
        },
        "macro.shop.inner": {"macro_sql": "{% macro inner(c) %}round({{ c }}, 2){% endmacro %}", "depends_on": {}},
    },
}
ENV = {"CURRENCY": "EUR", "HOME": "/root"}


def graph(edit=None, project_vars=None) -> ProjectGraph:
    manifest = copy.deepcopy(MANIFEST)
    if edit:
        edit(manifest)
    return ProjectGraph(manifest, {"region": "north"} if project_vars is None else project_vars)


class TestInputs:
    def test_a_model_reads_through_views_and_seeds_to_their_inputs(self):
        assert graph().inputs(DIM) == (STG, CUSTOMERS)

    def test_a_staging_model_reads_its_source(self):
        assert graph().inputs(STG) == (ORDERS,)


def changed(path, value):
    def edit(manifest):
        target = manifest
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


class TestCodeIdentity:
    @pytest.mark.parametrize(
        "edit",
        [
            changed(("nodes", DIM, "checksum", "checksum"), "new"),
            changed(("nodes", DIM, "config", "materialized"), "incremental"),
            changed(("nodes", VIEW, "checksum", "checksum"), "new"),  # the view it reads through
            changed(("nodes", SEED, "checksum", "checksum"), "new"),  # the seed's file
            changed(("macros", "macro.shop.inner", "macro_sql"), "{% macro inner(c) %}{{ c }}{% endmacro %}"),
            changed(("sources", CUSTOMERS, "identifier"), "customers_v2"),  # a source it reads moved
        ],
        ids=["own sql", "own config", "view read through", "seed file", "macro called", "source definition"],
    )
    def test_a_change_to_what_decides_its_build_changes_the_code_identity(self, edit):
        assert graph(edit).code_identity(DIM, {}, ENV) != graph().code_identity(DIM, {}, ENV)

    @pytest.mark.parametrize(
        "edit",
        [
            changed(("nodes", STG, "checksum", "checksum"), "new"),  # an input's code: its build moves it
            changed(("nodes", "model.utils.calendar", "checksum", "checksum"), "new"),
            changed(("sources", CUSTOMERS, "meta"), {"leastaction": {"task": "load", "project": "p"}}),
        ],
        ids=["input model's code", "unrelated model", "the source's catalog mapping"],
    )
    def test_a_change_elsewhere_leaves_it(self, edit):
        assert graph(edit).code_identity(DIM, {}, ENV) == graph().code_identity(DIM, {}, ENV)

    def test_the_env_vars_it_names_count_and_no_others(self):
        g = graph()
        assert g.code_identity(DIM, {}, {**ENV, "CURRENCY": "USD"}) != g.code_identity(DIM, {}, ENV)
        assert g.code_identity(DIM, {}, {**ENV, "HOME": "/tmp"}) == g.code_identity(DIM, {}, ENV)

    def test_the_vars_it_names_count_request_vars_over_project_vars(self):
        g = graph()
        north = g.code_identity(STG, {}, ENV)
        assert g.code_identity(STG, {"region": "south"}, ENV) != north
        assert g.code_identity(STG, {"region": "north"}, ENV) == north
        assert g.code_identity(STG, {"other": 1}, ENV) == north
        assert graph(project_vars={"region": "south"}).code_identity(STG, {}, ENV) != north
        assert graph(project_vars={"region": "north", "shop": {"region": "south"}}).code_identity(STG, {}, ENV) != north

    def test_a_var_named_by_an_expression_makes_every_var_count(self):
        g = graph(changed(("nodes", STG, "raw_code"), "{{ var(name) }}"))
        assert g.code_identity(STG, {"other": 1}, ENV) != g.code_identity(STG, {}, ENV)

    def test_a_var_named_outside_jinja_is_sql_or_a_comment_not_a_var(self):
        g = graph(changed(("nodes", STG, "raw_code"), "-- a project var (month)\nselect '{{ var(\"region\") }}'"))
        assert g.code_identity(STG, {"other": 1}, ENV) == g.code_identity(STG, {}, ENV)
        assert g.code_identity(STG, {"region": "south"}, ENV) != g.code_identity(STG, {}, ENV)

    def test_an_env_var_named_by_an_expression_leaves_the_code_identity_unknown(self):
        assert graph(changed(("nodes", STG, "raw_code"), "{{ env_var(name) }}")).code_identity(STG, {}, ENV) is None


class TestSourceMapping:
    LOAD = TaskIdentity("load_orders", "ingest")

    def test_the_table_meta_names_the_loading_task_in_the_default_project_unless_it_names_one(self):
        g = graph(changed(("sources", ORDERS, "meta"), {"leastaction": {"task": "load_orders"}}))
        assert g.source_mapping(ORDERS, default_project="airflow").task == TaskIdentity("load_orders", "airflow")
        g = graph(changed(("sources", ORDERS, "config"), {"meta": {"leastaction": {"task": "l", "project": "p"}}}))
        assert g.source_mapping(ORDERS).task == TaskIdentity("l", "p")

    def test_the_operator_argument_wins_over_meta_and_the_table_over_its_source(self):
        def edit(manifest):
            manifest["sources"][ORDERS]["meta"] = {"leastaction": {"task": "table_level", "project": "p"}}
            manifest["sources"][ORDERS]["source_meta"] = {"leastaction": {"task": "source_level", "project": "p"}}

        g = graph(edit)
        assert g.source_mapping(ORDERS).task.name == "table_level"
        assert g.source_mapping(ORDERS, {"raw.orders": self.LOAD}).task == self.LOAD
        assert g.source_mapping(ORDERS, {ORDERS: self.LOAD}).origin == "argument"

    def test_without_a_mapping_freshness_where_configured_else_nothing(self):
        g = graph(changed(("sources", ORDERS), source(ORDERS, "orders", freshness=True)))
        assert g.source_mapping(ORDERS).freshness and g.source_mapping(ORDERS).task is None
        unmapped = graph().source_mapping(ORDERS)
        assert (unmapped.task, unmapped.freshness) == (None, False) and "no catalog mapping" in unmapped.origin


def test_catalog_names_are_model_names_in_the_root_project_and_package_qualified_elsewhere():
    g = graph()
    assert (g.catalog_name(DIM), g.catalog_name("model.utils.calendar")) == ("dim", "utils.calendar")
