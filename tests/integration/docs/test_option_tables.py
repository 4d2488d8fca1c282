"""The guides' option tables list every argument of the operators they describe, read from the signatures
(an argument added later must be documented too)."""

from __future__ import annotations

import inspect
import re

import pytest

from airflow_leastaction.operators.dbt_queue import DbtDrainOperator, DbtEnqueueOperator
from airflow_leastaction.sensors.parent_interval import ParentIntervalSensor
from tests.helpers.paths import ROOT


def arguments(cls) -> set[str]:
    """The keyword arguments ``cls`` takes itself (its own and its base classes' up to Airflow's)."""
    names = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("airflow_leastaction"):
            break
        params = inspect.signature(klass.__init__).parameters.values()
        names |= {p.name for p in params if p.name != "self" and p.kind is not p.VAR_KEYWORD}
    return names


def table_arguments(page: str, heading: str) -> set[str]:
    """The first column of the table under ``heading`` in ``docs/<page>``."""
    text = (ROOT / "docs" / page).read_text()
    section = text.split(f"\n{heading}\n", 1)[1]
    table = section.split("\n#", 1)[0]
    # A row may name several arguments: `a`, `b`, `c`.
    first_cells = re.findall(r"^\| ([^|]+)\|", table, re.MULTILINE)
    return {name for cell in first_cells for name in re.findall(r"`(\w+)`", cell)}


@pytest.mark.parametrize(
    ("cls", "page", "heading"),
    [
        (ParentIntervalSensor, "interval-dependencies.md", "## Options"),
        (DbtEnqueueOperator, "dbt-queue.md", "### DbtEnqueueOperator"),
        (DbtDrainOperator, "dbt-queue.md", "### DbtDrainOperator"),
    ],
)
def test_the_options_table_lists_every_argument(cls, page, heading):
    assert arguments(cls) - table_arguments(page, heading) == set()
