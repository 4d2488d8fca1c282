"""Table of the run-condition gate's ``evaluate``: every dependency judged, combined under ALL / ANY / N.

Each case is a sentence of the run-condition rules (docs/run-conditions.md and the run-conditions spec)
and asserts the verdict (ADMIT, WAIT or SKIP), the reason recorded for each dependency, and whether the
check of dependencies on other DAGs has started. The inputs are the pure dataclasses the worker and the
trigger build from what they read: no catalog, no Airflow.
"""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_leastaction.exceptions import InvalidCountError
from airflow_leastaction.gating.engine import DependencyType, RunCondition, Verdict, check_condition
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.run_conditions.judging import RunView, evaluate
from airflow_leastaction.run_conditions.latest_run import LatestRuns, RunRecord
from airflow_leastaction.run_conditions.model import Dependency, GateSpec
from airflow_leastaction.run_conditions.wait_rule import WaitClock, WaitPolicy

UTC = dt.UTC
SUCCESS, FAILURE, ALWAYS, HAS_DATA = (
    DependencyType.SUCCESS,
    DependencyType.FAILURE,
    DependencyType.ALWAYS,
    DependencyType.HAS_DATA,
)
ADMIT, WAIT, SKIP = Verdict.ADMIT, Verdict.WAIT, Verdict.SKIP
NOW = dt.datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
SLOT = dt.datetime(2026, 11, 28, tzinfo=UTC)
YESTERDAY = SLOT - dt.timedelta(days=1)
RUN_ID = "scheduled__2026-11-28T00:00:00+00:00"
GATE, TASK, RUN_GATE = "report__gate", "report", "leastaction_dag_gate"
RATES = TaskIdentity("fx_rates.load", "airflow")  # a task of another DAG, judged from the catalog
RATES_AT = "airflow/fx_rates.load"


def rows(count: int | None) -> dict:
    """The catalog's success record of the same-run upstream ``load``, with its rows written."""
    return {"load": RunRecord(1, 10, SLOT, RUN_ID, "success", 1, count, NOW, NOW)}


def run_of(slot: dt.datetime, state: str, *, revision: int = 1, written: int | None = None) -> RunRecord:
    """A run of ``fx_rates.load`` (started 30 minutes ago)."""
    return RunRecord(
        5,
        20,
        slot,
        f"run_{slot:%d}",
        state,
        revision,
        written,
        NOW - dt.timedelta(minutes=30),
        None if state == "running" else NOW,
    )


def rates(latest: RunRecord, finished: RunRecord | None = None, average: dt.timedelta | None = None) -> dict:
    """What the catalog says about ``fx_rates.load``: its latest run and latest finished run."""
    return {RATES: LatestRuns(20, latest, finished or latest, average)}


def case(
    sentence: str,
    dependencies: list,
    states: dict,
    expected: tuple,
    *,
    when: str = "ALL",
    count: int | None = None,
    records: dict | None = None,
    latest: dict | None = None,
    consumed: dict | None = None,
    max_wait: dt.timedelta | None = None,
    goes_on: bool = False,
    run_gate: str | None = None,
    xfail: str | None = None,
):
    """One row. ``dependencies``: (upstream, type) pairs or Dependency objects; ``states``: the Airflow
    states of the same-run upstreams; ``goes_on``: another task of the run is still running (the run is
    not settled); ``expected``: (verdict, every judgement's reason in order, the wait clock started)."""
    deps = tuple(d if isinstance(d, Dependency) else Dependency(*d) for d in dependencies)
    spec = GateSpec(TASK, deps, RunCondition(when, count), run_gate=run_gate)
    upstream = {GATE: [d.upstream for d in deps if d.in_run], TASK: [GATE]}
    all_states = {**states, GATE: "deferred", TASK: None, **({"other": "running"} if goes_on else {})}
    run = RunView(RUN_ID, all_states, upstream, frozenset({GATE}), records or {})
    policy = WaitPolicy() if max_wait is None else WaitPolicy(max_wait=max_wait)
    inputs = (spec, run, latest or {}, consumed or {}, policy)
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(inputs, expected, id=sentence, marks=marks)


