"""Admission: what a gate does with its outcome. Shared by every gate task of the provider.

ADMIT records one decision per judged dependency for this attempt and lets the task run. WAIT writes
nothing (being blocked is the absence of a transition), unless the deployment relaxes its gates
(``[leastaction] gates = warn | off``): then the task is admitted, every unsatisfied dependency is
recorded BYPASSED with its reason and every satisfied one SATISFIED (consumed like any admission).
SKIP records the UNSATISFIED decisions the skip rests on.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gate import GateOutcome, Verdict

log = logging.getLogger(__name__)

GATE_MODES = ("enforce", "warn", "off")


def gate_mode() -> str:
    """The deployment's ``[leastaction] gates`` setting: enforce (default), warn or off."""
    mode = setting("gates", "enforce").strip().lower() or "enforce"
    if mode not in GATE_MODES:
        raise ConfigurationError(f"[leastaction] gates = {mode!r}; expected one of {', '.join(GATE_MODES)}")
    return mode


@dataclass(frozen=True)
class Admission:
    admitted: bool
    bypassed: bool
    decision_ids: tuple[int, ...] = ()


def settle(
    store: CatalogStore,
    attempt: AttemptKey,
    outcome: GateOutcome,
    *,
    downstream_slot: dt.datetime | None,
    mode: str | None = None,
) -> Admission:
    """Record what ``outcome`` means for ``attempt`` and say whether the task may run now."""
    mode = mode or gate_mode()
    if outcome.verdict is Verdict.ADMIT:
        ids = store.record_decisions(attempt, outcome.judgements, downstream_slot=downstream_slot)
        return Admission(True, False, tuple(ids))
    if mode in ("warn", "off"):
        if mode == "warn":
            log.warning("gate bypassed ([leastaction] gates = warn): %s", outcome.summary())
        ids = store.record_decisions(
            attempt, outcome.judgements, downstream_slot=downstream_slot, bypass_reason=f"gates={mode}"
        )
        return Admission(True, True, tuple(ids))
    if outcome.verdict is Verdict.SKIP:
        ids = store.record_decisions(attempt, outcome.judgements, downstream_slot=downstream_slot)
        return Admission(False, False, tuple(ids))
    return Admission(False, False)
