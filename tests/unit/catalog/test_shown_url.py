"""A catalog URL shown anywhere (a log line, a task name, the command line) never shows its secrets."""

from __future__ import annotations

import pytest

from airflow_leastaction.catalog.engine import shown_url

SECRET = "s3cret-Pa55"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg2://la:{SECRET}@db.internal:5432/catalog",
        f"postgresql+psycopg2://la@db.internal/catalog?password={SECRET}",
        f"postgresql+psycopg2://db.internal/catalog?sslmode=require&PASSWORD={SECRET}&application_name=x",
        f"postgresql+psycopg2://la:{SECRET}@db.internal:not-a-port/catalog",
        f"not a url at all {SECRET}",
    ],
)
def test_a_shown_catalog_url_hides_its_password(url):
    shown = shown_url(url)
    assert SECRET not in shown
    assert shown  # something is shown: the place, or that it cannot be read


def test_a_shown_catalog_url_keeps_where_the_catalog_is():
    shown = shown_url(f"postgresql+psycopg2://la:{SECRET}@db.internal:5432/catalog?sslmode=require")
    assert shown == "postgresql+psycopg2://la:***@db.internal:5432/catalog?sslmode=require"
    assert shown_url("sqlite:////var/lib/airflow/catalog.db") == "sqlite:////var/lib/airflow/catalog.db"