CANNOT = "a SUCCESS dependency can never be met in this run"
CASES = [
    # -- each dependency type on a same-run upstream ---------------------------------------------------------
    case(
        "SUCCESS is satisfied by an upstream that succeeded",
        [("load", SUCCESS)],
        {"load": "success"},
        (ADMIT, ["load (SUCCESS): upstream succeeded"], True),
    ),
    case(
        "an upstream that has not run yet satisfies no dependency",
        [("load", ALWAYS)],
        {"load": None},
        (WAIT, ["load (ALWAYS): upstream is not started; waiting for it to finish"], False),
    ),
    case(
        "an upstream still in progress satisfies no dependency",
        [("load", ALWAYS)],
        {"load": "running"},
        (WAIT, ["load (ALWAYS): upstream is running; waiting for it to finish"], False),
    ),
    case(
        "FAILURE is satisfied by an upstream that failed",
        [("load", FAILURE)],
        {"load": "failed"},
        (ADMIT, ["load (FAILURE): upstream failed"], True),
        goes_on=True,
    ),
    case(
        "a task in up_for_retry satisfies nothing, not even FAILURE",
        [("load", FAILURE)],
        {"load": "up_for_retry"},
        (WAIT, ["load (FAILURE): upstream is up_for_retry; waiting for it to finish"], False),
    ),
    case(
        "a FAILURE dependency on a task that succeeded can never be met",
        [("load", FAILURE)],
        {"load": "success"},
        (SKIP, ["load (FAILURE): upstream succeeded; a FAILURE dependency can never be met in this run"], True),
    ),
    case(
        "a FAILURE dependency on a skipped task can never be met",
        [("load", FAILURE)],
        {"load": "skipped"},
        (SKIP, ["load (FAILURE): upstream is skipped; a FAILURE dependency can never be met in this run"], True),
    ),
    case(
        "ALWAYS is satisfied by an upstream that succeeded",
        [("load", ALWAYS)],
        {"load": "success"},
        (ADMIT, ["load (ALWAYS): upstream finished (success)"], True),
    ),
    case(
        "a failed task satisfies ALWAYS at once while the run goes on",
        [("load", ALWAYS)],
        {"load": "failed"},
        (ADMIT, ["load (ALWAYS): upstream finished (failed)"], True),
        goes_on=True,
    ),
    case(
        "HAS_DATA is satisfied by a success that wrote at least one row",
        [("load", HAS_DATA)],
        {"load": "success"},
        (ADMIT, ["load (HAS_DATA): upstream succeeded and wrote 5 rows"], True),
        records=rows(5),
    ),
    case(
        "a success that wrote 0 rows never satisfies HAS_DATA",
        [("load", HAS_DATA)],
        {"load": "success"},
        (SKIP, ["load (HAS_DATA): upstream succeeded but wrote 0 rows; HAS_DATA needs at least one"], True),
        records=rows(0),
    ),
    case(
        "a task that reports nothing has unknown rows written and never satisfies HAS_DATA",
        [("load", HAS_DATA)],
        {"load": "success"},
        (SKIP, ["load (HAS_DATA): upstream succeeded but reported no rows written; HAS_DATA needs at least one"], True),
        records=rows(None),
    ),
    case(
        "HAS_DATA waits for the rows written of a success to reach the catalog",
        [("load", HAS_DATA)],
        {"load": "success"},
        (WAIT, ["load (HAS_DATA): upstream succeeded; waiting for its rows written to reach the catalog"], False),
        goes_on=True,
    ),
    case(
        "a catalog record of another run of the upstream tells nothing about this run's rows",
        [("load", HAS_DATA)],
        {"load": "success"},
        (WAIT, ["load (HAS_DATA): upstream succeeded; waiting for its rows written to reach the catalog"], False),
        goes_on=True,
        records={"load": RunRecord(1, 10, YESTERDAY, "scheduled__earlier", "success", 1, 5, NOW, NOW)},
    ),
    case(
        "once nothing else can start a success whose rows never reached the catalog does not satisfy HAS_DATA",
        [("load", HAS_DATA)],
        {"load": "success"},
        (
            SKIP,
            [
                "load (HAS_DATA): upstream succeeded but its rows written never reached the catalog; HAS_DATA "
                "needs at least one"
            ],
            True,
        ),
    ),
    # -- a failed upstream is not final while the run goes on ----------------------------------------------
    case(
        "a failed upstream is not final while the run goes on",
        [("load", SUCCESS)],
        {"load": "failed"},
        (
            WAIT,
            ["load (SUCCESS): upstream failed; waiting while the run goes on (a retry or clear may still succeed)"],
            False,
        ),
        goes_on=True,
    ),
    case(
        "once nothing else can start the tasks waiting on the failure are skipped",
        [("load", SUCCESS)],
        {"load": "failed"},
        (SKIP, ["load (SUCCESS): upstream failed and nothing else can start in this run"], True),
    ),
    case(
        "a HAS_DATA dependency on a failed upstream waits while the run goes on",
        [("load", HAS_DATA)],
        {"load": "failed"},
        (
            WAIT,
            ["load (HAS_DATA): upstream failed; waiting while the run goes on (a retry or clear may still succeed)"],
            False,
        ),
        goes_on=True,
    ),
    # -- skip cascade --------------------------------------------------------------------------------------
    case(
        "skipping cascades: a task that waits for the skipped task's SUCCESS is skipped too",
        [("load", SUCCESS)],
        {"load": "skipped"},
        (SKIP, [f"load (SUCCESS): upstream is skipped; {CANNOT}"], True),
    ),
    case(
        "an ALWAYS dependency on a skipped task is satisfied",
        [("load", ALWAYS)],
        {"load": "skipped"},
        (ADMIT, ["load (ALWAYS): upstream finished (skipped)"], True),
    ),
    case(
        "upstream_failed counts as did not run: only ALWAYS is satisfied by it",
        [("load", SUCCESS), ("audit", ALWAYS)],
        {"load": "upstream_failed", "audit": "upstream_failed"},
        (
            SKIP,
            [
                f"load (SUCCESS): upstream is upstream_failed; {CANNOT}",
                "audit (ALWAYS): upstream finished (upstream_failed)",
            ],
            True,
        ),
    ),
    # -- ALL / ANY / N -------------------------------------------------------------------------------------
    case("a gate with no dependencies admits at once", [], {}, (ADMIT, [], True)),
    case(
        "ALL waits while one dependency is not satisfied yet",
        [("a", SUCCESS), ("b", SUCCESS)],
        {"a": "success", "b": "running"},
        (
            WAIT,
            ["a (SUCCESS): upstream succeeded", "b (SUCCESS): upstream is running; waiting for it to finish"],
            False,
        ),
    ),
    case(
        "ALL is skipped once one dependency can never be satisfied",
        [("a", SUCCESS), ("b", SUCCESS)],
        {"a": "success", "b": "skipped"},
        (SKIP, ["a (SUCCESS): upstream succeeded", f"b (SUCCESS): upstream is skipped; {CANNOT}"], True),
    ),
    case(
        "ANY starts as soon as one dependency is satisfied",
        [("a", SUCCESS), ("b", SUCCESS)],
        {"a": "success", "b": "running"},
        (
            ADMIT,
            ["a (SUCCESS): upstream succeeded", "b (SUCCESS): upstream is running; waiting for it to finish"],
            False,
        ),
        when="ANY",
    ),
    case(
        "ANY waits while a dependency may still be satisfied",
        [("a", SUCCESS), ("b", SUCCESS)],
        {"a": "skipped", "b": "running"},
        (
            WAIT,
            [
                f"a (SUCCESS): upstream is skipped; {CANNOT}",
                "b (SUCCESS): upstream is running; waiting for it to finish",
            ],
            False,
        ),
        when="ANY",
    ),
    case(
        "ANY is skipped when no dependency can be satisfied",
        [("a", SUCCESS), ("b", FAILURE)],
        {"a": "skipped", "b": "success"},
        (
            SKIP,
            [
                f"a (SUCCESS): upstream is skipped; {CANNOT}",
                "b (FAILURE): upstream succeeded; a FAILURE dependency can never be met in this run",
            ],
            True,
        ),
        when="ANY",
    ),
    case(
        "N starts when at least count dependencies are satisfied",
        [("a", SUCCESS), ("b", HAS_DATA), ("c", SUCCESS)],
        {"a": "success", "b": "success", "c": "running"},
        (
            ADMIT,
            [
                "a (SUCCESS): upstream succeeded",
                "b (HAS_DATA): upstream succeeded and wrote 3 rows",
                "c (SUCCESS): upstream is running; waiting for it to finish",
            ],
            False,
        ),
        when="N",
        count=2,
        records={"b": RunRecord(2, 11, SLOT, RUN_ID, "success", 1, 3, NOW, NOW)},
    ),
    case(
        "N waits while enough dependencies may still be satisfied",
        [("a", SUCCESS), ("b", SUCCESS), ("c", SUCCESS)],
        {"a": "success", "b": "skipped", "c": "running"},
        (
            WAIT,
            [
                "a (SUCCESS): upstream succeeded",
                f"b (SUCCESS): upstream is skipped; {CANNOT}",
                "c (SUCCESS): upstream is running; waiting for it to finish",
            ],
            False,
        ),
        when="N",
        count=2,
    ),
    case(
        "N is skipped when too many dependencies can never be satisfied",
        [("a", SUCCESS), ("b", SUCCESS), ("c", SUCCESS)],
        {"a": "success", "b": "skipped", "c": "skipped"},
        (
            SKIP,
            [
                "a (SUCCESS): upstream succeeded",
                f"b (SUCCESS): upstream is skipped; {CANNOT}",
                f"c (SUCCESS): upstream is skipped; {CANNOT}",
            ],
            True,
        ),
        when="N",
        count=2,
    ),
    case(
        "N larger than the number of dependencies can never hold",
        [("a", SUCCESS), ("b", SUCCESS)],
        {"a": "success", "b": "success"},
        (SKIP, ["a (SUCCESS): upstream succeeded", "b (SUCCESS): upstream succeeded"], True),
        when="N",
        count=3,
    ),
    # -- dependencies on tasks in other DAGs --------------------------------------------------------------
    case(
        "the upstream's latest finished run must satisfy the dependency type",
        [(RATES, SUCCESS)],
        {},
        (
            ADMIT,
            [f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 1) is success"],
            True,
        ),
        latest=rates(run_of(SLOT, "success")),
    ),
    case(
        "succeeded yesterday and failed today: SUCCESS is not met",
        [(RATES, SUCCESS)],
        {},
        (
            SKIP,
            [f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 0) is failed"],
            True,
        ),
        latest=rates(run_of(SLOT, "failed", revision=0)),
    ),
    case(
        "FAILURE on another DAG's task is satisfied by its latest finished run failing",
        [(RATES, FAILURE)],
        {},
        (
            ADMIT,
            [f"{RATES_AT} (FAILURE): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 0) is failed"],
            True,
        ),
        latest=rates(run_of(SLOT, "failed", revision=0)),
    ),
    case(
        "HAS_DATA on another DAG's task needs its latest finished run to have written a row",
        [(RATES, HAS_DATA)],
        {},
        (
            SKIP,
            [
                f"{RATES_AT} (HAS_DATA): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 1) is "
                "success, but wrote 0 rows (HAS_DATA needs at least one)"
            ],
            True,
        ),
        latest=rates(run_of(SLOT, "success", written=0)),
    ),
    case(
        "a task in another DAG that never reported a run does not satisfy",
        [(RATES, ALWAYS)],
        {},
        (SKIP, [f"{RATES_AT} (ALWAYS): not in the catalog; it has never reported a run"], True),
    ),
    case(
        "while the upstream's latest run is in progress the check waits for it",
        [(RATES, SUCCESS)],
        {},
        (
            WAIT,
            [
                f"{RATES_AT} (SUCCESS): latest run (slot 2026-11-28T00:00:00+00:00) is running since "
                "2026-11-28T09:30:00+00:00; average run length 0:40:00; waiting for it"
            ],
            True,
        ),
        latest=rates(run_of(SLOT, "running"), run_of(YESTERDAY, "success"), dt.timedelta(minutes=40)),
    ),
    case(
        "once the wait budget is spent the latest finished run decides",
        [(RATES, SUCCESS)],
        {},
        (
            ADMIT,
            [f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-27T00:00:00+00:00, revision 1) is success"],
            True,
        ),
        latest=rates(run_of(SLOT, "running"), run_of(YESTERDAY, "success")),
        max_wait=dt.timedelta(0),
    ),
    case(
        "a run whose output this task already consumed does not satisfy it again",
        [(RATES, SUCCESS)],
        {},
        (
            SKIP,
            [
                f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 1) is "
                "success; already consumed (revision 1); waiting for a newer run"
            ],
            True,
        ),
        latest=rates(run_of(SLOT, "success")),
        consumed={RATES.key: (SLOT, 1)},
    ),
    case(
        "the same run is new when it published a higher revision and the dependency consumes repairs",
        [(RATES, SUCCESS)],
        {},
        (
            ADMIT,
            [f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 2) is success"],
            True,
        ),
        latest=rates(run_of(SLOT, "success", revision=2)),
        consumed={RATES.key: (SLOT, 1)},
    ),
    case(
        "with consume_repairs False only a new run counts",
        [Dependency(RATES, SUCCESS, consume_repairs=False)],
        {},
        (
            SKIP,
            [
                f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 2) is "
                "success; already consumed (revision 1); waiting for a newer run, repairs are not consumed"
            ],
            True,
        ),
        latest=rates(run_of(SLOT, "success", revision=2)),
        consumed={RATES.key: (SLOT, 1)},
    ),
    case(
        "an older run never becomes new by gaining a revision",
        [(RATES, SUCCESS)],
        {},
        (
            SKIP,
            [
                f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-27T00:00:00+00:00, revision 3) is "
                "success; already consumed (revision 1); waiting for a newer run"
            ],
            True,
        ),
        latest=rates(run_of(YESTERDAY, "success", revision=3)),
        consumed={RATES.key: (SLOT, 1)},
    ),
    case(
        "a task is not skipped for its dependencies on other DAGs while an upstream in its own run has not finished",
        [("load", SUCCESS), (RATES, SUCCESS)],
        {"load": "running"},
        (
            WAIT,
            [
                "load (SUCCESS): upstream is running; waiting for it to finish",
                f"{RATES_AT} (SUCCESS): not in the catalog; it has never reported a run",
            ],
            False,
        ),
    ),
    case(
        "a run elsewhere that finishes first satisfies an ANY before the same-run upstreams are done",
        [("load", SUCCESS), (RATES, SUCCESS)],
        {"load": "running"},
        (
            ADMIT,
            [
                "load (SUCCESS): upstream is running; waiting for it to finish",
                f"{RATES_AT} (SUCCESS): latest finished run (slot 2026-11-28T00:00:00+00:00, revision 1) is success",
            ],
            False,
        ),
        when="ANY",
        latest=rates(run_of(SLOT, "success")),
    ),
    # -- the DAG's run gate ------------------------------------------------------------------------------
    case(
        "nothing is judged before the DAG's run gate admitted the run",
        [("load", SUCCESS)],
        {"load": None, RUN_GATE: "deferred"},
        (WAIT, [f"{RUN_GATE}: the run's dependencies on other pipelines are not judged yet; waiting"], False),
        run_gate=RUN_GATE,
    ),
    case(
        "a run its run gate did not admit starts no task",
        [("load", SUCCESS)],
        {"load": None, RUN_GATE: "skipped"},
        (
            SKIP,
            [
                f"{RUN_GATE} is skipped: the run's dependencies on other pipelines are not met, so no task of "
                "this run starts"
            ],
            False,
        ),
        run_gate=RUN_GATE,
    ),
    case(
        "once the run gate admitted the run the task's own dependencies are judged",
        [("load", SUCCESS)],
        {"load": "success", RUN_GATE: "success"},
        (ADMIT, ["load (SUCCESS): upstream succeeded"], True),
        run_gate=RUN_GATE,
    ),
]


@pytest.mark.parametrize("inputs, expected", CASES)
def test_evaluate(inputs, expected):
    spec, run, latest, consumed, policy = inputs
    outcome, clock = evaluate(spec, run, latest, consumed, WaitClock(), policy, NOW)
    verdict, reasons, clock_started = expected
    assert outcome.verdict is verdict
    assert [j.reason for j in outcome.judgements] == reasons
    # The check of dependencies elsewhere starts when every same-run dependency is final.
    assert (clock.started == NOW) is clock_started
    # The log line a person reads names the verdict, the count, the condition and what is not satisfied.
    satisfied = [j for j in outcome.judgements if j.satisfied]
    waiting = "".join(f"; {j.reason}" for j in outcome.judgements if not j.satisfied)
    assert outcome.summary() == (
        f"{verdict.value}: {len(satisfied)}/{len(reasons)} satisfied, needs {spec.condition}{waiting}"
    )


def test_n_larger_than_the_number_of_dependencies_is_refused_when_the_dag_is_parsed():
    """The engine would skip such a task every run; the declaration is refused before it gets there."""
    with pytest.raises(
        InvalidCountError, match="needs 3 satisfied dependencies but the task has only 2; it could never start"
    ):
        check_condition("orders", "report", "N", 3, 2)
