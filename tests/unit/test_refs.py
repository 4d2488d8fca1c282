"""An asset parent is refused unless the catalog can store its name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.refs import airflow_asset


@settings(max_examples=200)
@given(name=st.text(max_size=300) | st.text(alphabet="ab\x00 ", min_size=240, max_size=250))
def test_an_asset_parent_is_its_name_under_asset_or_refused_naming_the_asset(name):
    """The catalog keeps the asset's events under ``asset:<name>`` in a column of 250 characters; PostgreSQL
    stores no NUL character."""
    storable = bool(name.strip()) and "\x00" not in name and len("asset:" + name) <= 250
    try:
        identity = airflow_asset(name, project="p")
    except ConfigurationError as exc:
        assert not storable and str(exc).startswith("airflow_asset("), exc
        assert {"'", '"'} & set(name) or repr(name[:8])[1:-1] in str(exc), exc  # the name, as Python quotes it
        return
    assert storable and (identity.name, identity.project) == ("asset:" + name, "p")


@pytest.mark.parametrize("asset", [None, 5, "", "   ", "orders\x00", "x" * 245])
def test_an_asset_parent_that_is_no_storable_asset_name_is_refused(asset):
    with pytest.raises(ConfigurationError, match=r"^airflow_asset\("):
        airflow_asset(asset)
