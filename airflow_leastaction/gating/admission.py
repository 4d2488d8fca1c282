"""Admission: what a gate does with its outcome. Shared by every gate task of the provider.

ADMIT records one decision per judged dependency for this attempt and lets the task run (admitted
degraded at a fallback's deadline, the unsatisfied ones are recorded MISSING). WAIT writes
nothing (being blocked is the absence of a transition), unless the deployment relaxes its gates
(``[leastaction] gates = warn | off``): then the task is admitted, every unsatisfied dependency is
recorded BYPASSED with its reason and every satisfied one SATISFIED (consumed like any admission).
SKIP records the UNSATISFIED decisions the skip rests on.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, replace
from enum import StrEnum

from airflow_leastaction.catalog.audit import RerunOnArrival
from airflow_leastaction.catalog.store import AttemptKey, CatalogStore
from airflow_leastaction.config import setting
from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.engine import (
    DecisionResult,
    DependencyType,
    GateOutcome,
    Judgement,
    RunCondition,
    Verdict,
    decide,
)
from airflow_leastaction.refs import deployment_project

log = logging.getLogger(__name__)


class GateMode(StrEnum):
    """The deployment's ``[leastaction] gates``: what a gate whose dependencies are not met does. The values
    are the setting's text, and the text a ``relaxed`` trigger event carries to the worker."""

    #: The gate waits (the default).
    ENFORCE = "enforce"
    #: The gate admits its task, records BYPASSED decisions and logs a warning.
    WARN = "warn"
    #: The gate admits its task and records BYPASSED decisions.
    OFF = "off"

    @property
    def relaxed(self) -> bool:
        """Whether a gate that would wait admits its task instead (warn or off)."""
        return self is not GateMode.ENFORCE

    @classmethod
    def parse(cls, text: str) -> GateMode:
        """The mode ``text`` names, in any case and with blanks around it; empty text is the default."""
        mode = text.strip().lower() or cls.ENFORCE.value
        try:
            return cls(mode)
        except ValueError:
            expected = ", ".join(m.value for m in cls)
            raise ConfigurationError(f"[leastaction] gates = {mode!r}; expected one of {expected}") from None


def gate_mode(carried: str | None = None) -> GateMode:
    """The gate mode: ``carried`` (the text a trigger's ``relaxed`` event brought from the triggerer) when
    given, else the deployment's ``[leastaction] gates`` setting: enforce (default), warn or off."""
    return GateMode.parse(carried or setting("gates", GateMode.ENFORCE.value))


@dataclass(frozen=True)
class Admission:
    admitted: bool
    bypassed: bool
    decision_ids: tuple[int, ...] = ()
    #: Admitted at a fallback's deadline without every dependency (recorded MISSING).
    degraded: bool = False


def settle(
    store: CatalogStore,
    attempt: AttemptKey,
    outcome: GateOutcome,
    *,
    downstream_slot: dt.datetime | None,
    mode: GateMode | str | None = None,
    once: bool = False,
    rerun: RerunOnArrival | None = None,
) -> Admission:
    """Record what ``outcome`` means for ``attempt`` and say whether the task may run now.

    ``once``: an attempt that already recorded its decisions keeps them (a trigger run again after its
    triggerer restarted, between recording and ending the task): the admission is the recorded one.
    ``rerun``: admitted degraded, the run re-runs once what it ran without arrives (``on_late_arrival``).
    """
    mode = gate_mode(mode)
    if once and (recorded := store.audit.decisions_for(attempt)):
        return recorded_admission(outcome.condition, recorded)[1]
    if outcome.verdict is Verdict.ADMIT:
        ids = store.audit.record_decisions(
            attempt,
            outcome.judgements,
            downstream_slot=downstream_slot,
            degraded=outcome.degraded,
            rerun=rerun,
            project=deployment_project(),
        )
        return Admission(True, False, tuple(ids), outcome.degraded)
    if mode.relaxed:
        if mode is GateMode.WARN:
            log.warning("gate bypassed ([leastaction] gates = warn): %s", outcome.summary())
        ids = store.audit.record_decisions(
            attempt, outcome.judgements, downstream_slot=downstream_slot, bypass_reason=f"gates={mode}"
        )
        return Admission(True, True, tuple(ids))
    if outcome.verdict is Verdict.SKIP:
        ids = store.audit.record_decisions(attempt, outcome.judgements, downstream_slot=downstream_slot)
        return Admission(False, False, tuple(ids))
    return Admission(False, False)


def recorded_admission(condition: RunCondition, rows) -> tuple[GateOutcome, Admission]:
    """What an attempt's recorded decisions (rows of ``la_gate_decision``) decided under ``condition``: a
    MISSING decision was a degraded admission, a BYPASSED one a relaxed admission."""
    results = {r["result"] for r in rows}
    judgements = [
        Judgement(
            r["dependency"],
            r["result"] != DecisionResult.UNSATISFIED.value,
            r["reason"],
            DependencyType(r["dependency_type"]),
            final=True,
        )
        for r in rows
    ]
    degraded = DecisionResult.MISSING.value in results
    bypassed = DecisionResult.BYPASSED.value in results
    outcome = decide(condition, judgements)
    admitted = bypassed or outcome.verdict is Verdict.ADMIT
    return replace(outcome, degraded=degraded), Admission(admitted, bypassed, tuple(r["id"] for r in rows), degraded)
