"""Native run conditions: the ones an Airflow trigger rule expresses run with no gate task at all.

::

    run_condition(report, success(load_orders), success(load_refunds), when="ANY", native=True)

The gated task is wired to its same-run dependencies and carries the trigger rule that means the same
thing, so the scheduler starts it exactly as it starts any task (``one_success`` here): no gate task, no
trigger, no extra scheduler loop. The audit trail stays. When the task starts, a pre-execute hook
judges the condition from the run's task states, the same judging a gate does, and records the
decisions under the task's own attempt; its success consumes them.

Only three shapes are native, each with one trigger rule:

======================  ==================  =====================================================
Condition               Trigger rule        What differs from a gate
======================  ==================  =====================================================
ALL of SUCCESS          ``all_success``     an upstream that failed makes the task
                                            ``upstream_failed`` (a gate: ``skipped``), at once
ANY of SUCCESS          ``one_success``     no upstream succeeded and one failed: ``upstream_failed``
ALL of ALWAYS           ``all_done``        none
======================  ==================  =====================================================

Everything else (FAILURE, HAS_DATA, N, ANY of ALWAYS, dependencies in other DAGs, inactive tasks, a DAG
run condition) needs what a trigger rule cannot say, and is refused at parse time, naming the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.engine import ALL, ANY, DependencyType, GateOutcome, Verdict
from airflow_leastaction.run_conditions.model import GateSpec

if TYPE_CHECKING:
    from airflow_leastaction.gating.admission import GateMode

log = logging.getLogger(__name__)

#: (ALL or ANY, the one dependency type) -> the Airflow trigger rule that means the same.
TRIGGER_RULES = {
    (ALL.kind, DependencyType.SUCCESS): "all_success",
    (ANY.kind, DependencyType.SUCCESS): "one_success",
    (ALL.kind, DependencyType.ALWAYS): "all_done",
}

#: The attribute of a natively gated operator that holds its run condition.
SPEC_ATTRIBUTE = "leastaction_condition"


def native_trigger_rule(dag_id: str, spec: GateSpec, *, run_gate: bool = False) -> str:
    """The trigger rule of a native condition; :class:`ConfigurationError` naming why one cannot be."""

    def refuse(why: str) -> ConfigurationError:
        return ConfigurationError(
            f"DAG {dag_id!r} task {spec.task_id!r}: native=True needs a condition an Airflow trigger rule "
            f"expresses (ALL of SUCCESS, ANY of SUCCESS, ALL of ALWAYS on tasks of this DAG): {why}; "
            "drop native=True to use a gate"
        )

    if not spec.active:
        raise refuse("an inactive task has no trigger rule")
    if run_gate:
        raise refuse("the DAG has a run condition (dag_run_condition), which a trigger rule cannot wait for")
    elsewhere = [d.label for d in spec.elsewhere]
    if elsewhere:
        raise refuse(f"{', '.join(elsewhere)} {'is' if len(elsewhere) == 1 else 'are'} not in this DAG")
    if not spec.dependencies:
        raise refuse("it has no dependencies")
    types = sorted({d.type.value for d in spec.dependencies})
    if len(types) != 1:
        raise refuse(f"its dependencies mix the types {', '.join(types)}")
    rule = TRIGGER_RULES.get((spec.condition.kind, spec.dependencies[0].type))
    if rule is None:
        raise refuse(f"{spec.condition} of {types[0]} has none")
    return rule


def native_spec(task) -> GateSpec | None:
    """The native run condition ``task`` carries, if any."""
    spec = getattr(task, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, GateSpec) else None


class NativeAdmission:
    """The pre-execute hook of a natively gated task: judge, record the decisions, skip if unmet.

    The trigger rule has already started the task, so in a run that follows its rules the condition is
    met and the decisions are SATISFIED (ANY: the dependencies still running are recorded UNSATISFIED,
    as a gate does when it admits early). A task started against its rule (a clear that ignores
    dependencies, a state set by hand) is judged all the same: unmet, it is skipped with the UNSATISFIED
    decisions, and one that cannot be decided yet fails, saying so. ``[leastaction] gates = warn | off``
    admit it with BYPASSED decisions. While the catalog cannot be read the hook waits for it (relaxed
    gates: admits unrecorded), as a gate does.
    """

    def __init__(self, spec: GateSpec, catalog_conn_id: str | None, poll_interval: float, previous: Callable | None):
        self.spec = spec
        self.catalog_conn_id = catalog_conn_id
        self.poll_interval = poll_interval
        self.previous = previous

    def __call__(self, context) -> None:
        self._admit(context)  # raises unless admitted
        if self.previous is not None:  # the task's own pre-execute hook, if it had one
            self.previous(context)

    def _admit(self, context) -> None:
        from airflow_leastaction.gating.admission import gate_mode
        from airflow_leastaction.version_compat import AirflowFailException, AirflowSkipException

        mode, said = gate_mode(), None
        while True:
            try:
                outcome, admission = self._settle(context, mode)
                if outcome is None:
                    log.info("%s resumes: admitted when this attempt started", self.spec.task_id)
                    return
                break
            except Exception as exc:
                from airflow_leastaction.catalog.engine import is_outage

                if not is_outage(exc):
                    raise
                if mode.relaxed:
                    log.warning(
                        "%s admitted without recording ([leastaction] gates = %s): %s", self.spec.task_id, mode, exc
                    )
                    return
                if str(exc) != said:
                    said = str(exc)
                    log.warning("%s cannot record its decisions, waiting for the catalog: %s", self.spec.task_id, exc)
                time.sleep(self.poll_interval)
        for j in outcome.judgements:
            log.info("  %s %s", "+" if j.satisfied else "-", j.reason)
        if admission is not None and admission.admitted:
            note = f" (gate bypassed: [leastaction] gates = {mode})" if admission.bypassed else ""
            log.info("%s admitted%s: %s", self.spec.task_id, note, outcome.summary())
            return
        if outcome.verdict is Verdict.SKIP:
            raise AirflowSkipException(f"{self.spec.task_id} can never start in this run: {outcome.summary()}")
        raise AirflowFailException(
            f"{self.spec.task_id} was started before its run condition could be decided (a start outside its "
            f"trigger rule?): {outcome.summary()}"
        )

    def _settle(self, context, mode: GateMode) -> tuple[GateOutcome | None, Any]:
        from airflow_leastaction.airflow_seam.context import attempt_key
        from airflow_leastaction.airflow_seam.run_tasks import run_structure, task_states
        from airflow_leastaction.gating.admission import settle
        from airflow_leastaction.gating.engine import decide
        from airflow_leastaction.hooks.catalog import catalog_store
        from airflow_leastaction.intervals.run_slot import noted
        from airflow_leastaction.operators.run_condition import _judged_at
        from airflow_leastaction.refs import airflow_task
        from airflow_leastaction.run_conditions.judging import RunView, judge_in_run

        ti = context["ti"]
        dag_id, run_id = ti.dag_id, ti.run_id
        key = attempt_key(context, dag_id, self.spec.task_id)
        store = catalog_store(self.catalog_conn_id)
        if store.audit.decisions_for(key):
            # Airflow runs pre-execute again each time the attempt resumes (from a deferral, or a reschedule
            # of a sensor): the attempt was admitted when it started, and its decisions stand.
            return None, None
        judged_at = _judged_at(context)
        states = task_states(dag_id, run_id)
        upstream, waiting = run_structure(context["dag"])
        ids = {d.upstream: airflow_task(dag_id, d.upstream) for d in self.spec.in_run}
        found = store.runs.slot_records([(i, judged_at.instant) for i in ids.values()])
        records = {t: found[(i, judged_at.instant)] for t, i in ids.items() if (i, judged_at.instant) in found}
        # The task itself is running: it waits on the others like a gate, so it does not keep the run unsettled.
        view = RunView(run_id, states, upstream, frozenset(waiting) | {self.spec.task_id}, records)
        outcome = decide(self.spec.condition, judge_in_run(self.spec, view))
        outcome = noted(outcome, judged_at)
        if outcome.verdict is Verdict.WAIT and not mode.relaxed:
            return outcome, None
        return outcome, settle(store, key, outcome, downstream_slot=judged_at.instant, mode=mode)


#: What ``run_condition(..., native=True)`` takes besides the condition: a native task has no gate to configure.
NATIVE_OPTIONS = frozenset({"catalog_conn_id", "poll_interval"})


def make_native(dag, operator, spec: GateSpec, *, run_gate: bool, options: dict[str, Any]) -> str:
    """Wire ``operator`` to its same-run dependencies under the condition's trigger rule (returned)."""
    from airflow.sdk import TriggerRule

    from airflow_leastaction.airflow_seam.context import resolve_poll_interval

    unknown = sorted(set(options) - NATIVE_OPTIONS)
    if unknown:
        raise ConfigurationError(
            f"DAG {dag.dag_id!r} task {spec.task_id!r}: native=True has no gate to pass {', '.join(unknown)} to; "
            f"it takes {' and '.join(sorted(NATIVE_OPTIONS))} only"
        )
    rule = native_trigger_rule(dag.dag_id, spec, run_gate=run_gate)
    operator.trigger_rule = TriggerRule(rule)
    for dep in spec.in_run:
        dag.get_task(dep.upstream) >> operator
    setattr(operator, SPEC_ATTRIBUTE, spec)
    from airflow_leastaction.version_compat import chain_pre_execute

    chain_pre_execute(
        operator,
        partial(
            NativeAdmission, spec, options.get("catalog_conn_id"), resolve_poll_interval(options.get("poll_interval"))
        ),
    )
    return rule
