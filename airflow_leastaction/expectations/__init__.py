"""Expected times: when will a catalog task's slot be done, and which parent decides it.

- :mod:`~airflow_leastaction.expectations.estimate`: the rule, pure logic, no Airflow import.
- :mod:`~airflow_leastaction.expectations.wording`: an expectation in one line, and as JSON.
- :mod:`~airflow_leastaction.expectations.reads`: builds the graph's nodes from the catalog, one read per kind.
- :mod:`~airflow_leastaction.expectations.history`: the tasks' recent runs, one windowed read, kept per change.

The package root re-exports only the pure rule, so importing it pulls in no database nor Airflow.
"""

from airflow_leastaction.expectations.estimate import MIN_RUNS, WINDOW, Expectation, Node, expect

__all__ = ["MIN_RUNS", "WINDOW", "Expectation", "Node", "expect"]
