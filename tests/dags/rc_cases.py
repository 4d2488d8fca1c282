"""DAGs for the run-condition tests (ids start with ``rc_``).

Upstream outcomes are real: a task that succeeds (optionally reporting rows written), one that raises,
one that skips itself. Markers under ``RC_MARKERS`` let a test see the order things happened in.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.standard.sensors.python import PythonSensor
from airflow.sdk import DAG, task

from airflow_leastaction.refs import external_task
from airflow_leastaction.rows import ROWS_WRITTEN_KEY, report_rows_written
from airflow_leastaction.run_conditions import always, depends_on, failure, has_data, run_condition, success
from airflow_leastaction.timetables import IntervalCronTimetable
from airflow_leastaction.version_compat import AirflowSkipException

START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
FAST = dict(poll_interval=0.2)
OTHER = external_task("rc_other_pipeline", "other-team")


def markers() -> Path:
    path = Path(os.environ.get("RC_MARKERS", "/tmp/rc-markers"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def mark(name: str) -> None:
    (markers() / name).write_text(dt.datetime.now(dt.UTC).isoformat())


def outcome_task(task_id: str, outcome: str, rows: int | None = None, **kwargs):
    """A task that succeeds (reporting ``rows`` when given), fails, or skips itself."""

    @task(task_id=task_id, **kwargs)
    def run():
        if outcome == "failed":
            raise RuntimeError(f"{task_id} fails on purpose")
        if outcome == "skipped":
            raise AirflowSkipException(f"{task_id} skips itself")
        if outcome == "flaky" and not (markers() / f"{task_id}.failed-once").exists():
            mark(f"{task_id}.failed-once")
            raise RuntimeError(f"{task_id} fails its first try")
        if rows is not None:
            report_rows_written(rows)
        mark(task_id)
        return outcome

    return run()


def child(task_id: str = "child"):
    @task(task_id=task_id)
    def run():
        mark(task_id)
        return "ran"

    return run()


def until_child_ran():
    """An upstream that finishes only once ``child`` ran: what ANY and N start without."""
    return PythonSensor(
        task_id="slow",
        python_callable=lambda: (markers() / "child").exists(),
        mode="reschedule",
        poke_interval=0.2,
        timeout=30,
    )


def dag(dag_id: str, schedule=None) -> DAG:
    return DAG(dag_id, schedule=schedule, start_date=START, catchup=False, tags=["test", "run-conditions"])


# -- the satisfied-by table: one upstream outcome x one dependency type ----------------------------
TYPES = {"SUCCESS": success, "FAILURE": failure, "ALWAYS": always, "HAS_DATA": has_data}
for type_name, helper in TYPES.items():
    for outcome in ("success", "failed", "skipped"):
        with dag(f"rc_type_{type_name.lower()}_{outcome}"):
            up = outcome_task("up", outcome, rows=3 if outcome == "success" else None)
            run_condition(child(), helper(up), **FAST)

for label, rows in (("zero", 0), ("unknown", None)):
    with dag(f"rc_type_has_data_success_{label}_rows"):
        run_condition(child(), has_data(outcome_task("up", "success", rows=rows)), **FAST)


# -- rows written pushed as the XCom, which the listener reads back (a test makes that read fail) ----
def pushing_rows(task_id: str, rows: int):
    """A task that succeeds pushing its rows written as the XCom, as code in another process does."""

    @task(task_id=task_id)
    def run(**context):
        context["ti"].xcom_push(key=ROWS_WRITTEN_KEY, value=rows)
        mark(task_id)

    return run()


for label, rows in (("five", 5), ("zero", 0)):
    with dag(f"rc_has_data_pushed_{label}_rows"):
        run_condition(child(), has_data(pushing_rows("up", rows)), max_wait=1, retries=0, **FAST)

# -- the run-condition table: a succeeds, b fails, c succeeds ---------------------------------------
for name, cond in (
    ("all", dict(when="ALL")),
    ("any", dict(when="ANY")),
    ("n2", dict(when="N", count=2)),
    ("n3", dict(when="N", count=3)),
):
    with dag(f"rc_condition_{name}"):
        a, b, c = outcome_task("a", "success"), outcome_task("b", "failed"), outcome_task("c", "success")
        run_condition(child(), a, b, c, **cond, **FAST)

# -- ANY starts as soon as it is satisfied: `slow` finishes only after the child ran ---------------
with dag("rc_any_starts_early"):
    fast = outcome_task("fast", "success")
    slow = until_child_ran()
    run_condition(child(), fast, slow, when="ANY", **FAST)

with dag("rc_n_starts_early"):
    ups = [outcome_task(f"u{i}", "success") for i in range(2)]
    slow = until_child_ran()
    run_condition(child(), *ups, slow, when="N", count=2, **FAST)

# -- during a run -------------------------------------------------------------------------------------
with dag("rc_failure_path"):
    load = outcome_task("load", "failed")
    other = PythonSensor(
        task_id="other",
        python_callable=lambda: (markers() / "release_other").exists(),
        mode="reschedule",
        poke_interval=0.2,
        timeout=30,
    )
    report = child("report")
    run_condition(report, success(load), **FAST)
    run_condition(child("publish"), success(report), **FAST)
    run_condition(child("alert"), failure(load), **FAST)
    run_condition(child("cleanup"), always(report), **FAST)

with dag("rc_retry_is_not_final"):
    flaky = outcome_task("flaky", "flaky", retries=1, retry_delay=dt.timedelta(seconds=1))
    run_condition(child(), success(flaky), **FAST)
    run_condition(child("alert"), failure(flaky), **FAST)

with dag("rc_skip_cascade"):
    ok = outcome_task("ok", "success")
    on_failure = child("on_failure")
    run_condition(on_failure, failure(ok), **FAST)
    run_condition(child("needs_success"), success(on_failure), **FAST)
    run_condition(child("runs_always"), always(on_failure), **FAST)

with dag("rc_cross_dag"):
    run_condition(child(), success(OTHER), max_wait=dt.timedelta(seconds=20), **FAST)

with dag("rc_cross_dag_has_data"):
    run_condition(child(), has_data(OTHER), max_wait=0, **FAST)

with dag("rc_cross_dag_no_repairs"):
    run_condition(child(), depends_on(OTHER, "SUCCESS", consume_repairs=False), max_wait=0, **FAST)

with dag("rc_cross_dag_waits_for_own_run"):
    release = PythonSensor(
        task_id="release",
        python_callable=lambda: (markers() / "release").exists(),
        mode="reschedule",
        poke_interval=0.2,
        timeout=30,
    )
    run_condition(child(), success(release), success(OTHER), max_wait=0, **FAST)

with dag("rc_inactive"):
    run_condition(child("dormant"), outcome_task("up", "success"), active=False, **FAST)
    run_condition(child(), outcome_task("up2", "success"), **FAST)

with dag("rc_cross_dag_short_wait"):
    run_condition(child(), success(OTHER), max_wait=dt.timedelta(seconds=2), **FAST)

# A daily report on another pipeline's hourly loads: every hourly slot of the run's day must be done.
with dag("rc_whole_day", IntervalCronTimetable("0 0 * * *")):
    run_condition(
        child(),
        success(external_task("rc_hourly", "other-team", coverage="interval")),
        max_wait=dt.timedelta(seconds=2),
        **FAST,
    )

# Three looks at most, looked every poll (0.2 s) while a slot runs; a slot that has not run spends none.
with dag("rc_whole_day_few_looks", IntervalCronTimetable("0 0 * * *")):
    run_condition(
        child(),
        success(external_task("rc_hourly", "other-team", coverage="interval")),
        max_looks=3,
        max_wait=dt.timedelta(minutes=5),
        **FAST,
    )


# -- the cross-DAG check starts when the task's own upstreams are done ------------------------------
def _poke_until_released() -> bool:
    """A long same-run upstream: counts its pokes (``slow.pokes``), done once ``release`` exists."""
    pokes = markers() / "slow.pokes"
    pokes.write_text(str(int(pokes.read_text() or 0) + 1 if pokes.exists() else 1))
    return (markers() / "release").exists()


with dag("rc_cross_dag_after_long_upstream"):
    slow = PythonSensor(
        task_id="slow", python_callable=_poke_until_released, mode="reschedule", poke_interval=0.2, timeout=300
    )
    run_condition(child(), success(slow), success(OTHER), max_looks=10, **FAST)

with dag("rc_cross_dag_in_worker"):
    run_condition(child(), success(OTHER), max_wait=dt.timedelta(seconds=2), deferrable=False, **FAST)


# -- native conditions: each declared with a gate and native=True on the same upstreams ----------------
#: name -> (condition, dependency type, upstream task ids)
NATIVE_CASES = {
    "all_ok": ("ALL", success, ("ok", "ok2")),
    "all_one_failed": ("ALL", success, ("ok", "bad")),
    "all_one_skipped": ("ALL", success, ("ok", "off")),
    "any_one_ok": ("ANY", success, ("ok", "bad")),
    "any_failed_and_skipped": ("ANY", success, ("bad", "off")),
    "any_all_skipped": ("ANY", success, ("off", "off2")),
    "always_all": ("ALL", always, ("ok", "bad", "off")),
}


with dag("rc_native_table"):
    ups = {
        "ok": outcome_task("ok", "success"),
        "ok2": outcome_task("ok2", "success"),
        "bad": outcome_task("bad", "failed"),
        "off": outcome_task("off", "skipped"),
        "off2": outcome_task("off2", "skipped"),
    }
    for name, (when, helper, names) in NATIVE_CASES.items():
        deps = [helper(ups[n]) for n in names]
        run_condition(child(f"gated_{name}"), *deps, when=when, **FAST)
        run_condition(child(f"native_{name}"), *deps, when=when, native=True, poll_interval=0.2)

# ANY starts on the first success: `slow` finishes only once the native child ran.
with dag("rc_native_any_starts_early"):
    fast = outcome_task("fast", "success")
    slow = until_child_ran()
    run_condition(child(), fast, slow, when="ANY", native=True)

# Started against its rule: the trigger rule is widened by hand after the declaration, so Airflow starts
# the task although no dependency succeeded; the task judges for itself and skips.
with dag("rc_native_started_against_its_rule"):

    @task(task_id="child", pre_execute=lambda context: own_hook_ran())
    def never():
        mark("child")

    started = run_condition(
        never(), outcome_task("bad", "failed"), outcome_task("off", "skipped"), when="ANY", native=True
    )
    started.trigger_rule = "all_done"


def own_hook_ran() -> None:
    """The task's own pre-execute hook: one more mark per call."""
    path = markers() / "own_hook"
    path.write_text((path.read_text() if path.exists() else "") + "x")


def third_poke() -> bool:
    """True on the third poke: a sensor that resumes twice within one attempt."""
    pokes = markers() / "pokes"
    count = len(pokes.read_text()) if pokes.exists() else 0
    pokes.write_text("x" * (count + 1))
    return count + 1 >= 3


# A native condition on a sensor that reschedules: Airflow runs pre-execute again on each poke.
with dag("rc_native_sensor_resumes"):
    poking = PythonSensor(
        task_id="child",
        python_callable=third_poke,
        mode="reschedule",
        poke_interval=0.2,
        timeout=30,
        pre_execute=lambda context: own_hook_ran(),
    )
    run_condition(poking, outcome_task("up", "success"), native=True)

# A native condition through a catalog outage (tests/integration/catalog/test_catalog_outage_runs.py).
with dag("rc_native_outage"):
    run_condition(child(), outcome_task("up", "success"), native=True, poll_interval=0.2)
