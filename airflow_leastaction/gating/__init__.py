"""What every gate of the provider shares: judgements combined under a run condition, the fallback at a
deadline, and what a gate records about its outcome.

- :mod:`~airflow_leastaction.gating.engine`: dependency types, judgements, ALL/ANY/N, HAS_DATA, ``decide``.
- :mod:`~airflow_leastaction.gating.fallback`: ``Fallback`` and the one rule of when its deadline is.
- :mod:`~airflow_leastaction.gating.admission`: ``[leastaction] gates`` and the decisions a gate records.

The engine and the fallback are pure; admission writes through the catalog store.
"""
