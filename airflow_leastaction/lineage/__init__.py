"""OpenLineage, when ``apache-airflow-providers-openlineage`` is installed: a gated task's run events
name what it consumed (:func:`~airflow_leastaction.lineage.facets.consumption_facets`, set as the
provider's ``[openlineage] custom_run_facets``), and each dbt queue batch is a run event naming the models
it built and reused. The facets' JSON schema ships with the package (``lineage/schemas``).

Without the provider nothing of it is imported: this module only asks whether the provider is installed.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from importlib import resources

#: The facets' JSON schema, in the package.
SCHEMA_FILE = "LeastActionRunFacets.json"


@cache
def openlineage_installed() -> bool:
    """Whether Airflow's OpenLineage provider is installed (found without importing it)."""
    try:
        return importlib.util.find_spec("airflow.providers.openlineage") is not None
    except ModuleNotFoundError:
        return False


def schema_text() -> str:
    """The facets' JSON schema, as shipped in the package."""
    return resources.files(__name__).joinpath("schemas", SCHEMA_FILE).read_text(encoding="utf-8")
